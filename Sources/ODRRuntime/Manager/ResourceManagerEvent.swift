#if FoundationAPI
import Foundation
#elseif canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Synchronization
import ODRFormat

/// Something that happened in a ``ResourceManager`` that an app may want to react to.
public enum ResourceManagerEvent: Sendable, Equatable {
    /// A pack was downloaded, verified and installed; `tags` are the tags of the current version it
    /// serves (``tagAvailable(tag:)`` follows for each of them it completed).
    case packInstalled(id: String, bytes: Int64, tags: [String])
    /// A pack was deleted to make room (or by ``ResourceManager/purge(bytes:)``), with the reason;
    /// `tags` as for ``packInstalled(id:bytes:tags:)`` (``tagPurged(tag:)`` follows for each of them
    /// that was available). For ``PurgeReason/staleStaging`` only a download's leftovers went.
    case packPurged(id: String, bytes: Int64, reason: PurgeReason, tags: [String])
    /// Every pack `tag` needs is installed now: a request for it begins without downloading. Posted
    /// after the ``packInstalled(id:bytes:tags:)`` that completed it.
    case tagAvailable(tag: String)
    /// A pack `tag` needs was purged, so a request for it would download again. Posted after the
    /// ``packPurged(id:bytes:reason:tags:)``, and only for a tag that was available.
    case tagPurged(tag: String)
    /// The catalog could not be checked online (`code` and `message` say why, as a ``ResourceError``
    /// would: no network, or a stale `catalog.json` refused as `catalog-rollback` or
    /// `catalog-expired`), and the stored copy is used: the game plays offline with the version it has.
    /// `storedCheckedAt` is when that copy was last checked (seconds since 1970), if known. Posted by
    /// ``ResourceManager/prepare(online:)``, ``ResourceManager/loadCatalog(online:)`` and the
    /// background checks of ``ResourceManager/checkForUpdates(every:)``.
    case catalogCheckFailed(code: ResourceError.Code, message: String, storedCheckedAt: Double?)
    /// The file system's free space is below the watermark even after purging every pack not in
    /// use: end requests you no longer need, or free disk space. Posted only for the disk; a cache
    /// budget that cannot be met fails the install with `cache-budget-exceeded` instead.
    case lowDiskSpace(freeBytes: Int64)
    /// The catalog moved to another version.
    case catalogUpdated(version: Int)
    /// The download of a pack waits because the ``DownloadPolicy`` does not allow it now (posted
    /// again if the reason changes); ``downloadResumed(packID:)`` follows when it starts.
    case downloadWaiting(packID: String, reason: DownloadHold)
    /// A download that waited for the ``DownloadPolicy`` may start now (the network, its priority or
    /// the day changed).
    case downloadResumed(packID: String)
    /// An attempt to download a pack failed (`reason`: `network-unavailable` when the connection
    /// failed or broke off, `timed-out`, `server-error`) and the download tries again at
    /// `nextAttempt`; posted for each failed attempt, as soon as it fails. Meanwhile the progress of
    /// the requests waiting for the pack says they are stalled (``ResourceRequest/ProgressSnapshot/isStalled``).
    /// When the attempts run out, their begin fails with the reason.
    case downloadRetrying(packID: String, reason: ResourceError.Code, attempt: Int, nextAttempt: Date)
    /// A download (of `catalog.json`, a manifest or a pack) left origin `from` for `to` (see
    /// ``ResourceManager/Configuration/mirrors``): `reason` is what failed there
    /// (`network-unavailable`, `timed-out`, `server-error`, `resource-unavailable` for a stale
    /// mirror's 404, `range-not-supported` or `unexpected-response` for a wrong `Content-Range`,
    /// `integrity` for bytes that failed verification). `from` is avoided for
    /// ``ResourceManager/Configuration/mirrorBackOff``. The store's log (`odr log`) keeps a line for each.
    case originSwitched(from: URL, to: URL, reason: ResourceError.Code)
    /// An anticipation hint (``ResourceManager/anticipate(tags:likelihood:)``) started downloading a
    /// missing pack in the background: a prefetch, apart from the downloads requests wait for.
    /// ``packInstalled(id:bytes:tags:)`` follows when it completes. `bytes` is the archive's size;
    /// `likelihood` the hint's. Streams only (``ResourceManager/events()``): no notification is posted.
    case hintedPrefetchStarted(packID: String, bytes: Int64, likelihood: Double)
    /// A hinted prefetch was cancelled because the last hint wanting it ended and no request needs
    /// it; what it verified stays for a later install. Streams only, as ``hintedPrefetchStarted(packID:bytes:likelihood:)``.
    case hintedPrefetchCancelled(packID: String)
}

#if FoundationAPI
extension ResourceManager {
    /// Posted with `object` the manager and `userInfo["event"]` the ``ResourceManagerEvent``.
    public static let packInstalledNotification = Notification.Name("ODRResourceManagerPackInstalled")
    /// See ``packInstalledNotification``.
    public static let packPurgedNotification = Notification.Name("ODRResourceManagerPackPurged")
    /// See ``packInstalledNotification``.
    public static let lowDiskSpaceNotification = Notification.Name("ODRResourceManagerLowDiskSpace")
    /// See ``packInstalledNotification``.
    public static let catalogUpdatedNotification = Notification.Name("ODRResourceManagerCatalogUpdated")
    /// See ``packInstalledNotification``.
    public static let downloadWaitingNotification = Notification.Name("ODRResourceManagerDownloadWaiting")
    /// See ``packInstalledNotification``.
    public static let downloadResumedNotification = Notification.Name("ODRResourceManagerDownloadResumed")
    /// See ``packInstalledNotification``.
    public static let tagAvailableNotification = Notification.Name("ODRResourceManagerTagAvailable")
    /// See ``packInstalledNotification``.
    public static let tagPurgedNotification = Notification.Name("ODRResourceManagerTagPurged")
    /// See ``packInstalledNotification``.
    public static let catalogCheckFailedNotification = Notification.Name("ODRResourceManagerCatalogCheckFailed")
    /// See ``packInstalledNotification``.
    public static let downloadRetryingNotification = Notification.Name("ODRResourceManagerDownloadRetrying")
    /// See ``packInstalledNotification``.
    public static let originSwitchedNotification = Notification.Name("ODRResourceManagerOriginSwitched")
}

#endif

/// Fans events out to every subscribed stream, every observer and (with the `FoundationAPI`
/// trait) `NotificationCenter`.
final class EventHub: Sendable {
    private let subscribers = Locked<[UInt64: AsyncStream<ResourceManagerEvent>.Continuation]>([:])
    /// Called synchronously with each event, for callers that collect what happens during a call.
    private let observers = Locked<[UInt64: @Sendable (ResourceManagerEvent) -> Void]>([:])
    private let nextID = Atomic<UInt64>(0)

    func subscribe() -> AsyncStream<ResourceManagerEvent> {
        let (stream, continuation) = AsyncStream<ResourceManagerEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = nextID.add(1, ordering: .relaxed).newValue
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    /// Calls `observer` with every event from now until ``removeObserver(_:)``.
    func observe(_ observer: @escaping @Sendable (ResourceManagerEvent) -> Void) -> UInt64 {
        let id = nextID.add(1, ordering: .relaxed).newValue
        observers.withLock { $0[id] = observer }
        return id
    }

    func removeObserver(_ id: UInt64) { _ = observers.withLock { $0.removeValue(forKey: id) } }

    func emit(_ event: ResourceManagerEvent, from manager: ResourceManager) {
        for observer in observers.withLock({ Array($0.values) }) { observer(event) }
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
        #if FoundationAPI
        let name: Notification.Name? = switch event {
        case .packInstalled: ResourceManager.packInstalledNotification
        case .packPurged: ResourceManager.packPurgedNotification
        case .lowDiskSpace: ResourceManager.lowDiskSpaceNotification
        case .catalogUpdated: ResourceManager.catalogUpdatedNotification
        case .downloadWaiting: ResourceManager.downloadWaitingNotification
        case .downloadResumed: ResourceManager.downloadResumedNotification
        case .tagAvailable: ResourceManager.tagAvailableNotification
        case .tagPurged: ResourceManager.tagPurgedNotification
        case .catalogCheckFailed: ResourceManager.catalogCheckFailedNotification
        case .downloadRetrying: ResourceManager.downloadRetryingNotification
        case .originSwitched: ResourceManager.originSwitchedNotification
        case .hintedPrefetchStarted, .hintedPrefetchCancelled: nil
        }
        if let name { NotificationCenter.default.post(name: name, object: manager, userInfo: ["event": event]) }
        #endif
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
