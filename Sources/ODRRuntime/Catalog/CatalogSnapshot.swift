#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// One version of a catalog as the runtime uses it: the accepted index and the followed
/// distribution's manifest, with lookups.
public struct CatalogSnapshot: Sendable {
    /// The catalog's base URL, ending in `/`.
    public var catalogURL: URL
    /// The accepted `catalog.json`.
    public var index: CatalogIndex
    /// The manifest of the version the distribution points at.
    public var manifest: VersionManifest { lookup.manifest }
    /// Lookups by pack, tag and path, for the device's choice of variants: tags list only the
    /// packs it downloads, and a logical path resolves to the variant it chose.
    public let lookup: ManifestIndex
    /// Set when ``CatalogClient/snapshot(online:)`` could not reach the server and this is the
    /// stored copy; `nil` for a catalog checked online (or a snapshot asked for offline).
    public var fallback: Fallback?
    /// Set for a stored, signed catalog whose `expires` time has passed (clients with trusted keys
    /// only): installed packs keep serving, but installers download nothing from it
    /// (`catalog-expired`) until a fresh catalog is fetched.
    public var isExpired = false
    /// For a split catalog (format 3), the version's split manifest: ``manifest`` then describes
    /// only the tags this store uses (every one with all its packs and files), and
    /// ``CatalogClient/describe(_:in:)`` fetches the rest of a tag when a request needs it.
    /// `nil` for a whole manifest, which describes every tag.
    public internal(set) var split: SplitManifest?

    /// Why a snapshot is the stored copy although the network was asked for.
    public struct Fallback: Sendable {
        /// The error that made the server unreachable, or the refusal of a stale `catalog.json`
        /// (`catalog-rollback`, `catalog-expired`: ``isStale``).
        public var reason: ResourceError
        /// Whether the server answered with a `catalog.json` older than the one stored (a stale
        /// cache or CDN edge) rather than not answering at all.
        public var isStale: Bool { CatalogClient.staleRefusals.contains(reason.code) }
        /// When the stored copy was last checked online (seconds since 1970), if known.
        public var checkedAt: Double?
    }

    /// Pairs an accepted index with the manifest its distribution points at, indexing the manifest
    /// once for a device that chooses `variants` (by default, every axis in declared order).
    ///
    /// - Parameter split: the split manifest when `manifest` is the part of a split version a
    ///   store uses (see ``split``).
    public init(catalogURL: URL, index: CatalogIndex, manifest: VersionManifest, variants: VariantPreferences = VariantPreferences(),
                split: SplitManifest? = nil) {
        self.catalogURL = CatalogLocation.base(catalogURL)
        self.index = index
        lookup = ManifestIndex(manifest, variants: variants)
        self.split = split
    }

    /// Whether `tag` is described: always in a whole manifest; in a split one, once a request
    /// (or ``ResourceManager/describe(tags:)``) needed it.
    public func describes(tag: String) -> Bool { lookup.tag(named: tag) != nil }

    /// The error for `tag`, which this snapshot does not describe: `invalid-tag` for a whole
    /// manifest; for a split one, `catalog-unavailable`, since the tag may be in a bin not fetched yet.
    func undescribed(_ tag: String) -> ResourceError {
        guard split != nil else {
            let known = manifest.tags.map(\.name).prefix(12).joined(separator: ", ")
            return ResourceError(.invalidTag, "The catalog's version \(version) has no tag '\(tag)'. Known tags: \(known).", url: catalogURL)
        }
        return ResourceError(.catalogUnavailable, "Tag '\(tag)' is not described on this device yet: the catalog's version \(version) is split, and only the tags a request needed are fetched. Begin a request for it, or call describe(tags:) (odr_manager_describe in C) first, which fetches its metadata (or says the tag does not exist).",
                             url: catalogURL)
    }

    /// The version number.
    public var version: Int { manifest.version }

    /// Throws `catalog-expired` when ``isExpired``: called before anything is downloaded from it.
    func requireUnexpired() throws(ResourceError) {
        guard isExpired else { return }
        throw ResourceError(.catalogExpired, "The stored catalog expired at \(index.expires ?? "?"): installed packs keep working, but nothing new is installed from it. Connect to the network so a fresh, signed catalog can be fetched (and re-sign the catalog with odrpack sign if the server's copy expired too).",
                            url: catalogURL)
    }

    /// The URL of pack `id`'s archive.
    public func packURL(id: String) -> URL { CatalogLocation.url(of: PackRecord.archivePath(forID: id), in: catalogURL) }

    /// The packs a request for `tags` needs, sorted by id.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` naming the first tag this version does not define.
    public func packs(forTags tags: some Sequence<String>) throws(ResourceError) -> [PackRecord] {
        for tag in tags where lookup.tag(named: tag) == nil { throw undescribed(tag) }
        return lookup.packs(forTags: tags).compactMap { lookup.pack(id: $0) }
    }

    /// The preservation priority of `tag`: the app's override if it set one, else the manifest's default.
    public func preservationPriority(ofTag tag: String, overrides: [String: Double]) -> Double {
        overrides[tag] ?? lookup.tag(named: tag)?.preservationPriority ?? 0.5
    }
}
