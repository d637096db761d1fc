#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
    /// The newest format version this library reads and writes: 4, for manifests with chunked files.
    ///
    /// A manifest without ``variantAxes`` or chunked files is written as version 1, byte for byte
    /// what earlier libraries wrote, so they still read it; one with variants is version 2, and one
    /// with any chunked file (``FileRecord/chunks``) is version 4, which older libraries refuse with
    /// `unsupported-format-version` rather than misread. Version 3 is a ``SplitManifest``.
    public static let currentFormatVersion = 4
    /// The format version of a whole manifest with any chunked file: 4.
    public static let chunkedFormatVersion = 4
    /// The format versions a whole manifest may have: 1, 2 and 4.
    public static func isWholeFormatVersion(_ version: Int) -> Bool { version == 1 || version == 2 || version == chunkedFormatVersion }
    /// The format version of a manifest with these axes: 1 without variants, 2 with.
    public static func formatVersion(forAxes axes: [VariantAxis]) -> Int { axes.isEmpty ? 1 : 2 }
    /// The format version of a manifest with these axes and files: 4 when any file is chunked,
    /// otherwise ``formatVersion(forAxes:)``.
    public static func formatVersion(forAxes axes: [VariantAxis], files: some Sequence<FileRecord>) -> Int {
        files.contains { !$0.chunks.isEmpty } ? chunkedFormatVersion : formatVersion(forAxes: axes)
    }

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
    /// The variant axes packs and files may depend on, in declared order; empty when every device
    /// downloads the same files. Written to JSON only when not empty.
    public var variantAxes: [VariantAxis]
    /// Every file, sorted by path.
    ///
    /// A manifest decoded from its compact form builds these records the first time they are read;
    /// ``ManifestIndex`` finds one file, or one pack's files, without building them all.
    public var files: [FileRecord] {
        get {
            switch fileTable {
            case .records(let records): records
            case .compact(let table): table.records
            }
        }
        set { fileTable = .records(newValue) }
    }

    /// Where the files are: records, or the bytes of a compact manifest.
    enum FileTable: Sendable {
        case records([FileRecord])
        case compact(CompactFileTable)
    }

    var fileTable: FileTable

    /// Creates a manifest; `formatVersion` defaults to the one its axes and files need (1 without
    /// variants, 2 with, 4 with any chunked file).
    public init(
        formatVersion: Int? = nil,
        catalogID: String, version: Int,
        tags: [TagRecord], initialInstallTags: [String], prefetchOrder: [String],
        packs: [PackRecord], files: [FileRecord], variantAxes: [VariantAxis] = []
    ) {
        self.formatVersion = formatVersion ?? Self.formatVersion(forAxes: variantAxes, files: files)
        self.variantAxes = variantAxes
        self.catalogID = catalogID
        self.version = version
        self.tags = tags
        self.initialInstallTags = initialInstallTags
        self.prefetchOrder = prefetchOrder
        self.packs = packs
        fileTable = .records(files)
    }

    private enum CodingKeys: String, CodingKey {
        case formatVersion, catalogID, version, tags, initialInstallTags, prefetchOrder, packs, files, variantAxes
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        // Checked before the other keys, which a newer format may not have: a split manifest
        // (format 3) has no tags, packs or files, and must be refused as a version, not as bad JSON.
        let formatVersion = try container.decode(Int.self, forKey: .formatVersion)
        guard Self.isWholeFormatVersion(formatVersion) || formatVersion < 1 else { throw Self.unsupported(formatVersion) }
        self.init(
            formatVersion: formatVersion,
            catalogID: try container.decode(String.self, forKey: .catalogID),
            version: try container.decode(Int.self, forKey: .version),
            tags: try container.decode([TagRecord].self, forKey: .tags),
            initialInstallTags: try container.decode([String].self, forKey: .initialInstallTags),
            prefetchOrder: try container.decode([String].self, forKey: .prefetchOrder),
            packs: try container.decode([PackRecord].self, forKey: .packs),
            files: try container.decode([FileRecord].self, forKey: .files),
            variantAxes: try container.decodeIfPresent([VariantAxis].self, forKey: .variantAxes) ?? [])
    }

    /// The error for a manifest of a format version above ``currentFormatVersion``.
    static func unsupported(_ formatVersion: Int) -> FormatError {
        if SplitManifest.isSplitFormatVersion(formatVersion) {
            return FormatError(
                .unsupportedFormatVersion,
                "The manifest has format version 3: its tags, packs and files are in split metadata files (odrpack build's default), and this reader takes only manifests that list them inline (formats 1, 2 and 4). Update to a runtime that reads split catalogs, or rebuild the catalog with odrpack build --whole-manifest.",
                field: "formatVersion")
        }
        return FormatError(
            .unsupportedFormatVersion,
            "The manifest has format version \(formatVersion); this library reads versions 1, 2, 4 and split 3 and 5. Update the runtime or rebuild the catalog with a matching odrpack.",
            field: "formatVersion")
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(formatVersion, forKey: .formatVersion)
        try container.encode(catalogID, forKey: .catalogID)
        try container.encode(version, forKey: .version)
        try container.encode(tags, forKey: .tags)
        try container.encode(initialInstallTags, forKey: .initialInstallTags)
        try container.encode(prefetchOrder, forKey: .prefetchOrder)
        try container.encode(packs, forKey: .packs)
        try container.encode(files, forKey: .files)
        if !variantAxes.isEmpty { try container.encode(variantAxes, forKey: .variantAxes) }
    }

    public static func == (lhs: VersionManifest, rhs: VersionManifest) -> Bool {
        lhs.formatVersion == rhs.formatVersion && lhs.catalogID == rhs.catalogID && lhs.version == rhs.version
            && lhs.tags == rhs.tags && lhs.initialInstallTags == rhs.initialInstallTags
            && lhs.prefetchOrder == rhs.prefetchOrder && lhs.packs == rhs.packs && lhs.files == rhs.files
            && lhs.variantAxes == rhs.variantAxes
    }

    /// The path of version `number`'s manifest relative to the catalog root: `versions/<n>.json`.
    public static func manifestPath(forVersion number: Int) -> String { "versions/\(number).json" }

    /// The version number of a manifest path as ``manifestPath(forVersion:)`` writes it
    /// (`versions/<n>.json`, 1 to 9 decimal digits), or `nil` for any other path.
    public static func version(ofManifestPath path: String) -> Int? {
        guard path.hasPrefix("versions/"), path.hasSuffix(".json") else { return nil }
        let name = path.utf8.dropFirst("versions/".utf8.count).dropLast(".json".utf8.count)
        guard (1...9).contains(name.count), name.allSatisfy({ (UInt8(ascii: "0")...UInt8(ascii: "9")).contains($0) }) else { return nil }
        return Int(String(decoding: name, as: UTF8.self))
    }

    /// Decodes and validates a version manifest.
    ///
    /// - Throws: ``FormatError`` naming the field: `malformed-json`, `unsupported-format-version`,
    ///   `invalid-value`, `invalid-path`, `duplicate` or `dangling-reference`.
    public static func decode(from data: Data) throws(FormatError) -> VersionManifest {
        try decode(from: data, keysChecked: false)
    }

    /// Decodes and validates `data`; `keysChecked` when ``JSONKeyCheck`` ran over it already.
    static func decode(from data: Data, keysChecked: Bool) throws(FormatError) -> VersionManifest {
        let manifest = try CatalogJSON.decode(VersionManifest.self, from: data, file: "the version manifest", keysChecked: keysChecked)
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
