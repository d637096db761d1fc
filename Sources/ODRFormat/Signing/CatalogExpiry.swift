#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The `expires` time of a signed catalog: UTC, written `YYYY-MM-DDTHH:MM:SSZ` (RFC 3339 without
/// fractions or offsets), converted by ``CivilCalendar`` arithmetic so it costs microseconds.
public enum CatalogExpiry {
    /// The text of `date`, rounded down to the second.
    public static func text(for date: Date) -> String {
        let seconds = Int(date.timeIntervalSince1970.rounded(.down))
        let days = CivilCalendar.floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.civil(fromDays: days)
        func two(_ value: Int) -> String { value < 10 ? "0\(value)" : "\(value)" }
        let yearText = String(year)
        return String(repeating: "0", count: max(0, 4 - yearText.count)) + yearText
            + "-\(two(month))-\(two(day))T\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60))Z"
    }

    /// The time `text` names, or `nil` unless it is exactly `YYYY-MM-DDTHH:MM:SSZ` with valid fields.
    public static func date(from text: String) -> Date? {
        let bytes = Array(text.utf8)
        guard bytes.count == 20, bytes[4] == UInt8(ascii: "-"), bytes[7] == UInt8(ascii: "-"), bytes[10] == UInt8(ascii: "T"),
              bytes[13] == UInt8(ascii: ":"), bytes[16] == UInt8(ascii: ":"), bytes[19] == UInt8(ascii: "Z") else { return nil }
        func number(_ range: Range<Int>) -> Int? {
            var value = 0
            for byte in bytes[range] {
                guard (0x30...0x39).contains(byte) else { return nil }
                value = value * 10 + Int(byte - 0x30)
            }
            return value
        }
        guard let year = number(0..<4), let month = number(5..<7), let day = number(8..<10),
              let hour = number(11..<13), let minute = number(14..<16), let second = number(17..<19),
              (1...12).contains(month), day >= 1, hour < 24, minute < 60, second < 60 else { return nil }
        let days = CivilCalendar.days(fromCivil: year, month, day)
        // Round-trip to refuse days past the end of their month (2026-02-30).
        guard CivilCalendar.civil(fromDays: days) == (year, month, day) else { return nil }
        return Date(timeIntervalSince1970: Double(days * 86_400 + hour * 3600 + minute * 60 + second))
    }
}
