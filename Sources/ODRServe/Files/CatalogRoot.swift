#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The directory a server publishes, and the only place it reads files from.
///
/// A request path is percent-decoded, split into segments (so an encoded `%2F` cannot smuggle a
/// separator past the checks), refused if any segment is `..`, and finally resolved with
/// `realpath`, so a symbolic link that leads outside the root is refused before anything is opened.
struct CatalogRoot: Sendable {
    /// The root's canonical path, without a trailing slash (except for `/` itself).
    let path: String

    /// What a request target refers to.
    enum Resolution {
        case file(FileEntity)
        /// Malformed target (bad percent-encoding, a NUL byte, not a path).
        case badRequest
        /// Outside the root, or not readable.
        case forbidden
        /// Nothing there, or a directory.
        case notFound
    }

    /// Opens the catalog directory at `url`.
    init(url: URL) throws(ServeError) {
        guard let resolved = realpath(url.path, nil) else {
            throw ServeError(
                .catalogNotFound,
                "The catalog directory \(url.path) does not exist: pass the directory `odrpack build` wrote."
            )
        }
        defer { free(resolved) }
        let path = String(cString: resolved)
        guard FileEntity.kind(ofPath: path) == .directory else {
            throw ServeError(.catalogNotFound, "\(url.path) is not a directory: pass a catalog directory.")
        }
        self.path = path
    }

    /// Resolves an HTTP request target (`/packs/a.zip?x=1`) to a file inside the root.
    func resolve(target: String) -> Resolution {
        guard let segments = Self.segments(ofTarget: target) else { return .badRequest }
        if segments.contains("..") { return .forbidden }
        let joined = segments.isEmpty ? path : (path == "/" ? "" : path) + "/" + segments.joined(separator: "/")
        guard let resolvedPointer = realpath(joined, nil) else {
            return errno == EACCES ? .forbidden : .notFound
        }
        let resolved = String(cString: resolvedPointer)
        free(resolvedPointer)
        guard contains(resolved) else { return .forbidden }
        guard let entity = FileEntity(path: resolved) else { return .notFound }
        switch entity.kind {
        case .regular: return .file(entity)
        case .directory, .other: return .notFound
        }
    }

    /// Whether a canonical path lies inside the root.
    func contains(_ canonicalPath: String) -> Bool {
        if path == "/" { return true }
        return canonicalPath == path || canonicalPath.hasPrefix(path + "/")
    }

    /// The decoded, non-empty path segments of a request target, or nil when it is malformed.
    static func segments(ofTarget target: String) -> [String]? {
        var rawPath = Substring(target)
        // Absolute form (`http://host/path`), which proxies send and servers must accept.
        if !rawPath.hasPrefix("/"), let scheme = rawPath.firstRange(of: "://") {
            let afterAuthority = rawPath[scheme.upperBound...]
            rawPath = afterAuthority.firstIndex(of: "/").map { afterAuthority[$0...] } ?? "/"
        }
        guard rawPath.hasPrefix("/") else { return nil }
        if let end = rawPath.firstIndex(where: { $0 == "?" || $0 == "#" }) { rawPath = rawPath[..<end] }
        guard let decoded = percentDecoded(rawPath) else { return nil }
        return decoded.split(separator: "/").map(String.init).filter { $0 != "." }
    }

    private static func percentDecoded(_ text: Substring) -> String? {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(text.utf8.count)
        var iterator = text.utf8.makeIterator()
        while let byte = iterator.next() {
            if byte == UInt8(ascii: "%") {
                guard let high = iterator.next().flatMap(hexValue), let low = iterator.next().flatMap(hexValue) else {
                    return nil
                }
                bytes.append(high << 4 | low)
            } else {
                bytes.append(byte)
            }
        }
        guard !bytes.contains(0), let string = String(validating: bytes, as: UTF8.self) else { return nil }
        return string
    }

    private static func hexValue(_ byte: UInt8) -> UInt8? {
        switch byte {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): byte - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): byte - UInt8(ascii: "a") + 10
        case UInt8(ascii: "A")...UInt8(ascii: "F"): byte - UInt8(ascii: "A") + 10
        default: nil
        }
    }
}
