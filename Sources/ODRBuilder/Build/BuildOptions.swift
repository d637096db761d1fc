import Foundation
import ODRFormat

/// Everything `odrpack build` takes from its command line.
public struct BuildOptions: Sendable {
    /// The assets folder.
    public var assets: URL
    /// The catalog folder written into (created if missing).
    public var output: URL
    /// The rules file; `assets/odr.json` when `nil`.
    public var rules: URL?
    /// The catalog id; taken from the rules, the existing catalog or the assets folder's name when `nil`.
    public var catalogID: String?
    /// The distribution pointed at the new version.
    public var distribution: String = "live"
    /// Whether a file over the pack size limit gets its own pack instead of failing the build.
    public var allowOversize: Bool = false
    /// The build cache file; `nil` hashes every file.
    public var cache: URL?
    /// Files hashed and packs compressed at once; every core by default.
    public var concurrency: Int = ProcessInfo.processInfo.activeProcessorCount
    /// Archive settings.
    public var packOptions: PackWriter.Options = .init()
    /// Whether to write split metadata (format 3, `true`) or one whole manifest (`false`); `nil`
    /// takes the rules' `splitMetadata`, else the form of the catalog's latest version, else split
    /// (a new catalog). See ``BuildReport/MetadataForm``.
    public var splitMetadata: Bool?
    /// How `catalog.json` is signed; `nil` writes it unsigned (refused when the catalog is signed).
    public var signing: CatalogSigning?

    /// Whether a rebuild may return at once when the proof the last build left beside the cache
    /// (``UnchangedBuild``) shows that nothing changed; tests turn it off to compare with a full rebuild.
    var usesUnchangedProof = true
    /// How long before the scan every scanned file and folder must have last changed for the build
    /// to leave that proof, in nanoseconds: 2 s, the coarsest timestamps of common file systems.
    var unchangedProofMargin: Int64 = 2_000_000_000

    /// Options for building `assets` into `output`.
    public init(assets: URL, output: URL) {
        self.assets = assets
        self.output = output
    }

    /// The rules file this build reads.
    public var rulesURL: URL { rules ?? assets.appending(path: TagRules.defaultFileName) }
}
