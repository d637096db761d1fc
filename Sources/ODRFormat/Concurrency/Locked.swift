#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A value that threads share, reached only through ``withLock(_:)``.
///
/// The project's one lock. It is a class around a `pthread_mutex_t` (what Foundation's `NSLock` is
/// on Linux; `ConditionLock` is the same lock with a condition) rather than the standard library's
/// `Mutex`, because ThreadSanitizer sees the `pthread_mutex` calls and so
/// knows what each lock orders; Linux's `Mutex` waits on a futex that ThreadSanitizer does not
/// understand, so `swift test --sanitize=thread` reported every access it guards as a race, and
/// could not find a real one.
///
/// ```swift
/// let counts = Locked([String: Int]())
/// counts.withLock { $0["level1", default: 0] += 1 }
/// ```
public final class Locked<Value>: @unchecked Sendable {
    private let lock = ConditionLock()
    private var value: Value

    public init(_ value: Value) { self.value = value }

    /// Runs `body` with the value while holding the lock; `body` may change it.
    public func withLock<Result, Failure: Error>(_ body: (inout Value) throws(Failure) -> Result) throws(Failure) -> Result {
        lock.lock()
        defer { lock.unlock() }
        return try body(&value)
    }
}
