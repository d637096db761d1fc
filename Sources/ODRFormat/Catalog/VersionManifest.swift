import Foundation

/// The contents of `versions/<n>.json`: everything a client needs to know about one version.
///
/// A manifest is immutable once published. It lists every tag with the packs it needs, the tags to
/// install first and to prefetch, every pack, and every file with the entry that holds its bytes.
/// Decoding validates all of it, so code that holds a `VersionManifest` can trust its references.
///
/// ```swift
/// let manifest = try VersionManifest.decode(from: data)
/// let index = manifest.makeIndex()
/// for id in index.tag(named: "level3")?.packs ?? [] { print(index.pack(id: id)!.archivePath) }
/// ```
public struct VersionManifest: Codable, Sendable, Equatable {
    /// The format version this library writes and reads.
    public static let currentFormatVersion = 1

    /// The format version of this file.
    public var formatVersion: Int
    /// The id of the catalog this version belongs to.
    public var catalogID: String
    /// This version's number.
    public var version: Int
    /// Every tag, sorted by name.
    public var tags: [TagRecord]
    /// Tags every client installs before the app starts.
    public var initialInstallTags: [String]
    /// Tags to fetch in the background after the initial install, in this order.
    public var prefetchOrder: [String]
    /// Every pack, sorted by id.
    public var packs: [PackRecord]
    /// Every file, sorted by path.
    public var files: [FileRecord]

    public init(
        formatVersion: Int = VersionManifest.currentFormatVersion,
        catalogID: String, version: Int,
        tags: [TagRecord], initialInstallTags: [String], prefetchOrder: [String],
        packs: [PackRecord], files: [FileRecord]
    ) {
        self.formatVersion = formatVersion
        self.catalogID = catalogID
        self.version = version
        self.tags = tags
        self.initialInstallTags = initialInstallTags
        self.prefetchOrder = prefetchOrder
        self.packs = packs
        self.files = files
    }

    /// The path of version `number`'s manifest relative to the catalog root: `versions/<n>.json`.
    public static func manifestPath(forVersion number: Int) -> String { "versions/\(number).json" }

    /// Decodes and validates a version manifest.
    ///
    /// - Throws: ``FormatError`` naming the field: `malformed-json`, `unsupported-format-version`,
    ///   `invalid-value`, `invalid-path`, `duplicate` or `dangling-reference`.
    public static func decode(from data: Data) throws(FormatError) -> VersionManifest {
        let manifest = try CatalogJSON.decode(VersionManifest.self, from: data, file: "the version manifest")
        try manifest.validate()
        return manifest
    }

    /// The file's bytes: deterministic JSON with sorted keys and a trailing newline.
    public func encoded() throws(FormatError) -> Data {
        try validate()
        return try CatalogJSON.encode(self)
    }

    /// Dictionaries for fast lookups of packs, tags and files.
    public func makeIndex() -> ManifestIndex { ManifestIndex(self) }

    /// The distinct entries of pack `id`, ordered by their position in the archive.
    ///
    /// Several files may share one entry (identical content); the entry appears once.
    /// Reads every file record; to ask for many packs, use ``ManifestIndex/expectedEntries(inPack:)``.
    public func expectedEntries(inPack id: String) -> [PackEntryExpectation] {
        PackEntryExpectation.distinctEntries(of: files.lazy.filter { $0.pack == id })
    }
}
