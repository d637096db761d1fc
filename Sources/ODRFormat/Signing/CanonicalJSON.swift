/// The canonical JSON of a catalog's signed part: the exact bytes a signature covers.
///
/// The rules (docs/FORMAT.md, "Signatures") are those of Python's
/// `json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)`, so a verifier in
/// another language rebuilds the bytes from the parsed JSON: no whitespace; object keys sorted by
/// their Unicode code points (equivalently, their UTF-8 bytes); integers in decimal; strings as
/// UTF-8 with only `"`, `\` and control characters escaped (`\b \f \n \r \t`, the others as
/// `\u00xx` in lowercase hex).
public enum CanonicalJSON: Sendable, Equatable {
    case string(String)
    case integer(Int64)
    case array([CanonicalJSON])
    case object([String: CanonicalJSON])

    /// The canonical bytes of this value.
    public var bytes: [UInt8] {
        var output: [UInt8] = []
        output.reserveCapacity(1024)
        append(to: &output)
        return output
    }

    func append(to output: inout [UInt8]) {
        switch self {
        case .string(let text):
            Self.appendString(text, to: &output)
        case .integer(let value):
            output.append(contentsOf: String(value).utf8)
        case .array(let values):
            output.append(UInt8(ascii: "["))
            for (i, value) in values.enumerated() {
                if i > 0 { output.append(UInt8(ascii: ",")) }
                value.append(to: &output)
            }
            output.append(UInt8(ascii: "]"))
        case .object(let members):
            output.append(UInt8(ascii: "{"))
            let sorted = members.map { (Array($0.key.utf8), $0.key, $0.value) }
                .sorted { $0.0.lexicographicallyPrecedes($1.0) }
            for (i, member) in sorted.enumerated() {
                if i > 0 { output.append(UInt8(ascii: ",")) }
                Self.appendString(member.1, to: &output)
                output.append(UInt8(ascii: ":"))
                member.2.append(to: &output)
            }
            output.append(UInt8(ascii: "}"))
        }
    }

    private static func appendString(_ text: String, to output: inout [UInt8]) {
        let hex = Array("0123456789abcdef".utf8)
        output.append(UInt8(ascii: "\""))
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "\""): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\"")])
            case UInt8(ascii: "\\"): output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "\\")])
            case 0x08: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "b")])
            case 0x0C: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "f")])
            case 0x0A: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "n")])
            case 0x0D: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "r")])
            case 0x09: output.append(contentsOf: [UInt8(ascii: "\\"), UInt8(ascii: "t")])
            case 0x00..<0x20:
                output.append(contentsOf: Array("\\u00".utf8))
                output.append(hex[Int(byte >> 4)])
                output.append(hex[Int(byte & 0x0F)])
            default: output.append(byte)
            }
        }
        output.append(UInt8(ascii: "\""))
    }
}
