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

/// What an `odr_request` holds: the request, and the begins whose callbacks may still run.
final class RequestHandle: Sendable {
    let request: ResourceRequest
    /// The begins started through this handle, which `odr_request_cancel`, `_end` and `_destroy`
    /// stop and wait for.
    private let begins = PendingCalls()
    /// Whether the handle was destroyed: a begin that succeeds after that ends the request at once.
    private let destroyed = Locked(false)

    /// The progress callback of `odr_request_set_progress_callback`.
    let progressCallback = CProgressCallback()

    init(request: ResourceRequest) { self.request = request }

    /// Begins the request at once (it is `requested` when this returns) and hands the outcome to
    /// `slot` when the resources are ready, or the begin failed or was cancelled.
    ///
    /// - Throws: what the begin finds at once (`begin-twice`, `begin-after-end`, `invalid-tag`,
    ///   ...); `slot` is then never called.
    func startBegin(_ slot: CallbackSlot) throws(ResourceError) {
        let request = self.request
        let task = try request.startAccessingResources { [destroyed] result in
            var result = result
            if case .success = result, destroyed.withLock({ $0 }) {
                try? request.endAccessingResources()
                result = .failure(ResourceError(.cancelled, "The request was destroyed before its resources were ready."))
            }
            slot.finish(result)
        }
        begins.add(task, slot)
    }

    /// Cancels the begin in progress, if any, and returns once its callback has returned.
    func cancelBegin() {
        begins.settle(cancelling: true)
    }

    /// Ends the request (cancelling a begin still downloading) and returns once the begin's
    /// callback has returned.
    func end() throws(ResourceError) {
        defer { begins.settle(cancelling: false) }
        try request.endAccessingResources()
    }

    /// Marks the handle destroyed, ends the request if it is requested or accessing, and returns
    /// once every callback of its begins has returned.
    func destroy() {
        progressCallback.stop()
        destroyed.withLock { $0 = true }
        if request.state == .requested || request.state == .accessing {
            try? request.endAccessingResources()
        }
        begins.settle(cancelling: true)
    }
}

/// `odr_request_create`: Creates a request for at least one tag. Documented in odr.h.
@_cdecl("odr_request_create")
public func odrRequestCreate(
    _ manager: OpaquePointer?, _ tags: UnsafePointer<UnsafePointer<CChar>?>?, _ count: Int,
    _ out: UnsafeMutablePointer<OpaquePointer?>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let manager = try CHandle.object(manager, as: ManagerHandle.self, "manager").manager
        let tags = try CInput.tags(tags, count: count)
        let out = try CInput.out(out, "out_request")
        out.pointee = CHandle.make(RequestHandle(request: ResourceRequest(tags: tags, manager: manager)))
        LiveHandles.requestCreated()
    }
}

/// `odr_request_destroy`: Ends the request if it is requested or accessing, and frees it (NULL is ignored). Documented in odr.h.
@_cdecl("odr_request_destroy")
public func odrRequestDestroy(_ handle: OpaquePointer?) {
    // A begin still running holds the request; ending it lets that begin finish (cancelled) now.
    guard let request = CHandle.release(handle, as: RequestHandle.self) else { return }
    request.destroy()
    LiveHandles.requestDestroyed()
}

/// `odr_request_begin`: Starts downloading what the tags need (joining downloads already running) and holding their packs. Documented in odr.h.
@_cdecl("odr_request_begin")
public func odrRequestBegin(_ handle: OpaquePointer?, _ done: odr_completion?, _ userData: UnsafeMutableRawPointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: RequestHandle.self, "request")
        try handle.startBegin(CallbackSlot(function: done, userData: userData))
    }
}

/// `odr_request_begin_wait`: odr_request_begin that blocks, with a timeout. Documented in odr.h.
@_cdecl("odr_request_begin_wait")
public func odrRequestBeginWait(_ handle: OpaquePointer?, _ timeoutMilliseconds: Int64) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: RequestHandle.self, "request")
        try waitBlocking(deadline: CInput.deadline(timeoutMilliseconds), awaitCancellation: true) { finish throws(ResourceError) in
            try handle.startBegin(CallbackSlot(function: nil, userData: nil, onFinish: finish))
        } cancel: {
            handle.cancelBegin()
        }
    }
}

/// `odr_request_conditionally_begin`: Begins only if every pack is installed already. Documented in odr.h.
@_cdecl("odr_request_conditionally_begin")
public func odrRequestConditionallyBegin(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Int32>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let request = try CHandle.object(handle, as: RequestHandle.self, "request").request
        let out = try CInput.out(out, "out_began")
        out.pointee = request.beginAccessingResourcesIfInstalled() ? 1 : 0
    }
}

/// `odr_request_end`: Stops accessing. Documented in odr.h.
@_cdecl("odr_request_end")
public func odrRequestEnd(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: RequestHandle.self, "request")
        handle.progressCallback.stop()
        try handle.end()
    }
}

/// `odr_request_set_loading_priority`: Sets how urgently to download. Documented in odr.h.
@_cdecl("odr_request_set_loading_priority")
public func odrRequestSetLoadingPriority(_ handle: OpaquePointer?, _ priority: Double) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let request = try CHandle.object(handle, as: RequestHandle.self, "request").request
        if priority == -1 {
            request.loadingPriority = .urgent
        } else if (0...1).contains(priority) {
            request.loadingPriority = .loading(priority)
        } else {
            throw invalidArgument("A loading priority is in 0...1 or ODR_PRIORITY_URGENT (-1); \(priority) is neither.")
        }
    }
}

/// `odr_request_loading_priority`: The loading priority. Documented in odr.h.
@_cdecl("odr_request_loading_priority")
public func odrRequestLoadingPriority(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<Double>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let request = try CHandle.object(handle, as: RequestHandle.self, "request").request
        let out = try CInput.out(out, "out_priority")
        let priority = request.loadingPriority
        out.pointee = priority.isUrgent ? -1 : priority.level
    }
}

/// `odr_request_cancel`: Cancels the begin in progress. Documented in odr.h.
@_cdecl("odr_request_cancel")
public func odrRequestCancel(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: RequestHandle.self, "request")
        handle.progressCallback.stop()
        handle.cancelBegin()
    }
}

/// `odr_request_pause`: Pauses this request's downloads (those no other request waits for). Documented in odr.h.
@_cdecl("odr_request_pause")
public func odrRequestPause(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        try CHandle.object(handle, as: RequestHandle.self, "request").request.setDownloadsPaused(true)
    }
}

/// `odr_request_resume`: Resumes downloads paused by odr_request_pause. Documented in odr.h.
@_cdecl("odr_request_resume")
public func odrRequestResume(_ handle: OpaquePointer?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        try CHandle.object(handle, as: RequestHandle.self, "request").request.setDownloadsPaused(false)
    }
}

/// `odr_request_state_get`: The request's state. Documented in odr.h.
@_cdecl("odr_request_state_get")
public func odrRequestStateGet(_ handle: OpaquePointer?, _ out: UnsafeMutablePointer<odr_request_state>?) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let request = try CHandle.object(handle, as: RequestHandle.self, "request").request
        let out = try CInput.out(out, "out_state")
        out.pointee = switch request.state {
        case .initial: ODR_REQUEST_INITIAL
        case .requested: ODR_REQUEST_REQUESTED
        case .accessing: ODR_REQUEST_ACCESSING
        case .ended: ODR_REQUEST_ENDED
        }
    }
}

/// `odr_request_progress`: Progress, without blocking. Documented in odr.h.
@_cdecl("odr_request_progress")
public func odrRequestProgress(
    _ handle: OpaquePointer?, _ completed: UnsafeMutablePointer<Int64>?, _ total: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let progress = try CHandle.object(handle, as: RequestHandle.self, "request").request.progressSnapshot
        completed?.pointee = progress.completedBytes
        total?.pointee = progress.totalBytes
    }
}

/// `odr_request_resource_path`: Copies the installed file path of resource (a path in the asset tree, such as "Levels/Level1/map.json") into buffer, NUL-terminated, and sets *out_needed (may be NULL) to the bytes the path takes including the NUL. Documented in odr.h.
@_cdecl("odr_request_resource_path")
public func odrRequestResourcePath(
    _ handle: OpaquePointer?, _ resource: UnsafePointer<CChar>?, _ buffer: UnsafeMutablePointer<CChar>?,
    _ size: Int, _ needed: UnsafeMutablePointer<Int>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let request = try CHandle.object(handle, as: RequestHandle.self, "request").request
        let resource = try CInput.nonEmptyString(resource, "The resource path")
        guard request.state == .accessing else {
            throw ResourceError(.resourceNotInstalled, "The request is \(request.state.rawValue), not accessing: begin it and wait until it is accessing before asking for '\(resource)'.")
        }
        guard let path = request.path(forResource: resource) else {
            throw ResourceError(.unknownResource, "The request holds no resource '\(resource)': the path is not in the catalog, belongs to a tag the request does not ask for, or exists only in variants the ODR_OPT_VARIANT choice does not accept. Paths are relative to the asset tree, such as Levels/Level1/map.json.")
        }
        try CInput.copy(path, into: buffer, size: size, needed: needed, what: "The path of '\(resource)'")
    }
}
