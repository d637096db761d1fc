import ODRFormat

/// HTTP dates (IMF-fixdate, RFC 9110 section 5.6.7) to and from whole seconds since 1970.
///
/// Written by hand rather than with `DateFormatter`: the format is fixed, always GMT, and this
/// avoids locale and calendar pitfalls and cost on every response.
enum HTTPDate {
    private static let weekdays = ["Thu", "Fri", "Sat", "Sun", "Mon", "Tue", "Wed"]  // 1970-01-01 was a Thursday
    private static let months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec"]

    /// `Sun, 06 Nov 1994 08:49:37 GMT` for a time in seconds since 1970.
    static func format(_ seconds: Int) -> String {
        let days = CivilCalendar.floorDivide(seconds, 86_400)
        let secondOfDay = seconds - days * 86_400
        let (year, month, day) = CivilCalendar.civil(fromDays: days)
        let weekday = weekdays[days.modulo(7)]
        return "\(weekday), \(two(day)) \(months[month - 1]) \(year) "
            + "\(two(secondOfDay / 3600)):\(two(secondOfDay / 60 % 60)):\(two(secondOfDay % 60)) GMT"
    }

    /// Seconds since 1970 of an IMF-fixdate, or nil for anything else (which callers then ignore,
    /// as RFC 9110 asks for an invalid `If-Modified-Since`).
    static func parse(_ text: String) -> Int? {
        let fields = text.split(separator: " ")
        guard fields.count == 6, fields[5] == "GMT",
            let day = Int(fields[1]), let year = Int(fields[3]),
            let monthIndex = months.firstIndex(where: { $0 == fields[2] })
        else { return nil }
        let time = fields[4].split(separator: ":")
        guard time.count == 3, let hour = Int(time[0]), let minute = Int(time[1]), let second = Int(time[2]),
            (1...31).contains(day), (0...23).contains(hour), (0...59).contains(minute), (0...60).contains(second)
        else { return nil }
        return CivilCalendar.days(fromCivil: year, monthIndex + 1, day) * 86_400 + hour * 3600 + minute * 60 + second
    }

    private static func two(_ value: Int) -> String {
        value < 10 ? "0\(value)" : "\(value)"
    }
}

extension Int {
    fileprivate func modulo(_ divisor: Int) -> Int {
        let remainder = self % divisor
        return remainder < 0 ? remainder + divisor : remainder
    }
}
