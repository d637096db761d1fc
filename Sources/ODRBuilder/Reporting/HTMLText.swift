import Foundation
import ODRFormat

/// Text made safe for an HTML page. File, tag and variant names come from whoever made the assets:
/// every one goes through ``escaped(_:)`` (or ``scriptData(_:)`` inside a `<script>` block) before
/// it reaches the page.
enum HTMLText {
    /// `text` with `& < > " '` replaced by character references: safe in element content and in
    /// quoted attribute values.
    static func escaped(_ text: String) -> String {
        var result = ""
        result.reserveCapacity(text.utf8.count)
        for character in text.unicodeScalars {
            switch character {
            case "&": result += "&amp;"
            case "<": result += "&lt;"
            case ">": result += "&gt;"
            case "\"": result += "&quot;"
            case "'": result += "&#39;"
            default: result.unicodeScalars.append(character)
            }
        }
        return result
    }

    /// `value` as JSON for a `<script type="application/json">` block: `<`, `>` and `&` are written
    /// as `\u003c`, `\u003e` and `\u0026` (they can only occur inside JSON strings, where the escape
    /// means the same), so no name can close the block or open a comment.
    static func scriptData(_ value: some Encodable) -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        guard let data = try? encoder.encode(value) else { return "null" }
        return String(decoding: data, as: UTF8.self)
            .replacingOccurrences(of: "<", with: "\\u003c")
            .replacingOccurrences(of: ">", with: "\\u003e")
            .replacingOccurrences(of: "&", with: "\\u0026")
    }

    /// The Content-Security-Policy source of an inline block: `'sha256-<base64 of its digest>'`.
    static func hashSource(of block: String) -> String {
        let hex = Array(ContentHash.sha256Hex(of: Data(block.utf8)).utf8)
        var digest: [UInt8] = []
        digest.reserveCapacity(hex.count / 2)
        func nibble(_ c: UInt8) -> UInt8 { c >= 0x61 ? c - 0x61 + 10 : c - 0x30 }
        var i = 0
        while i + 1 < hex.count {
            digest.append(nibble(hex[i]) << 4 | nibble(hex[i + 1]))
            i += 2
        }
        return "'sha256-\(Data(digest).base64EncodedString())'"
    }
}
