/// Sizes written the way people write them: `8GiB`, `512MB`, `1.5 GB`, `300k`, `4096`.
///
/// Binary units (`KiB`, `MiB`, `GiB`, `TiB`) are powers of 1024; decimal units (`kB`, `MB`, `GB`,
/// `TB`) powers of 1000; a bare `K`, `M`, `G` or `T` is binary, as in `dd` and `ulimit`.
public enum ByteCount {
    /// The number of bytes `text` denotes, or `nil` when it is not a size.
    public static func parse(_ text: String) -> Int64? {
        let trimmed = text.filter { $0 != " " && $0 != "_" }
        let split = trimmed.firstIndex { !($0.isNumber || $0 == ".") } ?? trimmed.endIndex
        guard let number = Double(trimmed[..<split]), number >= 0 else { return nil }
        let multiplier: Double
        switch trimmed[split...].lowercased() {
        case "", "b": multiplier = 1
        case "k", "kib": multiplier = 0x1p10
        case "m", "mib": multiplier = 0x1p20
        case "g", "gib": multiplier = 0x1p30
        case "t", "tib": multiplier = 0x1p40
        case "kb": multiplier = 1e3
        case "mb": multiplier = 1e6
        case "gb": multiplier = 1e9
        case "tb": multiplier = 1e12
        default: return nil
        }
        let bytes = (number * multiplier).rounded()
        guard bytes < 0x1p62 else { return nil }
        return Int64(bytes)
    }

    /// `bytes` for people: `1.50 GiB`, `312.0 MiB`, `900 B`.
    public static func format(_ bytes: Int64) -> String {
        let magnitude = Double(bytes.magnitude)
        let sign = bytes < 0 ? "-" : ""
        for (unit, size) in [("TiB", 0x1p40), ("GiB", 0x1p30), ("MiB", 0x1p20), ("KiB", 0x1p10)] where magnitude >= size {
            let value = magnitude / size
            return sign + (value >= 100 ? String(format1: value) : String(format2: value)) + " " + unit
        }
        return "\(bytes) B"
    }
}

extension String {
    /// `value` with one decimal, without Foundation's locale-dependent formatting.
    init(format1 value: Double) {
        let tenths = Int64((value.magnitude * 10).rounded())
        self = "\(value < 0 && tenths > 0 ? "-" : "")\(tenths / 10).\(tenths % 10)"
    }

    /// `value` with two decimals.
    init(format2 value: Double) {
        let hundredths = Int64((value.magnitude * 100).rounded())
        let fraction = hundredths % 100
        self = "\(value < 0 && hundredths > 0 ? "-" : "")\(hundredths / 100).\(fraction < 10 ? "0" : "")\(fraction)"
    }
}
