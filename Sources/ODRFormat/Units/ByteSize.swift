/// Byte sizes written the way people write them, one syntax for every tool and rules file:
/// `1048576`, `100MB`, `100 MiB`, `256k`, `1.5 GiB`.
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024; decimal units (`kB`, `MB`, `GB`,
/// `TB`) powers of 1000; a bare `K`, `M`, `G` or `T` is binary, as in `dd` and `ulimit`. Case does
/// not matter, spaces and `_` between digits and unit are ignored, and `B` may follow the number.
///
/// ```swift
/// import ODRFormat
///
/// let budget = ByteSize.parse("512 MiB")   // 536_870_912
/// let rate = ByteSize.parse("256k")        // 262_144
/// ```
public enum ByteSize {
    /// The forms every size accepts, for messages that refuse one.
    public static let acceptedForms = "a byte count such as 1048576, 100MB, 100 MiB or 256k (K, M, G, T and KiB... are powers of 1024; kB, MB, GB, TB powers of 1000)"

    /// The number of bytes `text` denotes, or `nil` when it is not a size or exceeds `Int64.max`.
    ///
    /// Whole numbers are exact (`9223372036854775807` is itself); a fraction (`1.5GiB`) is rounded
    /// to the nearest byte.
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text.filter { $0 != " " && $0 != "_" }
        let split = trimmed.firstIndex { !(("0"..."9").contains($0) || $0 == ".") } ?? trimmed.endIndex
        let digits = trimmed[..<split]
        guard !digits.isEmpty, digits.first != ".", digits.last != ".", digits.filter({ $0 == "." }).count <= 1 else { return nil }
        let multiplier: Int64
        switch trimmed[split...].lowercased() {
        case "", "b": multiplier = 1
        case "k", "kib": multiplier = 1 << 10
        case "m", "mib": multiplier = 1 << 20
        case "g", "gib": multiplier = 1 << 30
        case "t", "tib": multiplier = 1 << 40
        case "kb": multiplier = 1_000
        case "mb": multiplier = 1_000_000
        case "gb": multiplier = 1_000_000_000
        case "tb": multiplier = 1_000_000_000_000
        default: return nil
        }
        if let whole = Int64(digits) {
            let (bytes, overflow) = whole.multipliedReportingOverflow(by: multiplier)
            return overflow ? nil : bytes
        }
        guard let number = Double(digits), number.isFinite else { return nil }
        let bytes = (number * Double(multiplier)).rounded()
        // 2^63 is the first Double past Int64.max.
        guard bytes >= 0, bytes < 0x1p63 else { return nil }
        return Int64(bytes)
    }
}
