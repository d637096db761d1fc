import CODR
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import ODRFormat
import ODRRuntime

/// What an `odr_manager` holds: the manager, and the events waiting for `odr_manager_poll_event`.
final class ManagerHandle: Sendable {
    /// How many events wait at most; older ones are dropped (and counted in `missed`).
    static let eventCapacity = 1024

    let manager: ResourceManager
    /// The `odr_manager_prepare_async` calls whose callbacks may still run.
    let preparations = PendingCalls()
    /// The C network probe, revoked by `odr_manager_destroy`.
    let probe: CNetworkProbe?
    /// Waiting events from `head` on, and how many were dropped since the last poll.
    private typealias EventQueue = Locked<(events: [ResourceManagerEvent], head: Int, missed: Int64)>

    private let queue: EventQueue
    /// The manager's observer that fills `queue`; removed in `deinit`.
    private let observer: UInt64

    init(manager: ResourceManager, probe: CNetworkProbe?) {
        self.manager = manager
        self.probe = probe
        let queue = EventQueue(([], 0, 0))
        self.queue = queue
        // The manager tells each event synchronously on the thread that caused it, so an event is
        // in the queue before the call that caused it (a purge, say) returns.
        observer = manager.observeEvents { event in
            // odr_event has no kind for origin switches (the store's log keeps each, which odr log
            // shows) or hinted prefetches (their installs arrive as ODR_EVENT_PACK_INSTALLED):
            // they are not queued, so a poll never returns an event of kind ODR_EVENT_NONE.
            switch event {
            case .originSwitched, .hintedPrefetchStarted, .hintedPrefetchCancelled: return
            default: Self.push(event, into: queue)
            }
        }
    }

    deinit {
        manager.removeEventObserver(observer)
    }

    private static func push(_ event: ResourceManagerEvent, into queue: EventQueue) {
        queue.withLock { queue in
            if queue.events.count - queue.head >= eventCapacity {
                queue.head += 1
                queue.missed += 1
            }
            queue.events.append(event)
            if queue.head > eventCapacity {
                queue.events.removeFirst(queue.head)
                queue.head = 0
            }
        }
    }

    /// The oldest waiting event and the number dropped before it, if any waits.
    func nextEvent() -> (ResourceManagerEvent, missed: Int64)? {
        queue.withLock { queue in
            guard queue.head < queue.events.count else { return nil }
            let event = queue.events[queue.head]
            queue.head += 1
            let missed = queue.missed
            queue.missed = 0
            if queue.head == queue.events.count {
                queue.events.removeAll(keepingCapacity: true)
                queue.head = 0
            }
            return (event, missed)
        }
    }
}

/// `odr_manager_create`: Opens the store (repairing what a crash left) and, when it holds a copy of the catalog, makes it usable at once. Documented in odr.h.
@_cdecl("odr_manager_create")
public func odrManagerCreate(_ config: OpaquePointer?, _ out: UnsafeMutablePointer<OpaquePointer?>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let settings = try CHandle.object(config, as: ConfigHandle.self, "config")
        let out = try CInput.out(out, "out_manager")
        var configuration = try settings.configuration()
        let probe = settings.settings.withLock { $0.probe }.map { CNetworkProbe(function: $0.function, userData: $0.userData) }
        if let probe { configuration.networkProbe = probe }
        let manager = try ResourceManager(configuration: configuration)
        out.pointee = CHandle.make(ManagerHandle(manager: manager, probe: probe))
        LiveHandles.managerCreated()
    }
}

/// `odr_manager_destroy`: Releases the caller's manager handle (NULL is ignored). Documented in odr.h.
@_cdecl("odr_manager_destroy")
public func odrManagerDestroy(_ manager: OpaquePointer?) {
    // A preparation still running is cancelled, and its callback has returned before this does.
    guard let handle = CHandle.release(manager, as: ManagerHandle.self) else { return }
    defer { LiveHandles.managerDestroyed() }
    handle.preparations.settle(cancelling: true)
    handle.probe?.revoke()
}

/// `odr_manager_prepare`: Fetches the catalog, installs the initial-install tags and starts the prefetch, blocking with a timeout. Documented in odr.h.
@_cdecl("odr_manager_prepare")
public func odrManagerPrepare(_ handle: OpaquePointer?, _ online: Int32, _ timeoutMilliseconds: Int64) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        try runBlocking(deadline: CInput.deadline(timeoutMilliseconds), awaitCancellation: false) { () throws(ResourceError) in
            try await manager.prepare(online: online != 0)
        }
    }
}

/// `odr_manager_prepare_async`: odr_manager_prepare without blocking. Documented in odr.h.
@_cdecl("odr_manager_prepare_async")
public func odrManagerPrepareAsync(
    _ handle: OpaquePointer?, _ online: Int32, _ done: odr_completion?, _ userData: UnsafeMutableRawPointer?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: ManagerHandle.self, "manager")
        let manager = handle.manager
        let slot = CallbackSlot(function: done, userData: userData)
        let task = Task {
            do throws(ResourceError) {
                try await manager.prepare(online: online != 0)
                slot.finish(.success(()))
            } catch {
                slot.finish(.failure(error))
            }
        }
        handle.preparations.add(task, slot)
    }
}

/// `odr_manager_current_version`: The catalog version requests use now. Documented in odr.h.
@_cdecl("odr_manager_current_version")
public func odrManagerCurrentVersion(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int64>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let out = try CInput.out(out, "out_version")
        guard let version = manager.currentVersion else {
            throw ResourceError(.catalogUnavailable, "The manager has no catalog yet. Call odr_manager_prepare first (with the network on the first time).")
        }
        out.pointee = Int64(version)
    }
}

/// `odr_manager_download_size`: The bytes a request for tags would download now (0 once nothing is left to move). Documented in odr.h.
@_cdecl("odr_manager_download_size")
public func odrManagerDownloadSize(
    _ handle: OpaquePointer?, _ tags: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ out: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let tags = try CInput.tags(tags, count: count)
        let out = try CInput.out(out, "out_bytes")
        out.pointee = try manager.downloadSize(forTags: tags)
    }
}

/// `odr_manager_describe`: Makes a split catalog describe tags no request used yet, blocking with a timeout. Documented in odr.h.
@_cdecl("odr_manager_describe")
public func odrManagerDescribe(
    _ handle: OpaquePointer?, _ tags: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ timeoutMilliseconds: Int64
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let tags = try CInput.tags(tags, count: count)
        try runBlocking(deadline: CInput.deadline(timeoutMilliseconds), awaitCancellation: false) { () throws(ResourceError) in
            try await manager.describe(tags: tags)
        }
    }
}

/// `odr_manager_set_preservation_priority`: Sets the preservation priority (0...1) of tags. Documented in odr.h.
@_cdecl("odr_manager_set_preservation_priority")
public func odrManagerSetPreservationPriority(
    _ handle: OpaquePointer?, _ tags: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int, _ priority: Double
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let tags = try CInput.tags(tags, count: count)
        try manager.setPreservationPriority(priority, forTags: tags)
    }
}

/// `odr_manager_preservation_priority`: The preservation priority of one tag. Documented in odr.h.
@_cdecl("odr_manager_preservation_priority")
public func odrManagerPreservationPriority(
    _ handle: OpaquePointer?, _ tag: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<Double>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let tag = try CInput.nonEmptyString(tag, "The tag")
        let out = try CInput.out(out, "out_priority")
        out.pointee = try manager.preservationPriority(forTag: tag)
    }
}

/// Writes a purge's figures to the out-pointers that are not NULL.
private func report(
    _ proposal: PurgeProposal, _ freed: UnsafeMutablePointer<Int64>?, _ shortfall: UnsafeMutablePointer<Int64>?,
    _ count: UnsafeMutablePointer<Int64>?
) {
    freed?.pointee = proposal.bytesFreed
    shortfall?.pointee = proposal.shortfall
    count?.pointee = Int64(proposal.deletions.count)
}

private func purgeBytes(_ bytes: Int64) throws(ResourceError) -> Int64 {
    guard bytes >= 0 else { throw invalidArgument("A purge frees 0 or more bytes; \(bytes) is negative.") }
    return CInput.bytes(bytes)
}

/// `odr_manager_purge_plan`: What purging bytes would delete, without deleting anything. Documented in odr.h.
@_cdecl("odr_manager_purge_plan")
public func odrManagerPurgePlan(
    _ handle: OpaquePointer?, _ bytes: Int64, _ freed: UnsafeMutablePointer<Int64>?,
    _ shortfall: UnsafeMutablePointer<Int64>?, _ count: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        report(try manager.purgePlan(bytes: try purgeBytes(bytes)), freed, shortfall, count)
    }
}

/// `odr_manager_purge`: Deletes packs no request uses until bytes are freed (or nothing more can go). Documented in odr.h.
@_cdecl("odr_manager_purge")
public func odrManagerPurge(
    _ handle: OpaquePointer?, _ bytes: Int64, _ freed: UnsafeMutablePointer<Int64>?,
    _ shortfall: UnsafeMutablePointer<Int64>?, _ count: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let bytes = try purgeBytes(bytes)
        let done = Locked<PurgeProposal?>(nil)
        try runBlocking(deadline: nil, awaitCancellation: true) { () throws(ResourceError) in
            let proposal = try await manager.purge(bytes: bytes)
            done.withLock { $0 = proposal }
        }
        if let proposal = done.withLock({ $0 }) { report(proposal, freed, shortfall, count) }
    }
}

/// `odr_manager_poll_event`: Takes the oldest waiting event without blocking. Documented in odr.h.
@_cdecl("odr_manager_poll_event")
public func odrManagerPollEvent(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<odr_event>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager")
        let out = try CInput.out(out, "out_event")
        guard out.pointee.version >= 1 else {
            throw invalidArgument("The event's version is \(out.pointee.version); initialize it with ODR_EVENT_INIT (version ODR_EVENT_VERSION).")
        }
        var event = odr_event()
        event.version = out.pointee.version
        // A caller built with an earlier version of the struct knows none of the later kinds: it skips them.
        var taken = manager.nextEvent()
        while let (next, _) = taken, next.eventVersion > event.version { taken = manager.nextEvent() }
        if let (next, missed) = taken {
            event.missed = missed
            switch next {
            case .packInstalled(let id, let bytes, _):
                event.kind = ODR_EVENT_PACK_INSTALLED
                event.bytes = bytes
                copy(id, into: &event.pack_id)
            case .packPurged(let id, let bytes, let reason, _):
                event.kind = ODR_EVENT_PACK_PURGED
                event.bytes = bytes
                copy(id, into: &event.pack_id)
                copy(reason.rawValue, into: &event.purge_reason)
            case .lowDiskSpace(let free):
                event.kind = ODR_EVENT_LOW_DISK_SPACE
                event.bytes = free
            case .catalogUpdated(let version):
                event.kind = ODR_EVENT_CATALOG_UPDATED
                event.catalog_version = Int64(version)
            case .downloadWaiting(let id, let reason):
                event.kind = ODR_EVENT_DOWNLOAD_WAITING
                copy(id, into: &event.pack_id)
                copy(reason.rawValue, into: &event.purge_reason)
            case .downloadResumed(let id):
                event.kind = ODR_EVENT_DOWNLOAD_RESUMED
                copy(id, into: &event.pack_id)
            case .tagAvailable(let tag):
                event.kind = ODR_EVENT_TAG_AVAILABLE
                copy(tag, into: &event.tag)
            case .tagPurged(let tag):
                event.kind = ODR_EVENT_TAG_PURGED
                copy(tag, into: &event.tag)
            case .catalogCheckFailed(let code, _, _):
                event.kind = ODR_EVENT_CATALOG_CHECK_FAILED
                copy(code.rawValue, into: &event.purge_reason)
            case .downloadRetrying(let id, let reason, _, let next):
                event.kind = ODR_EVENT_DOWNLOAD_RETRYING
                copy(id, into: &event.pack_id)
                copy(reason.rawValue, into: &event.purge_reason)
                event.retry_in_ms = millisecondsUntil(next)
            case .originSwitched, .hintedPrefetchStarted, .hintedPrefetchCancelled:
                // Never queued (see init).
                event.kind = ODR_EVENT_NONE
            }
        } else {
            event.kind = ODR_EVENT_NONE
        }
        // A caller built with an earlier version of the struct has room for that version's fields only.
        let size = switch event.version {
        case 1: MemoryLayout<odr_event>.offset(of: \odr_event.tag) ?? 0
        case 2: MemoryLayout<odr_event>.offset(of: \odr_event.retry_in_ms) ?? 0
        default: MemoryLayout<odr_event>.size
        }
        withUnsafeBytes(of: &event) { bytes in
            if let base = bytes.baseAddress { UnsafeMutableRawPointer(out).copyMemory(from: base, byteCount: size) }
        }
    }
}

/// Copies `text` into a fixed C array (a tuple), NUL-terminated, truncated if it does not fit.
func copy<Tuple>(_ text: String, into array: inout Tuple) {
    withUnsafeMutableBytes(of: &array) { buffer in
        guard buffer.count > 0 else { return }
        let bytes = Array(text.utf8.prefix(buffer.count - 1))
        buffer.copyBytes(from: bytes)
        buffer[bytes.count] = 0
    }
}

/// `odr_manager_tags`: The tags of the catalog version requests use now, with their sizes. Documented in odr.h.
@_cdecl("odr_manager_tags")
public func odrManagerTags(
    _ handle: OpaquePointer?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<odr_tag_info>?>?, _ count: UnsafeMutablePointer<Int>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let out = try CInput.out(out, "out_tags"), count = try CInput.out(count, "out_count")
        let tags = try manager.catalogTags()
        let list = try CList.make(tags.map(\.name), as: odr_tag_info.self) { index, name in
            odr_tag_info(name: name, download_bytes: tags[index].downloadBytes, installed_bytes: tags[index].installedBytes)
        }
        out.pointee = list
        count.pointee = tags.count
    }
}

/// `odr_manager_tag_files`: The files a request for tag holds, sorted by path. Documented in odr.h.
@_cdecl("odr_manager_tag_files")
public func odrManagerTagFiles(
    _ handle: OpaquePointer?, _ tag: UnsafePointer<CChar>?, _ out: UnsafeMutablePointer<UnsafeMutablePointer<odr_file_info>?>?,
    _ count: UnsafeMutablePointer<Int>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(handle, as: ManagerHandle.self, "manager").manager
        let tag = try CInput.nonEmptyString(tag, "The tag")
        let out = try CInput.out(out, "out_files"), count = try CInput.out(count, "out_count")
        let files = try manager.files(ofTag: tag)
        let list = try CList.make(files.map(\.path), as: odr_file_info.self) { index, path in
            odr_file_info(path: path, bytes: files[index].size)
        }
        out.pointee = list
        count.pointee = files.count
    }
}

/// `odr_free`: Frees what odr_manager_tags or odr_manager_tag_files returned (NULL is ignored). Documented in odr.h.
@_cdecl("odr_free")
public func odrFree(_ list: UnsafeMutableRawPointer?) {
    free(list)
}

/// Lists handed to C as one `malloc` block: the array of structs, then the NUL-terminated strings
/// they point to, so that one `odr_free` frees everything.
enum CList {
    /// A block holding one `Element` per string, made by `element` from its index and its copied
    /// string; `storage-failure` when the block cannot be allocated.
    static func make<Element>(
        _ strings: [String], as type: Element.Type,
        _ element: (Int, UnsafePointer<CChar>) -> Element
    ) throws(ResourceError) -> UnsafeMutablePointer<Element> {
        // Sizes are checked: the strings come from a catalog.
        var bytes = MemoryLayout<Element>.stride.multipliedReportingOverflow(by: strings.count)
        for string in strings where !bytes.overflow {
            bytes = bytes.partialValue.addingReportingOverflow(string.utf8.count + 1)
        }
        guard !bytes.overflow, let block = malloc(max(1, bytes.partialValue)) else {
            throw ResourceError(.storageFailure, "A list of \(strings.count) entries does not fit in memory.")
        }
        let elements = block.bindMemory(to: Element.self, capacity: strings.count)
        var text = block.advanced(by: MemoryLayout<Element>.stride * strings.count).assumingMemoryBound(to: CChar.self)
        for (index, string) in strings.enumerated() {
            let utf8 = Array(string.utf8CString)
            utf8.withUnsafeBufferPointer { source in
                guard let base = source.baseAddress else { return }
                text.update(from: base, count: source.count)
            }
            (elements + index).initialize(to: element(index, text))
            text += utf8.count
        }
        return elements
    }
}

extension ResourceManagerEvent {
    /// The version of `odr_event` that has a kind for this event: callers of earlier ones skip it.
    var eventVersion: UInt32 {
        switch self {
        case .tagAvailable, .tagPurged, .catalogCheckFailed: 2
        case .downloadRetrying: 3
        default: 1
        }
    }
}
