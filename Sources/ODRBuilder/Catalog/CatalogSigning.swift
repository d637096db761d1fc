import Foundation
import ODRFormat

/// How `catalog.json` is signed when it is written: the keys, and how long the signature is trusted.
///
/// Every write of a signed index (a build, `distribution set`, `prune`, `sign`) sets `expires` to
/// now plus ``expiresIn`` and raises the serial, so clients see a fresh, newer catalog.
///
/// ```swift
/// var options = BuildOptions(assets: assets, output: output)
/// options.signing = try CatalogSigning(keyFiles: [URL(filePath: "release.key")])
/// ```
public struct CatalogSigning: Sendable {
    /// The default lifetime of a signature: 30 days. Re-sign (`odrpack sign`) before it runs out.
    public static let defaultExpiresIn: TimeInterval = 30 * 86_400

    /// The private keys that sign (several for a threshold).
    public var keys: [SigningKey]
    /// Seconds from signing until clients refuse the index as expired.
    public var expiresIn: TimeInterval
    /// The longest validity a signature may have: 100 years (36,500 days).
    public static let maximumExpiresIn: TimeInterval = 36_500 * 86_400
    /// The clock that stamps the signature (tests fix it).
    public var now: @Sendable () -> Date

    /// Signing with `keys`.
    ///
    /// - Throws: `signing.invalid` when `keys` is empty or `expiresIn` is not positive, or more
    ///   than ``maximumExpiresIn`` (an expiry time must have a four-digit year).
    public init(keys: [SigningKey], expiresIn: TimeInterval = CatalogSigning.defaultExpiresIn,
                now: @escaping @Sendable () -> Date = { Date() }) throws(BuildError) {
        guard !keys.isEmpty else { throw BuildError(.signingInvalid, "signing needs at least one key (--sign-with KEY)") }
        guard expiresIn > 0 else {
            throw BuildError(.signingInvalid, "a signature must stay valid for more than zero seconds; pass --expires-in with a positive number of days",
                             value: String(expiresIn))
        }
        // Also refuses infinity (NaN fails the guard above): the expiry time in whole seconds trapped on it.
        guard expiresIn <= Self.maximumExpiresIn else {
            throw BuildError(.signingInvalid, "a signature can stay valid for at most \(Int(Self.maximumExpiresIn / 86_400)) days; pass a smaller --expires-in",
                             value: String(expiresIn))
        }
        self.keys = keys
        self.expiresIn = expiresIn
        self.now = now
    }

    /// Signing with the private key files at `keyFiles` (written by `odrpack key generate`).
    ///
    /// - Throws: `signing.key` naming the file that is missing or not a private key.
    public init(keyFiles: [URL], expiresIn: TimeInterval = CatalogSigning.defaultExpiresIn) throws(BuildError) {
        try self.init(keys: try keyFiles.map { url throws(BuildError) in try Self.loadKey(url) }, expiresIn: expiresIn)
    }

    /// Reads one private key file.
    public static func loadKey(_ url: URL) throws(BuildError) -> SigningKey {
        do { return try SigningKey.load(from: url) } catch {
            throw BuildError(.signingKey, error.message, file: url.path, cause: error.cause)
        }
    }

    /// `index` signed now.
    func sign(_ index: CatalogIndex) throws(BuildError) -> CatalogIndex {
        do { return try index.signed(with: keys, expires: now().addingTimeInterval(expiresIn)) } catch {
            throw BuildError(.catalogMalformed, "the catalog index cannot be signed: \(error.message)", cause: error.cause)
        }
    }
}
