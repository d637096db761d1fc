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

/// A `pthread_mutex_t` with a `pthread_cond_t`: what Foundation's `NSCondition` (or, made with
/// `recursive: true`, `NSRecursiveLock`) is, for the modules that import only FoundationEssentials
/// (which has none of them).
///
/// ``Locked`` guards values with it; code that waits for a state to change (a thread count, a
/// callback finishing) uses ``wait()`` and ``broadcast()`` with the lock held. Both are the
/// pthread calls ThreadSanitizer understands (see ``Locked``).
///
/// ```swift
/// let condition = ConditionLock()
/// condition.lock()
/// condition.broadcast()
/// condition.unlock()
/// ```
package final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let condition = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    /// - Parameter recursive: whether the thread holding the lock may take it again (and must then
    ///   release it as often); ``wait()`` must not be used on a recursive lock.
    package init(recursive: Bool = false) {
        mutex.initialize(to: pthread_mutex_t())
        condition.initialize(to: pthread_cond_t())
        var attributes = pthread_mutexattr_t()
        pthread_mutexattr_init(&attributes)
        defer { pthread_mutexattr_destroy(&attributes) }
        if recursive { pthread_mutexattr_settype(&attributes, Int32(PTHREAD_MUTEX_RECURSIVE)) }
        let mutexStatus = pthread_mutex_init(mutex, &attributes)
        precondition(mutexStatus == 0, "pthread_mutex_init failed with \(mutexStatus)")
        // Deadlines are wall-clock `Date`s, so the condition keeps the default clock (CLOCK_REALTIME).
        let conditionStatus = pthread_cond_init(condition, nil)
        precondition(conditionStatus == 0, "pthread_cond_init failed with \(conditionStatus)")
    }

    deinit {
        pthread_cond_destroy(condition)
        pthread_mutex_destroy(mutex)
        condition.deallocate()
        mutex.deallocate()
    }

    package func lock() {
        pthread_mutex_lock(mutex)
    }

    package func unlock() {
        pthread_mutex_unlock(mutex)
    }

    /// Runs `body` holding the lock.
    package func withLock<Result, Failure: Error>(_ body: () throws(Failure) -> Result) throws(Failure) -> Result {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Waits (the lock held) until ``broadcast()`` or a spurious wake-up: callers loop on their state.
    package func wait() {
        pthread_cond_wait(condition, mutex)
    }

    /// Waits (the lock held) until ``broadcast()``, a spurious wake-up, or `deadline`.
    ///
    /// - Returns: `false` when `deadline` passed, as `NSCondition.wait(until:)` does.
    @discardableResult
    package func wait(until deadline: Date) -> Bool {
        let seconds = max(0, deadline.timeIntervalSince1970)
        var whole = seconds.rounded(.down)
        var nanoseconds = ((seconds - whole) * 1_000_000_000).rounded(.down)
        if nanoseconds >= 1_000_000_000 {
            whole += 1
            nanoseconds -= 1_000_000_000
        }
        // Far-future deadlines (Date.distantFuture) stay far in the future, within what time_t holds.
        var time = timespec(tv_sec: Int(min(whole, 1e15)), tv_nsec: Int(nanoseconds))
        return pthread_cond_timedwait(condition, mutex, &time) == 0
    }

    /// Wakes every thread waiting in ``wait()`` or ``wait(until:)``.
    package func broadcast() {
        pthread_cond_broadcast(condition)
    }
}
