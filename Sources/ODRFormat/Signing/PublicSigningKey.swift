import Crypto
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An Ed25519 public key that a client trusts to sign catalogs.
///
/// Its ``id`` is the SHA-256 of its 32 raw bytes, in lowercase hex; signatures name their key by
/// it. The file (`NAME.pub`) holds one line, `odr-ed25519-public-key <64 hex digits>\n`.
///
/// ```swift
/// let trusted = try PublicSigningKey.load(from: URL(filePath: "release.key.pub"))
/// print(trusted.id)
/// ```
public struct PublicSigningKey: Sendable, Hashable {
    /// The first word of a public key file.
    public static let fileTag = "odr-ed25519-public-key"

    /// The 32 bytes of the key (RFC 8032).
    public let rawBytes: Data
    /// SHA-256 of ``rawBytes`` in lowercase hex: how signatures and rotations name the key.
    public let id: String
    let key: Curve25519.Signing.PublicKey

    init(key: Curve25519.Signing.PublicKey) {
        self.key = key
        rawBytes = key.rawRepresentation
        id = ContentHash.sha256Hex(of: rawBytes)
    }

    /// The key whose 32 raw bytes are `bytes`.
    ///
    /// - Throws: ``FormatError`` `invalid-key` when they are not an Ed25519 public key.
    public init(rawBytes bytes: some DataProtocol) throws(FormatError) {
        do { self.init(key: try Curve25519.Signing.PublicKey(rawRepresentation: Data(bytes))) } catch {
            throw FormatError(.invalidKey, "An Ed25519 public key is 32 bytes; this one is \(bytes.count).", cause: error)
        }
    }

    /// The key written as 64 lowercase hex digits (as key rotations list keys).
    public init(hex: String) throws(FormatError) {
        guard let bytes = HexDigest.bytes(ofHex: hex, count: 32) else {
            throw FormatError(.invalidKey, "A public key is 64 lowercase hex digits; '\(hex.prefix(80))' is not.")
        }
        try self.init(rawBytes: bytes)
    }

    /// The key as 64 lowercase hex digits.
    public var hex: String { ContentHash.hex(rawBytes) }

    /// Whether `signature` is this key's Ed25519 signature of `message`.
    public func isValidSignature(_ signature: some DataProtocol, for message: some DataProtocol) -> Bool {
        key.isValidSignature(signature, for: message)
    }

    /// The public key file's contents.
    public var fileContents: String { "\(Self.fileTag) \(hex)\n" }

    /// Where `odrpack key generate --output NAME` writes the public key: `NAME.pub`.
    public static func fileURL(forPrivateKeyAt url: URL) -> URL {
        url.deletingLastPathComponent().appending(path: url.lastPathComponent + ".pub")
    }

    /// Reads a public key file.
    ///
    /// - Throws: ``FormatError`` `io` when it cannot be read; `invalid-key` when it is not a public
    ///   key file (a private key, say: it stays on the build machine).
    public static func load(from url: URL) throws(FormatError) -> PublicSigningKey {
        let words = try KeyFile.words(at: url)
        if words.first == SigningKey.fileTag {
            throw FormatError(.invalidKey, "'\(url.path)' is a private key; give clients the public key ('\(url.lastPathComponent).pub') and keep this one secret.")
        }
        guard words.count == 2, words[0] == fileTag else {
            throw FormatError(.invalidKey, "'\(url.path)' is not a public key written by 'odrpack key generate' (NAME.pub).")
        }
        return try PublicSigningKey(hex: words[1])
    }

    public static func == (lhs: PublicSigningKey, rhs: PublicSigningKey) -> Bool { lhs.rawBytes == rhs.rawBytes }
    public func hash(into hasher: inout Hasher) { hasher.combine(rawBytes) }
}
