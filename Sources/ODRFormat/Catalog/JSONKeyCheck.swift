#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Refuses a JSON text in which one object has the same key twice.
///
/// Readers disagree about such a text (Swift's `JSONDecoder` keeps one value, Python's `json`
/// the last), so what a signature covers would depend on who reads it. One pass over the bytes,
/// without recursion: a small strict tokenizer that keeps each open object's keys (unescaped, and
/// compared as Swift compares `String`s, so canonically equivalent spellings count as the same
/// key). It only needs to tokenize correctly; whether the text is otherwise valid JSON is left
/// to the decoder that runs next.
enum JSONKeyCheck {
    /// Nesting deeper than this is refused, as `JSONDecoder` refuses it.
    static let maximumDepth = 512

    /// The most values (numbers, strings, literals, objects and arrays, keys aside) a text of
    /// `byteCount` bytes may hold: 2^20, plus one for every 32 bytes. `JSONDecoder` holds every
    /// value of a text at once, about 48 bytes each beside the text, so a 32 MiB text of bare
    /// `0,`s (16 million values) took 838 MiB to refuse; within this limit it takes at most about
    /// 100 MiB. Genuine catalogs and manifests hold one value in 20 bytes or more (a pretty-printed
    /// file record is 9 values in about 300 bytes), so they stay far below it.
    static func maximumValueCount(forBytes byteCount: Int) -> Int { (1 << 20) + byteCount / 32 }

    /// What the same pass sees of a top-level object, for checks that must come before decoding
    /// (a decoder holds the whole text and every value at once): how many elements each of its
    /// arrays has, and the text of its numbers and literals.
    struct Shape {
        /// The element count of each array value of the top-level object, by key.
        var arrayCounts: [String: Int] = [:]
        /// The text of each number, `true`, `false` or `null` value of the top-level object (at
        /// most 32 bytes of it), by key.
        var scalars: [String: String] = [:]

        /// The top-level integer `key`, when its text is one.
        func integer(_ key: String) -> Int? { scalars[key].flatMap { Int($0) } }
    }

    /// Throws when `data` has a duplicate key, or cannot be tokenized as UTF-8 JSON; returns the
    /// shape of its top-level object.
    ///
    /// - Throws: ``FormatError`` `duplicate` naming the key's JSON path (`packs[2].id`);
    ///   `malformed-json` for bytes that are not UTF-8 JSON; `size-mismatch` (field
    ///   `maximumValueCount`) for more values than ``maximumValueCount(forBytes:)``, found before
    ///   anything is decoded.
    @discardableResult
    static func check(_ data: Data, file: String) throws(FormatError) -> Shape {
        let result = data.withUnsafeBytes { raw in
            var scanner = Scanner(bytes: raw)
            return Result { () throws(FormatError) -> Shape in
                try scanner.run(file: file)
                return scanner.shape
            }
        }
        return try result.get()
    }

    private struct Scanner {
        /// An open object (with the keys seen so far) or array (with the current index).
        struct Frame {
            var keys: Set<String>?
            var key = ""
            var index = 0
        }

        let bytes: UnsafeRawBufferPointer
        var i = 0
        var stack: [Frame] = []
        var shape = Shape()
        var values = 0
        let maximumValues: Int

        /// Whether the innermost open value is the top-level object.
        var inTopLevelObject: Bool { stack.count == 1 && stack[0].keys != nil }

        init(bytes: UnsafeRawBufferPointer) {
            self.bytes = bytes
            maximumValues = JSONKeyCheck.maximumValueCount(forBytes: bytes.count)
            // A UTF-8 byte order mark, which decoders skip.
            if bytes.starts(with: [0xEF, 0xBB, 0xBF]) { i = 3 }
        }

        mutating func run(file: String) throws(FormatError) {
            let malformed = FormatError(.malformedJSON, "\(file) is not valid UTF-8 JSON. Rebuild the catalog with odrpack, or fix the file by hand.")
            while true {
                // A value.
                skipSpace()
                guard i < bytes.count else { throw malformed }
                values += 1
                guard values <= maximumValues else {
                    throw FormatError(.sizeMismatch, "\(file) holds more than \(maximumValues) JSON values in its \(bytes.count) bytes (JSONKeyCheck.maximumValueCount: 2^20 plus one per 32 bytes); a decoder would hold every one at once, so it is not decoded. Rebuild the catalog with odrpack.", field: "maximumValueCount")
                }
                switch bytes[i] {
                case UInt8(ascii: "{"), UInt8(ascii: "["):
                    let isObject = bytes[i] == UInt8(ascii: "{")
                    i += 1
                    skipSpace()
                    if i < bytes.count, bytes[i] == (isObject ? UInt8(ascii: "}") : UInt8(ascii: "]")) {
                        i += 1
                    } else {
                        guard stack.count < JSONKeyCheck.maximumDepth else {
                            throw FormatError(.malformedJSON, "\(file) nests objects and arrays more than \(JSONKeyCheck.maximumDepth) deep.")
                        }
                        stack.append(Frame(keys: isObject ? [] : nil))
                        if isObject { try readKey(file: file, malformed) }
                        continue
                    }
                case UInt8(ascii: "\""):
                    guard skipString() else { throw malformed }
                default:
                    let start = i
                    while i < bytes.count, Self.isScalarByte(bytes[i]) { i += 1 }
                    guard i > start else { throw malformed }
                    if inTopLevelObject {
                        shape.scalars[stack[0].key] = String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<min(i, start + 32)]), as: UTF8.self)
                    }
                }
                // After a value: close what ends here, then find the next value.
                closing: while true {
                    skipSpace()
                    guard let top = stack.last else {
                        guard i == bytes.count else { throw malformed }
                        return
                    }
                    guard i < bytes.count else { throw malformed }
                    let byte = bytes[i]
                    i += 1
                    switch byte {
                    case UInt8(ascii: ","):
                        if top.keys != nil {
                            try readKey(file: file, malformed)
                        } else {
                            stack[stack.count - 1].index += 1
                        }
                        break closing
                    case UInt8(ascii: "}") where top.keys != nil, UInt8(ascii: "]") where top.keys == nil:
                        stack.removeLast()
                        if top.keys == nil, inTopLevelObject { shape.arrayCounts[stack[0].key] = top.index + 1 }
                    default:
                        throw malformed
                    }
                }
            }
        }

        /// Reads `"key":`, recording the key in the innermost object.
        mutating func readKey(file: String, _ malformed: FormatError) throws(FormatError) {
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: "\""), let key = readString() else { throw malformed }
            let top = stack.count - 1
            guard stack[top].keys?.insert(key).inserted == true else {
                throw FormatError(
                    .duplicate,
                    "\(file) has the key '\(key)' twice in one object; readers disagree about which one counts, so it is refused. Rebuild the catalog with odrpack.",
                    field: path(appending: key))
            }
            stack[top].key = key
            skipSpace()
            guard i < bytes.count, bytes[i] == UInt8(ascii: ":") else { throw malformed }
            i += 1
        }

        /// The JSON path of `key` in the innermost object, as ``CatalogJSON/fieldPath(_:)`` writes it.
        func path(appending key: String) -> String {
            var text = ""
            for frame in stack.dropLast() {
                if frame.keys != nil {
                    text += text.isEmpty ? frame.key : ".\(frame.key)"
                } else {
                    text += "[\(frame.index)]"
                }
            }
            return text.isEmpty ? key : "\(text).\(key)"
        }

        mutating func skipSpace() {
            while i < bytes.count {
                switch bytes[i] {
                case 0x20, 0x09, 0x0A, 0x0D: i += 1
                default: return
                }
            }
        }

        /// Skips the string at `i` (its opening quote); `false` when it does not end.
        mutating func skipString() -> Bool {
            i += 1
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    i += 1
                    return true
                case UInt8(ascii: "\\"):
                    i += 2
                default:
                    i += 1
                }
            }
            return false
        }

        /// Reads and unescapes the string at `i` (its opening quote); `nil` when it does not end or
        /// has an escape JSON does not define.
        mutating func readString() -> String? {
            i += 1
            let start = i
            while i < bytes.count {
                switch bytes[i] {
                case UInt8(ascii: "\""):
                    defer { i += 1 }
                    return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<i]), as: UTF8.self)
                case UInt8(ascii: "\\"):
                    return readEscapedString(from: start)
                default:
                    i += 1
                }
            }
            return nil
        }

        /// The rest of a string that has escapes, from `start` (after its opening quote).
        private mutating func readEscapedString(from start: Int) -> String? {
            var utf8 = Array(bytes[start..<i])
            while i < bytes.count {
                let byte = bytes[i]
                i += 1
                if byte == UInt8(ascii: "\"") { return String(decoding: utf8, as: UTF8.self) }
                guard byte == UInt8(ascii: "\\") else {
                    utf8.append(byte)
                    continue
                }
                guard i < bytes.count else { return nil }
                let escape = bytes[i]
                i += 1
                switch escape {
                case UInt8(ascii: "\""), UInt8(ascii: "\\"), UInt8(ascii: "/"): utf8.append(escape)
                case UInt8(ascii: "b"): utf8.append(0x08)
                case UInt8(ascii: "f"): utf8.append(0x0C)
                case UInt8(ascii: "n"): utf8.append(0x0A)
                case UInt8(ascii: "r"): utf8.append(0x0D)
                case UInt8(ascii: "t"): utf8.append(0x09)
                case UInt8(ascii: "u"):
                    guard let unit = hexUnit() else { return nil }
                    var scalar = Unicode.Scalar(unit)
                    if (0xD800..<0xDC00).contains(unit), bytes[i...].starts(with: "\\u".utf8) {
                        let mark = i
                        i += 2
                        if let low = hexUnit(), (0xDC00..<0xE000).contains(low) {
                            scalar = Unicode.Scalar(0x10000 + ((UInt32(unit) - 0xD800) << 10) + (UInt32(low) - 0xDC00))
                        } else {
                            i = mark
                        }
                    }
                    utf8.append(contentsOf: String(scalar ?? "\u{FFFD}").utf8)
                default:
                    return nil
                }
            }
            return nil
        }

        /// Four hexadecimal digits at `i`.
        private mutating func hexUnit() -> UInt16? {
            guard bytes.count - i >= 4 else { return nil }
            var value: UInt16 = 0
            for _ in 0..<4 {
                let digit: UInt8
                switch bytes[i] {
                case UInt8(ascii: "0")...UInt8(ascii: "9"): digit = bytes[i] - UInt8(ascii: "0")
                case UInt8(ascii: "a")...UInt8(ascii: "f"): digit = bytes[i] - UInt8(ascii: "a") + 10
                case UInt8(ascii: "A")...UInt8(ascii: "F"): digit = bytes[i] - UInt8(ascii: "A") + 10
                default: return nil
                }
                value = value << 4 | UInt16(digit)
                i += 1
            }
            return value
        }

        /// A byte of a number, `true`, `false` or `null`.
        static func isScalarByte(_ byte: UInt8) -> Bool {
            switch byte {
            case UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "a")...UInt8(ascii: "z"),
                 UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "E"):
                return true
            default:
                return false
            }
        }
    }
}
