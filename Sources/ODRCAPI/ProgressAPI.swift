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

/// A request's C progress callback (`odr_request_set_progress_callback`): takes each new value from
/// the request, and calls the C function on the callback queue with the latest one, at most once per
/// interval.
///
/// Lifetime: the C function runs only while `gate` is held, and ``stop()`` (or a new ``set``) takes
/// `gate` before it returns, so once they return the old function has returned and never runs again.
/// `gate` is recursive: a callback may end, cancel or destroy its own request from inside.
final class CProgressCallback: Sendable {
    /// What is registered and what waits to be delivered.
    private struct Slot {
        /// Bumped by every ``set`` and ``stop()``: deliveries scheduled for an older one do nothing.
        var generation: UInt64 = 0
        var function: odr_progress_callback?
        /// The caller's pointer, as an address: the caller vouches that it may be used on the
        /// library's thread (documented in odr.h).
        var userData: UInt = 0
        var interval: DispatchTimeInterval = .never
        var pending: ResourceRequest.ProgressSnapshot?
        var scheduled = false
        var lastCall: DispatchTime?
        /// The observer on the request.
        var token: UInt64?
        var request: ResourceRequest?
    }

    // Only taken by set/stop and by a delivery around the C call; a value offered by the request
    // (under the request's progress lock) takes only `slot`, so the two never wait for each other.
    private let gate = ConditionLock(recursive: true)
    private let slot = Locked(Slot())

    /// Registers `function` for `request`'s progress (`nil` removes the callback).
    func set(_ function: odr_progress_callback?, userData: UnsafeMutableRawPointer?, intervalMilliseconds: Int,
             for request: ResourceRequest) {
        gate.withLock {
            stopLocked()
            guard let function else { return }
            let generation = slot.withLock { slot in
                slot.function = function
                slot.userData = UInt(bitPattern: userData)
                slot.interval = .milliseconds(intervalMilliseconds)
                slot.request = request
                return slot.generation
            }
            let token = request.observeProgress { [weak self] value in self?.offer(value, generation: generation) }
            slot.withLock { $0.token = token }
            // A begin under way has a value already: the callback starts from it.
            if request.state == .requested { offer(request.progressSnapshot, generation: generation) }
        }
    }

    /// Removes the callback; once this returns it has returned and never runs again.
    func stop() {
        // No callback set (the usual case, and after an earlier stop, which waited on `gate`): none
        // can be running, so the gate is not needed; every end and destroy passes here.
        guard slot.withLock({ $0.function != nil || $0.token != nil }) else { return }
        gate.withLock { stopLocked() }
    }

    private func stopLocked() {
        let (request, token) = slot.withLock { slot -> (ResourceRequest?, UInt64?) in
            slot.generation &+= 1
            defer {
                slot.function = nil
                slot.userData = 0
                slot.pending = nil
                slot.scheduled = false
                slot.lastCall = nil
                slot.token = nil
                slot.request = nil
            }
            return (slot.request, slot.token)
        }
        if let request, let token { request.removeProgressObserver(token) }
    }

    /// A new value: delivered at once, or when the interval since the last call is up.
    private func offer(_ value: ResourceRequest.ProgressSnapshot, generation: UInt64) {
        let delay = slot.withLock { slot -> DispatchTimeInterval? in
            guard slot.generation == generation, slot.function != nil else { return nil }
            slot.pending = value
            guard !slot.scheduled else { return nil }
            slot.scheduled = true
            guard let last = slot.lastCall else { return .nanoseconds(0) }
            let due = last + slot.interval
            let now = DispatchTime.now()
            return due > now ? .nanoseconds(Int(clamping: due.uptimeNanoseconds - now.uptimeNanoseconds)) : .nanoseconds(0)
        }
        guard let delay else { return }
        callbackQueue.asyncAfter(deadline: .now() + delay) { [weak self] in self?.deliver(generation: generation) }
    }

    private func deliver(generation: UInt64) {
        gate.withLock {
            let call = slot.withLock { slot -> (odr_progress_callback, UInt, ResourceRequest.ProgressSnapshot)? in
                guard slot.generation == generation, let function = slot.function, let value = slot.pending else { return nil }
                slot.pending = nil
                slot.scheduled = false
                slot.lastCall = .now()
                return (function, slot.userData, value)
            }
            guard let (function, userData, value) = call else { return }
            function(value.completedBytes, value.totalBytes, value.isStalled ? 1 : 0, UnsafeMutableRawPointer(bitPattern: userData))
        }
    }
}

/// Milliseconds from now until `date`; 0 when it has passed.
func millisecondsUntil(_ date: Date) -> Int64 {
    let milliseconds = (date.timeIntervalSinceNow * 1000).rounded(.up)
    return milliseconds > 0 ? Int64(min(milliseconds, 86_400_000)) : 0
}

/// `odr_request_set_progress_callback`: Calls the callback with each new progress value, at most once per interval. Documented in odr.h.
@_cdecl("odr_request_set_progress_callback")
public func odrRequestSetProgressCallback(
    _ handle: OpaquePointer?, _ callback: odr_progress_callback?, _ userData: UnsafeMutableRawPointer?, _ minimumIntervalMilliseconds: Int64
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let handle = try CHandle.object(handle, as: RequestHandle.self, "request")
        guard (0...86_400_000).contains(minimumIntervalMilliseconds) else {
            throw invalidArgument("min_interval_ms is \(minimumIntervalMilliseconds); pass 0...86400000 milliseconds (0: every value).")
        }
        handle.progressCallback.set(callback, userData: userData, intervalMilliseconds: Int(minimumIntervalMilliseconds), for: handle.request)
    }
}

/// `odr_request_stalled`: Whether the request's downloads wait to retry after a failed connection. Documented in odr.h.
@_cdecl("odr_request_stalled")
public func odrRequestStalled(
    _ handle: OpaquePointer?, _ stalled: UnsafeMutablePointer<Int32>?, _ retryIn: UnsafeMutablePointer<Int64>?
) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let retry = try CHandle.object(handle, as: RequestHandle.self, "request").request.progressSnapshot.retry
        stalled?.pointee = retry == nil ? 0 : 1
        retryIn?.pointee = retry.map { millisecondsUntil($0.nextAttempt) } ?? -1
    }
}
