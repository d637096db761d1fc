extension ResourceError.Code {
    /// A `catalog.json` whose `serial` is lower than the highest one this store has accepted: a stale
    /// cache or an attacker is serving an old catalog. Nothing changed; check the server or CDN.
    public static let catalogRollback = ResourceError.Code(rawValue: "catalog-rollback")
    /// The catalog has not been fetched yet and the network is unavailable: there is nothing to
    /// start from. Connect once, or ship a bundled catalog with the app.
    public static let catalogUnavailable = ResourceError.Code(rawValue: "catalog-unavailable")
    /// The client has trusted keys, and `catalog.json` is unsigned, badly signed, signed by too few
    /// of the trusted keys (below the threshold), signed only by keys it does not trust, or its key
    /// rotations do not lead from the trusted keys. Nothing was stored or installed; the previous
    /// catalog keeps serving. Sign the catalog with a trusted key (`odrpack sign`), or check which
    /// keys the app trusts.
    public static let untrustedCatalog = ResourceError.Code(rawValue: "untrusted-catalog")
    /// The signed `catalog.json` has passed its `expires` time: from the network it is refused (a
    /// frozen or replayed catalog); a stored copy keeps serving installed packs but installs
    /// nothing new. Re-sign the catalog (`odrpack sign`) before it expires, and check that the CDN
    /// serves the current file.
    public static let catalogExpired = ResourceError.Code(rawValue: "catalog-expired")
    /// A resource path that the catalog's current version does not list.
    public static let unknownResource = ResourceError.Code(rawValue: "unknown-resource")
    /// A resource whose tags are not installed yet; fetch them first.
    public static let resourceNotInstalled = ResourceError.Code(rawValue: "resource-not-installed")
}
