extension ResourceError.Code {
    /// A `catalog.json` whose `serial` is lower than the highest one this store has accepted: a stale
    /// cache or an attacker is serving an old catalog. Nothing changed; check the server or CDN.
    public static let catalogRollback = ResourceError.Code(rawValue: "catalog-rollback")
    /// The catalog has not been fetched yet and the network is unavailable: there is nothing to
    /// start from. Connect once, or ship a bundled catalog with the app.
    public static let catalogUnavailable = ResourceError.Code(rawValue: "catalog-unavailable")
    /// A resource path that the catalog's current version does not list.
    public static let unknownResource = ResourceError.Code(rawValue: "unknown-resource")
    /// A resource whose tags are not installed yet; fetch them first.
    public static let resourceNotInstalled = ResourceError.Code(rawValue: "resource-not-installed")
}
