import Foundation

extension BenchFormat {
    /// One figure of a report, its label padded so the values line up:
    /// `  odr fetch:                  0.41 s ...`.
    static func row(_ label: String, _ value: String, indent: Int = 2, width: Int = 28) -> String {
        String(repeating: " ", count: indent) + (label + ":").padding(toLength: max(width, label.count + 2), withPad: " ", startingAt: 0) + value
    }

    /// Seconds as `1.23 s`.
    static func seconds(_ value: Double) -> String { String(format: "%.2f s", value) }
}

extension Array<Double> {
    /// The value at fraction `p` (0...1) of these values, which must be sorted ascending: `0.5` is
    /// the median (the lower one of an even count); 0 when empty.
    func percentileOfSorted(_ p: Double) -> Double {
        guard !isEmpty else { return 0 }
        return self[Swift.min(count - 1, Int(Double(count - 1) * p))]
    }
}
