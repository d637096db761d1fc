import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// SHA-256 digests as the catalog writes them: 64 lowercase hexadecimal digits.
public enum ContentHash {
    /// The SHA-256 of `data`.
    public static func sha256Hex(of data: some DataProtocol) -> String {
        hex(SHA256.hash(data: data))
    }

    /// The SHA-256 of a file's contents, read in chunks so memory stays constant.
    ///
    /// - Throws: ``FormatError`` with code `io` when the file cannot be read.
    public static func sha256Hex(ofFileAt url: URL) throws -> String {
        try StreamingSHA256.ofFile(atPath: url.path).finalize()
    }

    /// Lowercase hexadecimal of a digest.
    public static func hex(_ digest: some Sequence<UInt8>) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var bytes: [UInt8] = []
        bytes.reserveCapacity(64)
        for byte in digest {
            bytes.append(digits[Int(byte >> 4)])
            bytes.append(digits[Int(byte & 0x0F)])
        }
        return String(decoding: bytes, as: UTF8.self)
    }
}

/// An incremental SHA-256 that yields the catalog's hex form.
public struct StreamingSHA256: Sendable {
    private var hasher = SHA256()

    public init() {}

    /// Adds bytes to the digest.
    public mutating func update(_ bytes: UnsafeRawBufferPointer) {
        hasher.update(bufferPointer: bytes)
    }

    /// The state after hashing the first `bytes` bytes of the file at `path` (all of it for `nil`),
    /// read in chunks so memory stays constant.
    ///
    /// - Throws: ``FormatError`` with code `io` when the file cannot be read or is shorter.
    public static func ofFile(atPath path: String, bytes: Int64? = nil) throws -> StreamingSHA256 {
        let file = try ReadableFile(URL(filePath: path))
        var hash = StreamingSHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var offset: Int64 = 0
        let limit = bytes ?? Int64.max
        while offset < limit {
            let count = try file.read(into: &buffer, at: offset)
            if count == 0, bytes == nil { break }
            guard count > 0 else { throw FormatError(.io, "'\(path)' is shorter than \(limit) bytes.", field: nil) }
            let used = Int(min(Int64(count), limit - offset))
            buffer.withUnsafeBytes { hash.update(UnsafeRawBufferPointer(rebasing: $0[..<used])) }
            offset += Int64(used)
        }
        return hash
    }

    /// The digest of everything added, as 64 lowercase hex digits.
    public func finalize() -> String {
        ContentHash.hex(hasher.finalize())
    }
}
