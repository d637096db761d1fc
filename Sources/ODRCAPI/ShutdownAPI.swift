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

/// How many manager, request, hint and share handles are alive: `odr_shutdown` refuses while any is.
enum LiveHandles {
    private static let counts = Locked<(managers: Int, requests: Int, hints: Int, shares: Int)>((0, 0, 0, 0))

    static func managerCreated() { counts.withLock { $0.managers += 1 } }
    static func managerDestroyed() { counts.withLock { $0.managers -= 1 } }
    static func requestCreated() { counts.withLock { $0.requests += 1 } }
    static func requestDestroyed() { counts.withLock { $0.requests -= 1 } }
    static func hintCreated() { counts.withLock { $0.hints += 1 } }
    static func hintEnded() { counts.withLock { $0.hints -= 1 } }
    static func shareCreated() { counts.withLock { $0.shares += 1 } }
    static func shareDestroyed() { counts.withLock { $0.shares -= 1 } }

    static var alive: (managers: Int, requests: Int, hints: Int, shares: Int) { counts.withLock { $0 } }
}

/// `odr_shutdown`: Stops the library's threads once every manager and request is destroyed. Documented in odr.h.
@_cdecl("odr_shutdown")
public func odrShutdown(_ timeoutMilliseconds: Int64) -> odr_status {
    entryPoint { () throws(ResourceError) in
        let alive = LiveHandles.alive
        guard alive.managers == 0, alive.requests == 0, alive.hints == 0, alive.shares == 0 else {
            throw invalidArgument("\(alive.managers) manager(s), \(alive.requests) request(s), \(alive.hints) hint(s) and \(alive.shares) share(s) are still alive; free them (odr_hint_end, odr_request_destroy, odr_share_destroy, odr_manager_destroy) before odr_shutdown.")
        }
        // Negative waits forever; long timeouts are capped at 24 days, as in CInput.deadline.
        let deadline = timeoutMilliseconds < 0 ? nil : Date(timeIntervalSinceNow: Double(min(timeoutMilliseconds, Int64(Int32.max))) / 1000)
        // A manager's transfer thread ends once the manager is released, which its last tasks
        // (a prefetch winding down, a last-use flush) may delay a little.
        guard RuntimeThreads.waitUntilStopped(until: deadline) else {
            throw ResourceError(CStatus.waitTimeout, "\(RuntimeThreads.running) library thread(s) still run: a manager is still held (by a request or a task winding down). Call odr_shutdown again, with a longer timeout or a negative one for none.")
        }
        // Every callback already scheduled has returned.
        if !insideCallbacks { callbackQueue.sync {} }
    }
}
