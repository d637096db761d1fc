#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif
import ODRFormat

/// A catalog the store follows, as it was at the last successful check.
public struct FollowedCatalog: Sendable {
    /// The catalog's base URL (the directory that holds `catalog.json`), ending in `/`.
    public var url: URL
    /// The distribution followed (usually `live`).
    public var distribution: String
    /// The validators of the last `catalog.json` received, for a conditional request.
    public var validators: TransferValidators
    /// The highest `serial` ever accepted of this catalog id, through any URL; a lower one is refused.
    public var highestSerial: Int
    /// The last accepted `catalog.json`.
    public var index: CatalogIndex?
    /// The version the distribution pointed at in that index.
    public var currentVersion: Int?
    /// When the catalog was last checked, in seconds since 1970.
    public var checkedAt: Double?
    /// The key set that signed the accepted index (after following its key rotations); `nil` when
    /// the client trusts no keys. The next check starts from it, so rotated-away keys stay untrusted.
    public var keySet: TrustedKeySet?

    /// Describes a followed catalog; the defaults describe one never checked.
    public init(url: URL, distribution: String, validators: TransferValidators = .init(), highestSerial: Int = -1,
                index: CatalogIndex? = nil, currentVersion: Int? = nil, checkedAt: Double? = nil, keySet: TrustedKeySet? = nil) {
        self.url = url
        self.distribution = distribution
        self.validators = validators
        self.highestSerial = highestSerial
        self.index = index
        self.currentVersion = currentVersion
        self.checkedAt = checkedAt
        self.keySet = keySet
    }
}

/// What a store trusts of one catalog id, for every URL that reaches it (see
/// ``ResourceStore/catalogTrust(catalogID:)``).
struct CatalogTrustState: Sendable, Equatable {
    /// The highest `serial` accepted; a lower one is refused (`catalog-rollback`).
    var highestSerial: Int
    /// The key set its accepted `catalog.json` was signed with, after its rotations; `nil` for a
    /// catalog accepted without trusted keys.
    var keySet: TrustedKeySet?
}
