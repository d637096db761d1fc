/// Byte counts for the simulator's reports; sizes are parsed by `ODRFormat.ByteSize`, as in every tool.
public enum ByteCount {
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
