#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Rules for the logical paths and entry names a catalog may contain.
///
/// A clean relative path is `/`-separated, not empty, not absolute, and has no empty, `.` or `..`
/// components, no backslashes and no NUL or other control characters. Extracting such a path below a
/// directory can never reach outside it. It is also a name every file system the runtime supports
/// can hold: no component longer than ``maximumComponentBytes`` (`NAME_MAX`) and at most
/// ``maximumPathBytes`` in all, so that a store's root, `packs/<64 hex digits>/` and the path stay
/// well under `PATH_MAX` (4096). A manifest that breaks these rules is refused when it is read,
/// rather than failing with `storage-failure` halfway through an install.
public enum RelativePath {
    /// The longest component, in UTF-8 bytes: Linux's `NAME_MAX`.
    public static let maximumComponentBytes = 255
    /// The longest path, in UTF-8 bytes.
    public static let maximumPathBytes = 1024

    /// Why `path` is not a clean relative path, or `nil` when it is.
    public static func problem(in path: String) -> String? {
        if path.isEmpty { return "the path is empty" }
        if path.utf8.count > maximumPathBytes { return "the path is longer than \(maximumPathBytes) bytes" }
        if path.hasPrefix("/") { return "the path is absolute" }
        for scalar in path.unicodeScalars {
            if scalar == "\0" { return "the path contains a NUL byte" }
            if scalar == "\\" { return "the path contains a backslash" }
            if scalar.value < 0x20 || scalar.value == 0x7F { return "the path contains a control character" }
        }
        for component in path.utf8.split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false) {
            switch component.count {
            case 0: return "the path has an empty component (a leading, trailing or doubled '/')"
            case 1 where component.first == UInt8(ascii: "."): return "the path has a '.' component"
            case 2 where component.elementsEqual("..".utf8): return "the path has a '..' component"
            case (maximumComponentBytes + 1)...: return "the path has a component longer than \(maximumComponentBytes) bytes"
            default: continue
            }
        }
        return nil
    }

    /// Whether `path` is a clean relative path.
    public static func isClean(_ path: String) -> Bool { problem(in: path) == nil }

    /// Why `path` cannot name a file of a catalog in `catalog.json` (a manifest path such as
    /// `versions/7.json`), or `nil` when it can.
    ///
    /// Such a path becomes a URL relative to the catalog's, and a file path in a bundled catalog,
    /// so it must mean the same as both: a clean relative path of the characters URLs leave
    /// unreserved, `A-Z a-z 0-9 - . _ ~`, and `/`. That refuses a scheme (`http:/other-host/x`,
    /// `file:/x`), percent-encoding (`versions/%2e%2e/x`) and anything else that could resolve
    /// outside the catalog.
    public static func problem(inCatalogPath path: String) -> String? {
        if let problem = problem(in: path) { return problem }
        let unreserved = path.utf8.allSatisfy {
            switch $0 {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                true
            default:
                false
            }
        }
        return unreserved ? nil : "it may hold only letters, digits, '-', '.', '_', '~' and '/' (no scheme, no '%' escapes), so that it names a file inside the catalog"
    }

    /// Two of `paths` where the first names a folder of the second (`d` and `d/e`), or `nil` when no
    /// path lies inside another, so that all of them fit in one tree of folders and files.
    ///
    /// Sorts once (O(n log n) comparisons): with `/` ordered before every other byte, the paths
    /// inside `d` follow `d` directly, so comparing neighbours finds every conflict. Equal paths
    /// are not a conflict here. The paths must be clean.
    public static func firstNesting(in paths: some Sequence<String>) -> (folder: String, inside: String)? {
        let unique = Array(Set(paths))
        guard unique.count > 1 else { return nil }
        // Every path's bytes in one buffer, '/' replaced by 0: below every byte a clean path holds
        // (no NUL), which orders by components. memcmp keeps the sort fast for 100,000 paths.
        var bytes: [UInt8] = []
        var spans: [(start: Int, count: Int)] = []
        spans.reserveCapacity(unique.count)
        for path in unique {
            let start = bytes.count
            bytes.append(contentsOf: path.utf8)
            spans.append((start, bytes.count - start))
        }
        for i in bytes.indices where bytes[i] == UInt8(ascii: "/") { bytes[i] = 0 }
        return bytes.withUnsafeBufferPointer { buffer -> (folder: String, inside: String)? in
            guard let base = buffer.baseAddress else { return nil }
            let order = spans.indices.sorted { a, b in
                let x = spans[a], y = spans[b]
                let sign = memcmp(base + x.start, base + y.start, min(x.count, y.count))
                return sign != 0 ? sign < 0 : x.count < y.count
            }
            for (a, b) in zip(order, order.dropFirst()) {
                let x = spans[a], y = spans[b]
                if y.count > x.count, buffer[y.start + x.count] == 0, memcmp(base + x.start, base + y.start, x.count) == 0 {
                    return (unique[a], unique[b])
                }
            }
            return nil
        }
    }
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
