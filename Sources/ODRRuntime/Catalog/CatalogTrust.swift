#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// What a client trusts a catalog by: the builder's public keys, how many must sign, and how many
/// bytes `catalog.json` and a manifest may have.
///
/// With no keys (the default) any well-formed catalog is accepted, as before signing existed:
/// whoever controls the server, a CDN edge or a proxy decides what installs (docs/SECURITY.md).
/// With keys, only a `catalog.json` signed by at least ``threshold`` of them (or of the key set its
/// rotations lead to), not expired, is accepted, and every manifest must match the SHA-256 and size
/// the catalog pins.
///
/// ```swift
/// var trust = CatalogTrust(keys: [try PublicSigningKey.load(from: Bundle.main.url(forResource: "release.key", withExtension: "pub")!)])
/// trust.threshold = 1
/// ```
public struct CatalogTrust: Sendable {
    /// The default limit of `catalog.json`: 16 MiB.
    public static let defaultMaximumCatalogBytes = 16 << 20
    /// The default limit of one version manifest: 32 MiB. Decoding JSON holds several times its
    /// size, so this keeps a manifest nobody should trust (an unsigned catalog's, or one past a
    /// broken pin) from taking more than about 256 MiB. A split manifest (`odrpack build`'s
    /// default) of 100,000 files is about 30 KB; a whole one (`--whole-manifest`) over about
    /// 80,000 files needs ``maximumManifestBytes`` raised.
    public static let defaultMaximumManifestBytes = 32 << 20

    /// The public keys trusted to sign the catalog (`odrpack key generate` writes them as `NAME.pub`).
    public var keys: [PublicSigningKey]
    /// How many distinct trusted keys must sign (default 1).
    public var threshold: Int
    /// The number of the key set ``keys`` is (1 unless an app release ships keys a rotation introduced).
    public var keySetVersion: Int
    /// `catalog.json` bodies beyond this many bytes are cut off while downloading (`invalid-catalog`).
    public var maximumCatalogBytes: Int
    /// Manifest bodies beyond this many bytes are cut off while downloading (`invalid-catalog`).
    public var maximumManifestBytes: Int

    /// Trust in `keys` (none: accept any catalog, as without signing).
    public init(keys: [PublicSigningKey] = [], threshold: Int = 1, keySetVersion: Int = 1,
                maximumCatalogBytes: Int = CatalogTrust.defaultMaximumCatalogBytes,
                maximumManifestBytes: Int = CatalogTrust.defaultMaximumManifestBytes) {
        self.keys = keys
        self.threshold = threshold
        self.keySetVersion = keySetVersion
        self.maximumCatalogBytes = maximumCatalogBytes
        self.maximumManifestBytes = maximumManifestBytes
    }

    /// Whether signatures are checked.
    public var requiresSignatures: Bool { !keys.isEmpty }

    /// The configured keys as a key set.
    ///
    /// - Throws: ``ResourceError`` `invalid-argument` for a threshold outside 1...keys.
    func configuredKeySet() throws(ResourceError) -> TrustedKeySet {
        do { return try TrustedKeySet(version: keySetVersion, keys: keys, threshold: threshold) } catch {
            throw ResourceError(.invalidArgument, "The trusted keys are misconfigured: \(error.message)", cause: error)
        }
    }

    /// Checks `index` against the newer of the configured key set and `stored` (the set a
    /// rotation led to earlier).
    ///
    /// - Returns: the key set that signed it, to store.
    /// - Throws: `untrusted-catalog`; `catalog-expired` when `now` is past `expires` and
    ///   `allowExpired` is `false`.
    func verify(_ index: CatalogIndex, stored: TrustedKeySet?, now: Date, allowExpired: Bool, url: URL) throws(ResourceError) -> TrustedKeySet {
        var start = try configuredKeySet()
        if let stored, stored.version > start.version { start = stored }
        let signer: TrustedKeySet
        do { signer = try index.verifySignatures(trusting: start) } catch {
            throw ResourceError(.untrustedCatalog, "\(error.message) Sign it with a key the app trusts (odrpack sign CATALOG --key KEY), or check the keys the app was given.",
                                url: url, cause: error)
        }
        guard let expiry = index.expiryDate else {
            throw ResourceError(.untrustedCatalog, "The signed catalog.json has no expires time; sign it with odrpack, which sets one.", url: url)
        }
        if expiry <= now, !allowExpired {
            throw ResourceError(.catalogExpired, "catalog.json (serial \(index.serial)) expired at \(index.expires ?? "?"); refusing it, since an expired catalog may be a frozen or replayed one. Re-sign it (odrpack sign) and check that the server or CDN serves the current file.",
                                url: url)
        }
        return signer
    }
}
