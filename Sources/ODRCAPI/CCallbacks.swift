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

/// The queue every callback runs on: one library thread, one callback at a time.
let callbackQueue: DispatchQueue = {
    let queue = DispatchQueue(label: "odr.callbacks")
    queue.setSpecific(key: onCallbackQueue, value: true)
    return queue
}()

/// Set on ``callbackQueue``: tells a call made from inside a callback.
private let onCallbackQueue = DispatchSpecificKey<Bool>()

/// Whether the calling thread runs a callback (so ``callbackQueue`` is busy with it).
var insideCallbacks: Bool { DispatchQueue.getSpecific(key: onCallbackQueue) == true }

/// One asynchronous call's C completion (`odr_completion` and the caller's pointer): called once,
/// on ``callbackQueue``, with the call's outcome, and waited for by ``settle()``, so that the
/// functions that stop a call (`odr_request_destroy`, `_end`, `_cancel`, `odr_manager_destroy`)
/// return only once its callback has returned. After that the library never touches the caller's
/// `user_data` again: the caller may free it.
final class CallbackSlot: @unchecked Sendable {
    // Every mutable field is read and written with `condition` locked; `function` and `userData`
    // are the caller's and only passed back to it.
    private let function: odr_completion?
    private let userData: UnsafeMutableRawPointer?
    private let condition = ConditionLock()
    private var stage: Stage

    private enum Stage {
        /// The call is still running.
        case running
        /// The outcome is in; the callback has not been called yet.
        case ready(odr_status, String)
        /// The callback runs on this thread.
        case calling(pthread_t)
        /// The callback returned (or there is none).
        case done
    }

    /// Called with the outcome before the callback is scheduled: how a blocking call waits.
    private let onFinish: (@Sendable (Result<Void, ResourceError>) -> Void)?

    init(function: odr_completion?, userData: UnsafeMutableRawPointer?,
         onFinish: (@Sendable (Result<Void, ResourceError>) -> Void)? = nil) {
        self.function = function
        self.userData = userData
        self.onFinish = onFinish
        stage = function == nil ? .done : .running
    }

    /// Whether the callback has returned (or there is none).
    var isDone: Bool {
        condition.withLock { if case .done = stage { true } else { false } }
    }

    /// Records the outcome and schedules the callback on ``callbackQueue``.
    func finish(_ result: Result<Void, ResourceError>) {
        onFinish?(result)
        let (status, message): (odr_status, String) = switch result {
        case .success: (ODR_OK, "")
        case .failure(let error): CLastError.describe(error)
        }
        let scheduled: Bool = condition.withLock {
            guard case .running = stage else { return false }
            stage = .ready(status, message)
            condition.broadcast()
            return true
        }
        if scheduled { callbackQueue.async { self.call() } }
    }

    /// Calls the callback unless it was called already (by ``settle()`` from the callback thread).
    private func call() {
        let outcome: (odr_status, String)? = condition.withLock {
            guard case .ready(let status, let message) = stage else { return nil }
            stage = .calling(pthread_self())
            return (status, message)
        }
        guard let (status, message) = outcome else { return }
        message.withCString { function?(status, $0, userData) }
        condition.withLock {
            stage = .done
            condition.broadcast()
        }
    }

    /// Returns once the callback has returned. The caller must first have stopped the call
    /// (cancelled its task, ended its request), or this waits for the call to finish by itself.
    ///
    /// Never deadlocks on the library's own threads: called from inside this very callback, it
    /// returns at once (the callback is on the caller's stack); called from inside another
    /// callback (so the callback thread is busy), it calls this callback there, nested, itself.
    func settle() {
        let insideCallbacks = insideCallbacks
        condition.lock()
        while true {
            switch stage {
            case .done:
                condition.unlock()
                return
            case .calling(let thread) where pthread_equal(thread, pthread_self()) != 0:
                condition.unlock()
                return
            case .ready where insideCallbacks:
                condition.unlock()
                call()
                return
            default:
                condition.wait()
            }
        }
    }
}

/// Asynchronous calls a handle started whose callbacks may not have returned yet.
final class PendingCalls: Sendable {
    private let calls = Locked<[(task: Task<Void, Never>, slot: CallbackSlot)]>([])

    /// Keeps `task`'s callback `slot` until it is settled (forgetting those already done).
    func add(_ task: Task<Void, Never>, _ slot: CallbackSlot) {
        calls.withLock { calls in
            calls.removeAll { $0.slot.isDone }
            calls.append((task, slot))
        }
    }

    /// Cancels the calls' tasks if `cancelling`, and returns once every callback has returned.
    /// Calls stay listed until then, so a second thread settling at the same time waits too.
    func settle(cancelling: Bool) {
        let pending = calls.withLock { $0 }
        // The usual end of a request begun conditionally, or whose begin was settled already.
        guard !pending.isEmpty else { return }
        if cancelling { for call in pending { call.task.cancel() } }
        for call in pending { call.slot.settle() }
        calls.withLock { calls in calls.removeAll { $0.slot.isDone } }
    }
}
