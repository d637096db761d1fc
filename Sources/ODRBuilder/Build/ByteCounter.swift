import ODRFormat

/// A byte total that concurrent workers add to, for progress reporting.
final class ByteCounter: Sendable {
    private let total = Locked<Int64>(0)

    /// Adds `bytes` and returns the new total.
    func add(_ bytes: Int64) -> Int64 {
        total.withLock { value in
            value += bytes
            return value
        }
    }
}
