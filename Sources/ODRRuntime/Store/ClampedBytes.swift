/// Sums and differences of byte counts read from the database, the file system or a manifest,
/// held at `Int64`'s bounds instead of trapping: a damaged row must not take the game down, and
/// a clamped figure only makes the store purge more or report a huge size.
enum ClampedBytes {
    /// The sum of `values`, clamped.
    static func total(_ values: some Sequence<Int64>) -> Int64 {
        values.reduce(Int64(0)) { sum, value in
            let (total, overflow) = sum.addingReportingOverflow(value)
            return overflow ? (value > 0 ? .max : .min) : total
        }
    }

    /// `a - b`, clamped.
    static func difference(_ a: Int64, _ b: Int64) -> Int64 {
        let (difference, overflow) = a.subtractingReportingOverflow(b)
        return overflow ? (b < 0 ? .max : .min) : difference
    }
}
