extension Int64 {
    /// `self + other`, or the nearest representable value when that overflows: for sums of sizes
    /// read from outside, where an overflow can only mean damaged input and trapping would take the
    /// game down with it.
    package func clampedAdding(_ other: Int64) -> Int64 {
        let (sum, overflow) = addingReportingOverflow(other)
        return overflow ? (other > 0 ? .max : .min) : sum
    }

    /// `self - other`, or the nearest representable value when that overflows.
    package func clampedSubtracting(_ other: Int64) -> Int64 {
        let (difference, overflow) = subtractingReportingOverflow(other)
        return overflow ? (other < 0 ? .max : .min) : difference
    }
}

extension Sequence<Int64> {
    /// The sum, clamped to `Int64`'s range instead of trapping (see ``Swift/Int64/clampedAdding(_:)``).
    package func clampedSum() -> Int64 { reduce(0) { $0.clampedAdding($1) } }

    /// The exact sum, or `nil` when it does not fit in an `Int64`.
    package func checkedSum() -> Int64? {
        var total: Int64 = 0
        for value in self {
            let (sum, overflow) = total.addingReportingOverflow(value)
            if overflow { return nil }
            total = sum
        }
        return total
    }
}
