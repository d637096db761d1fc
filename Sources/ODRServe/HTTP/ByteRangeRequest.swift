/// What a `Range` header asks of a representation of a known size (RFC 9110, section 14).
enum ByteRangeRequest: Equatable {
    /// No usable Range header: send the whole representation with 200. RFC 9110 says to ignore a
    /// header that does not parse or uses another unit, rather than fail the request.
    case whole
    /// Satisfiable ranges, in the order asked, each clamped to the representation.
    case ranges([ClosedRange<Int>])
    /// Every range starts past the end (or the representation is empty): 416.
    case unsatisfiable

    /// More ranges than this are treated as abuse and answered with the whole representation.
    static let maximumRangeCount = 100

    /// Interprets `header` against a representation of `size` bytes.
    init(header: String?, size: Int) {
        guard let header else { self = .whole; return }
        let trimmed = header.drop { $0 == " " }
        guard let equals = trimmed.firstIndex(of: "="),
            trimmed[..<equals].trimmingSpaces.lowercased() == "bytes"
        else {
            self = .whole
            return
        }
        var ranges: [ClosedRange<Int>] = []
        var specCount = 0
        for spec in trimmed[trimmed.index(after: equals)...].split(separator: ",") {
            let spec = spec.trimmingSpaces
            if spec.isEmpty { continue }  // RFC 9110 allows empty list elements
            specCount += 1
            guard let parsed = Self.parse(spec: spec) else {
                self = .whole
                return
            }
            if let range = parsed.resolved(size: size) { ranges.append(range) }
        }
        if specCount == 0 || specCount > Self.maximumRangeCount {
            self = .whole
        } else if ranges.isEmpty {
            self = .unsatisfiable
        } else {
            self = .ranges(ranges)
        }
    }

    private enum Spec {
        case from(Int, to: Int?)
        case suffix(Int)

        func resolved(size: Int) -> ClosedRange<Int>? {
            switch self {
            case .from(let first, let last):
                guard first < size else { return nil }
                return first...min(last ?? (size - 1), size - 1)
            case .suffix(let length):
                guard length > 0, size > 0 else { return nil }
                return max(0, size - length)...(size - 1)
            }
        }
    }

    private static func parse(spec: Substring) -> Spec? {
        guard let dash = spec.firstIndex(of: "-") else { return nil }
        let first = spec[..<dash].trimmingSpaces
        let last = spec[spec.index(after: dash)...].trimmingSpaces
        if first.isEmpty {
            return digits(last).map(Spec.suffix)
        }
        guard let start = digits(first) else { return nil }
        if last.isEmpty { return .from(start, to: nil) }
        guard let end = digits(last), end >= start else { return nil }
        return .from(start, to: end)
    }

    /// A non-negative decimal; huge values saturate instead of failing, since they only mean "to the end".
    private static func digits(_ text: Substring) -> Int? {
        guard !text.isEmpty, text.utf8.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else {
            return nil
        }
        var value = 0
        for byte in text.utf8 {
            let (times10, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times10.addingReportingOverflow(Int(byte - UInt8(ascii: "0")))
            if overflow1 || overflow2 { return Int.max }
            value = sum
        }
        return value
    }
}

extension Substring {
    /// The text without leading and trailing spaces and tabs (HTTP's optional whitespace).
    var trimmingSpaces: Substring {
        let isSpace: (Character) -> Bool = { $0 == " " || $0 == "\t" }
        guard let start = firstIndex(where: { !isSpace($0) }) else { return self[endIndex...] }
        let end = lastIndex(where: { !isSpace($0) }) ?? start
        return self[start...end]
    }
}
