import Crypto
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

/// An Ed25519 private key that signs catalogs (`odrpack key generate` writes one).
///
/// The file holds one line, `odr-ed25519-private-key <64 hex digits>\n`: the key's 32-byte seed as
/// RFC 8032 defines it, which any Ed25519 library loads (Python's `cryptography`:
/// `Ed25519PrivateKey.from_private_bytes(bytes.fromhex(...))`). It is created with mode 0600.
///
/// ```swift
/// let key = SigningKey.generate()
/// try key.write(to: URL(filePath: "release.key"))           // and release.key.pub
/// let signed = try index.signed(with: [key], expiring: Date().addingTimeInterval(30 * 86_400))
/// ```
public struct SigningKey: Sendable {
    /// The first word of a private key file.
    public static let fileTag = "odr-ed25519-private-key"

    let key: Curve25519.Signing.PrivateKey

    /// A new random key.
    public static func generate() -> SigningKey { SigningKey(key: .init()) }

    /// The key whose 32-byte seed is `seed` (RFC 8032); test vectors use a fixed seed.
    ///
    /// - Throws: ``FormatError`` `invalid-key` when `seed` is not 32 bytes.
    public init(seed: some DataProtocol) throws(FormatError) {
        do { key = try Curve25519.Signing.PrivateKey(rawRepresentation: Data(seed)) } catch {
            throw FormatError(.invalidKey, "An Ed25519 seed is 32 bytes; this one is \(seed.count).", cause: error)
        }
    }

    init(key: Curve25519.Signing.PrivateKey) { self.key = key }

    /// The key that verifies this key's signatures.
    public var publicKey: PublicSigningKey { PublicSigningKey(key: key.publicKey) }

    /// The Ed25519 signature (64 bytes) of `message`; deterministic, as RFC 8032 defines it.
    public func signature(for message: some DataProtocol) throws(FormatError) -> Data {
        do { return try key.signature(for: message) } catch {
            throw FormatError(.invalidKey, "The key could not sign.", cause: error)
        }
    }

    /// The private key file's contents.
    public var fileContents: String { "\(Self.fileTag) \(ContentHash.hex(key.rawRepresentation))\n" }

    /// Writes the key to `url` (mode 0600, never replacing a file) and its public key to `url.pub`.
    ///
    /// - Throws: ``FormatError`` `io` when either file exists or cannot be written; nothing is left
    ///   behind then.
    public func write(to url: URL) throws(FormatError) {
        let publicURL = PublicSigningKey.fileURL(forPrivateKeyAt: url)
        if FileManager.default.fileExists(atPath: publicURL.path) {
            throw FormatError(.io, "'\(publicURL.path)' already exists; choose another name or remove the old key pair first.")
        }
        do {
            let file = try WritableFile(creating: url, mode: 0o600)
            try file.append(Array(fileContents.utf8))
            try file.close()
        } catch let error as FormatError {
            if error.cause.map({ ($0 as? POSIXError)?.code == .EEXIST }) == true {
                throw FormatError(.io, "'\(url.path)' already exists; a key is never overwritten. Choose another name.")
            }
            throw error
        } catch {
            throw FormatError(.io, "Could not write the key to '\(url.path)'.", cause: error)
        }
        do {
            try Data(publicKey.fileContents.utf8).write(to: publicURL, options: .withoutOverwriting)
        } catch {
            try? FileManager.default.removeItem(at: url)
            throw FormatError(.io, "Could not write the public key to '\(publicURL.path)'.", cause: error)
        }
    }

    /// Reads a private key file.
    ///
    /// - Throws: ``FormatError`` `io` when it cannot be read; `invalid-key` when it is not a
    ///   private key file (a `.pub` file, say).
    public static func load(from url: URL) throws(FormatError) -> SigningKey {
        let words = try KeyFile.words(at: url)
        if words.first == PublicSigningKey.fileTag {
            throw FormatError(.invalidKey, "'\(url.path)' is a public key; signing needs the private key file (the one without .pub).")
        }
        guard words.count == 2, words[0] == fileTag, let seed = HexDigest.bytes(ofHex: words[1], count: 32) else {
            throw FormatError(.invalidKey, "'\(url.path)' is not a private key written by 'odrpack key generate'.")
        }
        return try SigningKey(seed: seed)
    }
}

/// Reading the one-line key files.
enum KeyFile {
    /// The whitespace-separated words of a small text file (key files are under 200 bytes).
    static func words(at url: URL) throws(FormatError) -> [String] {
        let data: Data
        do { data = try Data(contentsOf: url) } catch {
            throw FormatError(.io, "Could not read the key file '\(url.path)'.", cause: error)
        }
        guard data.count < 4096 else {
            throw FormatError(.invalidKey, "'\(url.path)' is too large to be a key file.")
        }
        return String(decoding: data, as: UTF8.self).split(whereSeparator: { $0 == " " || $0 == "\n" || $0 == "\r" || $0 == "\t" })
            .map(String.init)
    }
}
