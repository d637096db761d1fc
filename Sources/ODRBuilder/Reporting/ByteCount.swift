/// Human-readable byte counts for reports ("1.5 MiB").
public enum ByteCount {
    /// `bytes` in the largest binary unit that keeps the number at least 1 ("1.5 MiB", "512 B").
    public static func format(_ bytes: Int64) -> String {
        let units = ["B", "KiB", "MiB", "GiB", "TiB"]
        var value = Double(bytes)
        var unit = 0
        while abs(value) >= 1024, unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        if unit == 0 { return "\(bytes) B" }
        let rounded = (value * 10).rounded() / 10
        return "\(rounded) \(units[unit])"
    }
}
