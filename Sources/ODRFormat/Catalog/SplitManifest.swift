#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Crypto

/// The SHA-256 and size of a metadata file as served: what a split manifest pins for each tag
/// bin, and a bin for each pack's file table.
public struct MetadataPin: Codable, Sendable, Hashable {
    /// The lowercase hexadecimal SHA-256 of the file's bytes as served; also its name.
    public var sha256: String
    /// The file's size in bytes as served.
    public var size: Int64

    public init(sha256: String, size: Int64) {
        self.sha256 = sha256
        self.size = size
    }

    /// The pin of `data`: its SHA-256 and size.
    public init(of data: Data) {
        self.init(sha256: ContentHash.sha256Hex(of: data), size: Int64(data.count))
    }

    /// Checks `data` against the pin: first its size, then its SHA-256.
    ///
    /// - Throws: ``FormatError`` `size-mismatch` when the size differs (a file cut short, or longer
    ///   than its pin), `hash-mismatch` when the bytes differ; the message names `file`.
    public func check(_ data: Data, file: String) throws(FormatError) {
        guard Int64(data.count) == size else {
            throw FormatError(
                .sizeMismatch,
                "\(file) is \(data.count) bytes, but its pin says \(size): it was cut short, replaced or served for another file. Fetch it again; if it persists, rebuild or re-upload the catalog.",
                field: file)
        }
        let actual = ContentHash.sha256Hex(of: data)
        guard actual == sha256 else {
            throw FormatError(
                .hashMismatch,
                "\(file) has SHA-256 \(actual), but its pin says \(sha256): it was damaged or replaced. Fetch it again; if it persists, rebuild or re-upload the catalog.",
                field: file)
        }
    }

    func validate(field: String) throws(FormatError) {
        guard HexDigest.isSHA256(sha256) else {
            throw FormatError(.invalidValue, "A pin's sha256 must be 64 lowercase hex digits; found '\(sha256.prefix(80))'.", field: "\(field).sha256")
        }
        guard size > 0, size <= SplitMetadata.maximumFileBytes else {
            throw FormatError(.invalidValue, "A pinned metadata file must be 1 to \(SplitMetadata.maximumFileBytes) bytes; found \(size).", field: "\(field).size")
        }
    }
}

/// The contents of `versions/<n>.json` in a catalog with split metadata (`odrpack build`'s default)
/// (format version 3): what a client needs before it chooses anything, and a pin for each **tag
/// bin**, the metadata file that holds the tags placed in it, their packs, and for each pack the
/// pin of its **file table** (see ``TagBin`` and ``PackFileTable``; `docs/FORMAT.md`, "Split metadata").
///
/// Runtimes that read only format versions 1 and 2 refuse this manifest with
/// `unsupported-format-version`. ``SplitMetadata/assemble(_:fetch:)`` rebuilds the whole
/// ``VersionManifest`` from it, its bins and tables, checking every pin.
///
/// ```swift
/// let split = try SplitManifest.decode(from: data)
/// let bin = split.bins[SplitManifest.bin(ofTag: "level3", binCount: split.bins.count)]
/// print(SplitMetadata.binPath(for: bin))
/// ```
public struct SplitManifest: Codable, Sendable, Equatable {
    /// The format version of a split manifest: 3.
    public static let formatVersion = 3
    /// The format version of a split manifest whose file tables hold any chunked file: 5, which
    /// readers of format 3 only refuse with `unsupported-format-version` rather than misread.
    public static let chunkedFormatVersion = 5
    /// Whether `version` is a split manifest's format version (3, or 5 with chunked files).
    public static func isSplitFormatVersion(_ version: Int) -> Bool { version == formatVersion || version == chunkedFormatVersion }
    /// The most bins a manifest may have.
    public static let maximumBinCount = 1 << 16
    /// The largest split manifest a reader decodes: 16 MiB. Its pins take about 100 bytes a bin
    /// (6.5 MB at ``maximumBinCount``), and decoding JSON holds several times its size, so a
    /// larger text is refused before it is decoded.
    public static let maximumBytes = 16 << 20
    /// How many tags `odrpack` places in a bin, at most on average: the bin count is the smallest
    /// power of two that keeps the average at or below it.
    public static let tagsPerBin = 64

    /// Totals a client shows without fetching bins.
    public struct Totals: Codable, Sendable, Equatable {
        /// The number of tags, packs and files (file records, one per variant of a path).
        public var tags: Int, packs: Int, files: Int
        /// The sums of every pack's `archiveBytes` and `installedBytes`.
        public var archiveBytes: Int64, installedBytes: Int64

        public init(tags: Int, packs: Int, files: Int, archiveBytes: Int64, installedBytes: Int64) {
            self.tags = tags
            self.packs = packs
            self.files = files
            self.archiveBytes = archiveBytes
            self.installedBytes = installedBytes
        }
    }

    /// ``formatVersion`` (3), or ``chunkedFormatVersion`` (5) when any file table holds chunks.
    public var formatVersion: Int
    /// The id of the catalog this version belongs to.
    public var catalogID: String
    /// This version's number.
    public var version: Int
    /// Tags every client installs before the app starts.
    public var initialInstallTags: [String]
    /// Tags to fetch in the background after the initial install, in this order.
    public var prefetchOrder: [String]
    /// The variant axes, as in ``VersionManifest/variantAxes``; written only when not empty.
    public var variantAxes: [VariantAxis]
    /// The pin of each tag bin, by bin number; their count is a power of two.
    public var bins: [MetadataPin]
    /// Counts and sums over the whole version.
    public var totals: Totals

    public init(
        catalogID: String, version: Int, initialInstallTags: [String], prefetchOrder: [String], variantAxes: [VariantAxis] = [],
        bins: [MetadataPin], totals: Totals, chunked: Bool = false
    ) {
        formatVersion = chunked ? Self.chunkedFormatVersion : Self.formatVersion
        self.catalogID = catalogID
        self.version = version
        self.initialInstallTags = initialInstallTags
        self.prefetchOrder = prefetchOrder
        self.variantAxes = variantAxes
        self.bins = bins
        self.totals = totals
    }

    private enum CodingKeys: String, CodingKey {
        case formatVersion, catalogID, version, initialInstallTags, prefetchOrder, variantAxes, bins, totals
    }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        formatVersion = try container.decode(Int.self, forKey: .formatVersion)
        guard Self.isSplitFormatVersion(formatVersion) else {
            throw FormatError(
                .unsupportedFormatVersion,
                "The manifest has format version \(formatVersion), not a split manifest (\(Self.formatVersion)); read it as a VersionManifest.",
                field: "formatVersion")
        }
        catalogID = try container.decode(String.self, forKey: .catalogID)
        version = try container.decode(Int.self, forKey: .version)
        initialInstallTags = try container.decode([String].self, forKey: .initialInstallTags)
        prefetchOrder = try container.decode([String].self, forKey: .prefetchOrder)
        variantAxes = try container.decodeIfPresent([VariantAxis].self, forKey: .variantAxes) ?? []
        bins = try container.decode([MetadataPin].self, forKey: .bins)
        totals = try container.decode(Totals.self, forKey: .totals)
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(formatVersion, forKey: .formatVersion)
        try container.encode(catalogID, forKey: .catalogID)
        try container.encode(version, forKey: .version)
        try container.encode(initialInstallTags, forKey: .initialInstallTags)
        try container.encode(prefetchOrder, forKey: .prefetchOrder)
        if !variantAxes.isEmpty { try container.encode(variantAxes, forKey: .variantAxes) }
        try container.encode(bins, forKey: .bins)
        try container.encode(totals, forKey: .totals)
    }

    /// Decodes and validates a split manifest.
    ///
    /// - Throws: ``FormatError``: `malformed-json`, `duplicate` (a key twice), `unsupported-format-version`
    ///   (another format version), `invalid-value` (a bin count that is not a power of two, a bad
    ///   pin or total, a malformed tag name).
    ///   Before decoding, `size-mismatch` (field `maximumBytes`) for a text over ``maximumBytes``
    ///   and `invalid-value` (field `bins`) for more than ``maximumBinCount`` bins, from one pass
    ///   over the bytes that holds nothing of them.
    public static func decode(from data: Data) throws(FormatError) -> SplitManifest {
        try decode(from: data, shape: JSONKeyCheck.check(data, file: file))
    }

    static let file = "the split version manifest"

    /// Decodes `data`, whose keys ``JSONKeyCheck`` checked, yielding `shape`: its size and bin
    /// count are checked before anything is decoded.
    static func decode(from data: Data, shape: JSONKeyCheck.Shape) throws(FormatError) -> SplitManifest {
        guard data.count <= maximumBytes else {
            throw FormatError(.sizeMismatch, "\(file) is \(data.count) bytes, over the \(maximumBytes)-byte limit for a split manifest (SplitManifest.maximumBytes), so it is not decoded. Rebuild the catalog.", field: "maximumBytes")
        }
        let binCount = shape.arrayCounts["bins"] ?? 0
        guard binCount <= maximumBinCount else {
            throw FormatError(.invalidValue, "A split manifest has a power of two from 1 to \(maximumBinCount) bins (SplitManifest.maximumBinCount); found \(binCount), refused before decoding. Rebuild the catalog.", field: "bins")
        }
        let manifest = try CatalogJSON.decode(SplitManifest.self, from: data, file: file, keysChecked: true)
        try manifest.validate()
        return manifest
    }

    /// The file's bytes: deterministic JSON with sorted keys and a trailing newline.
    public func encoded() throws(FormatError) -> Data {
        try validate()
        return try CatalogJSON.encode(self)
    }

    /// Checks the manifest's own fields; the tags named by the install and prefetch lists are
    /// checked against the bins when they are assembled.
    public func validate() throws(FormatError) {
        guard Self.isSplitFormatVersion(formatVersion) else {
            throw FormatError(.unsupportedFormatVersion, "A split manifest has format version \(Self.formatVersion) or \(Self.chunkedFormatVersion); found \(formatVersion).", field: "formatVersion")
        }
        guard !catalogID.isEmpty else { throw FormatError(.invalidValue, "The manifest's catalog id is empty.", field: "catalogID") }
        guard version >= 1 else { throw FormatError(.invalidValue, "Version numbers start at 1; found \(version).", field: "version") }
        guard (1...Self.maximumBinCount).contains(bins.count), bins.count & (bins.count - 1) == 0 else {
            throw FormatError(.invalidValue, "A split manifest has a power of two from 1 to \(Self.maximumBinCount) bins; found \(bins.count).", field: "bins")
        }
        for (i, pin) in bins.enumerated() { try pin.validate(field: "bins[\(i)]") }
        for (key, list) in [("initialInstallTags", initialInstallTags), ("prefetchOrder", prefetchOrder)] {
            for (i, name) in list.enumerated() {
                if let problem = TagRecord.problem(inName: name) {
                    throw FormatError(.invalidValue, "The tag list has an invalid name: \(problem).", field: "\(key)[\(i)]")
                }
            }
        }
        guard totals.tags >= 0, totals.packs >= 0, totals.files >= 0, totals.archiveBytes >= 0, totals.installedBytes >= 0 else {
            throw FormatError(.invalidValue, "The manifest's totals must not be negative.", field: "totals")
        }
    }

    /// The bin a tag is placed in: the first 8 bytes of the SHA-256 of its name's UTF-8 bytes, read
    /// as a big-endian unsigned integer, modulo `binCount` (a power of two).
    public static func bin(ofTag name: String, binCount: Int) -> Int {
        let digest = SHA256.hash(data: Data(name.utf8))
        let prefix = digest.prefix(8).reduce(UInt64(0)) { $0 << 8 | UInt64($1) }
        return Int(prefix % UInt64(max(1, binCount)))
    }

    /// The bin count `odrpack` chooses for `tagCount` tags: the smallest power of two with at most
    /// ``tagsPerBin`` tags per bin on average (1 for up to 64 tags, 256 for 10,000).
    public static func binCount(forTagCount tagCount: Int) -> Int {
        var count = 1
        while count < maximumBinCount, count * tagsPerBin < tagCount { count *= 2 }
        return count
    }

    /// The pins of the bins that hold `tags`, each once, in bin order.
    public func bins(forTags tags: some Sequence<String>) -> [MetadataPin] {
        Set(tags.map { Self.bin(ofTag: $0, binCount: bins.count) }).sorted().map { bins[$0] }
    }
}

/// A version manifest as published in `versions/<n>.json`: the whole manifest (format 1, 2 or 4), or
/// a split one (format 3, or 5 with chunked files) whose tags, packs and files are in separate metadata files.
public enum PublishedManifest: Sendable {
    case full(VersionManifest)
    case split(SplitManifest)

    /// Decodes either kind: a manifest of format version 3 or 5 as a ``SplitManifest``, any other as a
    /// ``VersionManifest``.
    ///
    /// The text is scanned once first (``JSONKeyCheck``, which holds nothing of it): a manifest
    /// whose `formatVersion` is a split one is decoded only as a ``SplitManifest``, after its size
    /// and bin count are checked, and any other only as a ``VersionManifest``, so no text is
    /// decoded twice.
    ///
    /// - Throws: ``FormatError`` as ``VersionManifest/decode(from:)`` and ``SplitManifest/decode(from:)``.
    public static func decode(from data: Data) throws(FormatError) -> PublishedManifest {
        let shape = try JSONKeyCheck.check(data, file: "the version manifest")
        if let version = shape.integer("formatVersion"), SplitManifest.isSplitFormatVersion(version) {
            return .split(try SplitManifest.decode(from: data, shape: shape))
        }
        do {
            return .full(try VersionManifest.decode(from: data, keysChecked: true))
        } catch where error.code == .unsupportedFormatVersion {
            // A version spelled otherwise than as a plain integer (`3.0`) that the decoder reads as a split one.
            let original = error
            do {
                return .split(try SplitManifest.decode(from: data, shape: shape))
            } catch where error.code == .unsupportedFormatVersion {
                throw original
            }
        }
    }

    /// The catalog id and version number the manifest states.
    public var catalogID: String {
        switch self {
        case .full(let manifest): manifest.catalogID
        case .split(let manifest): manifest.catalogID
        }
    }

    /// The version number the manifest states.
    public var version: Int {
        switch self {
        case .full(let manifest): manifest.version
        case .split(let manifest): manifest.version
        }
    }
}
