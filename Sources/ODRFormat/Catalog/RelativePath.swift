/// Rules for the logical paths and entry names a catalog may contain.
///
/// A clean relative path is `/`-separated, not empty, not absolute, and has no empty, `.` or `..`
/// components, no backslashes and no NUL or other control characters. Extracting such a path below a
/// directory can never reach outside it.
public enum RelativePath {
    /// Why `path` is not a clean relative path, or `nil` when it is.
    public static func problem(in path: String) -> String? {
        if path.isEmpty { return "the path is empty" }
        if path.utf8.count > 4096 { return "the path is longer than 4096 bytes" }
        if path.hasPrefix("/") { return "the path is absolute" }
        for scalar in path.unicodeScalars {
            if scalar == "\0" { return "the path contains a NUL byte" }
            if scalar == "\\" { return "the path contains a backslash" }
            if scalar.value < 0x20 || scalar.value == 0x7F { return "the path contains a control character" }
        }
        for component in path.split(separator: "/", omittingEmptySubsequences: false) {
            switch component {
            case "": return "the path has an empty component (a leading, trailing or doubled '/')"
            case ".": return "the path has a '.' component"
            case "..": return "the path has a '..' component"
            default: continue
            }
        }
        return nil
    }

    /// Whether `path` is a clean relative path.
    public static func isClean(_ path: String) -> Bool { problem(in: path) == nil }
}

/// Rules for SHA-256 digests written as text: 64 lowercase hexadecimal digits.
public enum HexDigest {
    /// Whether `text` is a SHA-256 digest in lowercase hexadecimal.
    public static func isSHA256(_ text: String) -> Bool {
        text.utf8.count == 64 && text.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// The 32 bytes a SHA-256 digest in lowercase hexadecimal spells, or `nil` when `text` is not one.
    public static func bytes(ofSHA256 text: String) -> [UInt8]? {
        guard isSHA256(text) else { return nil }
        return bytes(ofHex: text, count: 32)
    }

    /// The `count` bytes that `text` spells in lowercase hexadecimal (two digits a byte), or `nil`
    /// when it has another length or any other character.
    public static func bytes(ofHex text: String, count: Int) -> [UInt8]? {
        guard text.utf8.count == count * 2 else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(count)
        var high: UInt8?
        for digit in text.utf8 {
            let value: UInt8
            switch digit {
            case 0x30...0x39: value = digit - 0x30
            case 0x61...0x66: value = digit - 0x61 + 10
            default: return nil
            }
            if let first = high {
                bytes.append(first << 4 | value)
                high = nil
            } else {
                high = value
            }
        }
        return bytes
    }
}
