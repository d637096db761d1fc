#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Splitting a ``VersionManifest`` into a ``SplitManifest``, its tag bins and file tables, and
/// assembling it back; the names and limits of the metadata files (`docs/FORMAT.md`, "Split metadata").
///
/// ```swift
/// let manifest = try SplitMetadata.assemble(split) { path in try Data(contentsOf: root.appending(path: path)) }
/// let needed = try SplitMetadata.files(forTags: ["level3"], of: split) { path in try fetch(path) }
/// ```
public enum SplitMetadata {
    /// The largest metadata file (bin or table) a reader accepts as served: 64 MiB.
    public static let maximumFileBytes: Int64 = 64 << 20
    /// The most bytes a metadata file may inflate to: 64 MiB. A table of 100,000 files inflates to
    /// about 10 MB; the inflated bytes are held while their records are decoded, so this bounds
    /// what one file can claim beside them.
    public static let maximumInflatedBytes = 64 << 20
    /// The most file records one request decodes from file tables: 262,144 (2^18). A decoded record
    /// takes about 230 bytes beside its path, so this holds them to about 60 MiB; a catalog of
    /// 100,000 files stays below it even when one request needs every file. Checked from the
    /// bins' file counts before any table is fetched (``checkRecordBudget(_:)``), and again by
    /// each table's count before its records are decoded.
    public static let maximumFileRecords = 1 << 18
    /// The most bytes of metadata files (as served) a client holds at once to describe tags: the
    /// bins and tables of one request, 64 MiB, checked from their pins before any is fetched. A
    /// catalog of 100,000 files has a few MB of them; sixteen tables of 48 MiB each, each within
    /// ``maximumFileBytes``, are not a catalog but an attempt to exhaust memory.
    public static let maximumHeldBytes: Int64 = 64 << 20

    /// Checks that metadata files with pins `pins` fit ``maximumHeldBytes`` together with `held`
    /// bytes already held.
    ///
    /// - Throws: ``FormatError`` `size-mismatch`, field `maximumHeldBytes`, naming the limit.
    public static func checkBudget(_ pins: some Sequence<MetadataPin>, holding held: Int64 = 0) throws(FormatError) {
        let total = ([held] + pins.map(\.size)).clampedSum()
        guard total <= maximumHeldBytes else {
            throw FormatError(.sizeMismatch, "The metadata files these tags need add up to \(total) bytes as served, over the \(maximumHeldBytes)-byte budget a client holds at once (SplitMetadata.maximumHeldBytes). Rebuild the catalog.", field: "maximumHeldBytes")
        }
    }

    /// Checks that tables listing `counts` files fit ``maximumFileRecords`` together.
    ///
    /// - Throws: ``FormatError`` `size-mismatch`, field `maximumFileRecords`, naming the limit.
    public static func checkRecordBudget(_ counts: some Sequence<Int>) throws(FormatError) {
        let total = counts.map { Int64(max(0, $0)) }.clampedSum()
        guard total <= maximumFileRecords else {
            throw FormatError(.sizeMismatch, "The file tables these tags need list \(total) files, over the \(maximumFileRecords) file records a client decodes for one request (SplitMetadata.maximumFileRecords). Ask for fewer tags at once, or rebuild the catalog.", field: "maximumFileRecords")
        }
    }

    /// The most a metadata file may grow when inflated (beyond the first 1 MiB): every file record
    /// holds 32 bytes of SHA-256 that deflate cannot shrink, so even 2 KiB paths stay far below it.
    public static let maximumInflationRatio = 128

    /// The folder of metadata files in a catalog.
    public static let folder = "meta"

    /// The path of a tag bin: `meta/<sha256>.tagbin`.
    public static func binPath(for pin: MetadataPin) -> String { "\(folder)/\(pin.sha256).tagbin" }
    /// The path of a file table: `meta/<sha256>.filetable`.
    public static func tablePath(for pin: MetadataPin) -> String { "\(folder)/\(pin.sha256).filetable" }

    /// A metadata file a split manifest needs: its path in the catalog and its pin.
    public struct File: Sendable, Hashable {
        public var path: String
        public var pin: MetadataPin
    }

    /// The pieces of a split manifest: bins by number, each table once, by pack id.
    public struct Parts: Sendable {
        public var manifest: SplitManifest
        public var bins: [TagBin]
        public var tables: [String: PackFileTable]
    }

    // MARK: Splitting

    /// Splits a valid manifest into the split manifest, its bins and its tables; `pin(of:)` gives
    /// each table's pin (the builder writes it, or reuses an unchanged one) and `binPin(of:)` each
    /// bin's. Tables are pinned before the bins that hold their pins.
    ///
    /// - Throws: ``FormatError`` from the manifest's validation, or what the closures throw.
    public static func split<Failure: Error>(
        _ manifest: VersionManifest, binCount: Int? = nil,
        tablePin: (PackFileTable) throws(Failure) -> MetadataPin, binPin: (TagBin) throws(Failure) -> MetadataPin
    ) throws(Failure) -> SplitManifest {
        let count = binCount ?? SplitManifest.binCount(forTagCount: manifest.tags.count)
        var filesByPack: [String: [FileRecord]] = [:]
        for file in manifest.files { filesByPack[file.pack, default: []].append(file) }
        var binPacks: [String: BinPack] = [:]
        for pack in manifest.packs {
            // By path: a pack holds one variant of a path at most, so paths are unique in a table.
            let table = PackFileTable(pack: pack.id, files: (filesByPack[pack.id] ?? []).sorted { $0.path < $1.path })
            binPacks[pack.id] = BinPack(pack: pack, table: try tablePin(table), fileCount: table.files.count)
        }
        var tagsByBin = [[TagRecord]](repeating: [], count: count)
        for tag in manifest.tags { tagsByBin[SplitManifest.bin(ofTag: tag.name, binCount: count)].append(tag) }
        var pins: [MetadataPin] = []
        for (index, tags) in tagsByBin.enumerated() {
            let sortedTags = tags.sorted { $0.name < $1.name }
            let ids = Set(sortedTags.flatMap(\.packs)).sorted()
            pins.append(try binPin(TagBin(index: index, binCount: count, tags: sortedTags, packs: ids.compactMap { binPacks[$0] })))
        }
        return SplitManifest(
            catalogID: manifest.catalogID, version: manifest.version, initialInstallTags: manifest.initialInstallTags,
            prefetchOrder: manifest.prefetchOrder, variantAxes: manifest.variantAxes, bins: pins,
            totals: .init(tags: manifest.tags.count, packs: manifest.packs.count, files: manifest.files.count,
                          archiveBytes: manifest.packs.lazy.map(\.archiveBytes).clampedSum(),
                          installedBytes: manifest.packs.lazy.map(\.installedBytes).clampedSum()),
            chunked: manifest.files.contains { !$0.chunks.isEmpty })
    }

    // MARK: Assembling

    /// Fetches and checks every bin and table of `manifest` and rebuilds the whole version manifest,
    /// validated as ``VersionManifest/decode(from:)`` validates one (format version 1, 2 with
    /// variants, or 4 with chunked files, which only a split manifest of format 5 may hold).
    ///
    /// - Parameter fetch: returns the bytes of a metadata file, given its path relative to the
    ///   catalog (`meta/<sha256>.tagbin`); each is checked against its pin before it is decoded.
    /// - Throws: ``FormatError`` from the bins, tables and validation, `invalid-value` when the
    ///   manifest's totals disagree with them, `duplicate` when two bins describe one pack
    ///   differently; whatever `fetch` throws.
    public static func assemble(_ manifest: SplitManifest, fetch: (String) throws -> Data) throws -> VersionManifest {
        try parts(of: manifest, fetch: fetch).assembled()
    }

    /// Fetches and checks every bin and table of `manifest`, as ``assemble(_:fetch:)`` does, and
    /// returns them, each table once.
    public static func parts(of manifest: SplitManifest, fetch: (String) throws -> Data) throws -> Parts {
        var bins: [TagBin] = []
        var tables: [String: PackFileTable] = [:]
        var packs: [String: BinPack] = [:]
        for (index, pin) in manifest.bins.enumerated() {
            let path = binPath(for: pin)
            let bin = try TagBin.decode(from: try fetch(path), pin: pin, index: index, binCount: manifest.bins.count, file: path)
            for entry in bin.packs {
                if let known = packs[entry.pack.id] {
                    guard known == entry else {
                        throw FormatError(.duplicate, "\(path) describes pack \(entry.pack.id) otherwise than another bin of the version does. Rebuild the catalog.", field: path)
                    }
                    continue
                }
                packs[entry.pack.id] = entry
                let tablePath = tablePath(for: entry.table)
                tables[entry.pack.id] = try PackFileTable.decode(from: try fetch(tablePath), pin: entry.table, expected: entry, file: tablePath)
            }
            bins.append(bin)
        }
        return Parts(manifest: manifest, bins: bins, tables: tables)
    }

    /// The metadata files a client needs to use `tags`: the bins that hold them, then the tables of
    /// every pack those tags reference (each once), with their pins. The bins are fetched (and
    /// checked) through `fetch` to read the tables' pins.
    ///
    /// - Throws: ``FormatError`` `dangling-reference` for a tag no bin holds; as ``TagBin/decode(from:pin:index:binCount:file:)``.
    public static func files(forTags tags: some Sequence<String>, of manifest: SplitManifest, fetch: (String) throws -> Data) throws -> [File] {
        let wanted = Set(tags)
        var files: [File] = []
        var seenTables = Set<String>()
        var found = Set<String>()
        let indices = Set(wanted.map { SplitManifest.bin(ofTag: $0, binCount: manifest.bins.count) }).sorted()
        var tableFiles: [File] = []
        for index in indices {
            let pin = manifest.bins[index], path = binPath(for: pin)
            files.append(File(path: path, pin: pin))
            let bin = try TagBin.decode(from: try fetch(path), pin: pin, index: index, binCount: manifest.bins.count, file: path)
            let packs = Dictionary(bin.packs.map { ($0.pack.id, $0) }, uniquingKeysWith: { first, _ in first })
            for tag in bin.tags where wanted.contains(tag.name) {
                found.insert(tag.name)
                for id in tag.packs where seenTables.insert(id).inserted {
                    if let entry = packs[id] { tableFiles.append(File(path: tablePath(for: entry.table), pin: entry.table)) }
                }
            }
        }
        if let missing = wanted.subtracting(found).sorted().first {
            throw FormatError(.danglingReference, "The version has no tag '\(missing)'.", field: "tags")
        }
        return files + tableFiles
    }

    /// A metadata file's bytes as served, from its compact bytes (``TagBin/compactBytes()``,
    /// ``PackFileTable/compactBytes()``): raw DEFLATE at level 9.
    public static func served(compact: Data) throws(FormatError) -> Data { try WholeDeflate.deflate(compact) }

    // MARK: Reading

    /// Checks a split manifest's format version against the tables read for it (`assembled`): 5
    /// when any of them holds chunked files, which a format 3 manifest may not; and, when they are
    /// all of the version's tables (`whole`), 3 when none does.
    ///
    /// - Throws: ``FormatError`` `invalid-value`, field `formatVersion`.
    static func checkFormatVersion(of manifest: SplitManifest, against assembled: VersionManifest, whole: Bool) throws(FormatError) {
        let chunked = assembled.files.contains { !$0.chunks.isEmpty }
        let declared = manifest.formatVersion == SplitManifest.chunkedFormatVersion
        guard chunked ? declared : !(whole && declared) else {
            throw FormatError(
                .invalidValue,
                "The split manifest has format version \(manifest.formatVersion), but its file tables \(chunked ? "hold" : "hold no") chunked files; a version with chunks has format \(SplitManifest.chunkedFormatVersion), one without \(SplitManifest.formatVersion). Rebuild the catalog.",
                field: "formatVersion")
        }
    }

    /// Inflates a metadata file as served, within the limits.
    static func inflate(_ data: Data, file: String) throws(FormatError) -> Data {
        guard Int64(data.count) <= maximumFileBytes else {
            throw FormatError(.sizeMismatch, "\(file) is \(data.count) bytes, over the \(maximumFileBytes)-byte limit for a metadata file. Rebuild the catalog.", field: file)
        }
        let (scaled, overflow) = data.count.multipliedReportingOverflow(by: maximumInflationRatio)
        let limit = min(maximumInflatedBytes, overflow ? Int.max : max(1 << 20, scaled))
        return try WholeDeflate.inflate(data, limit: limit, file: file)
    }

    /// Runs `body` over the compact bytes, requiring it to read them to the end; a damaged or
    /// crafted layout becomes `corrupt-data` naming `file`.
    static func readCompact<T>(_ data: Data, file: String, _ body: (inout CompactReader) throws(FormatError) -> T) throws(FormatError) -> T {
        let result = data.withUnsafeBytes { raw in
            Result { () throws(FormatError) -> T in
                var reader = CompactReader(bytes: raw)
                let value = try body(&reader)
                guard reader.offset == raw.count else { throw CompactReader.corrupt }
                return value
            }
        }
        do {
            return try result.get()
        } catch {
            guard error.code == .corruptData, error.field == nil else { throw error }
            throw FormatError(.corruptData, "\(file) is not a metadata file this library reads, or is damaged (a number or length runs past its end, or too far). Fetch it again; if it persists, rebuild the catalog.", field: file)
        }
    }
}

extension SplitMetadata.Parts {
    /// Every metadata file of the version: its bins, then each table once, with their pins.
    public var files: [SplitMetadata.File] {
        var files = manifest.bins.map { SplitMetadata.File(path: SplitMetadata.binPath(for: $0), pin: $0) }
        var seen = Set<String>()
        for bin in bins {
            for entry in bin.packs where seen.insert(entry.pack.id).inserted {
                files.append(SplitMetadata.File(path: SplitMetadata.tablePath(for: entry.table), pin: entry.table))
            }
        }
        return files
    }

    /// The whole version manifest these parts describe, validated.
    ///
    /// - Throws: ``FormatError`` from validation; `invalid-value` when the totals disagree.
    public func assembled() throws(FormatError) -> VersionManifest {
        var packs: [PackRecord] = []
        var seen = Set<String>()
        for bin in bins {
            for entry in bin.packs where seen.insert(entry.pack.id).inserted { packs.append(entry.pack) }
        }
        packs.sort { $0.id < $1.id }
        let tags = bins.flatMap(\.tags).sorted { $0.name < $1.name }
        var files: [FileRecord] = []
        for pack in packs { files += tables[pack.id]?.files ?? [] }
        // By path, then variant: the order the builder writes.
        files.sort { (a: FileRecord, b: FileRecord) -> Bool in
            if a.path != b.path { return a.path < b.path }
            return a.variant.variantDescription < b.variant.variantDescription
        }
        let result = VersionManifest(
            catalogID: manifest.catalogID, version: manifest.version, tags: tags, initialInstallTags: manifest.initialInstallTags,
            prefetchOrder: manifest.prefetchOrder, packs: packs, files: files, variantAxes: manifest.variantAxes)
        try result.validate()
        try SplitMetadata.checkFormatVersion(of: manifest, against: result, whole: true)
        let totals = SplitManifest.Totals(
            tags: tags.count, packs: packs.count, files: files.count, archiveBytes: packs.lazy.map(\.archiveBytes).clampedSum(),
            installedBytes: packs.lazy.map(\.installedBytes).clampedSum())
        guard totals == manifest.totals else {
            throw FormatError(.invalidValue, "The manifest's totals (\(manifest.totals)) disagree with its bins and tables (\(totals)). Rebuild the catalog.", field: "totals")
        }
        return result
    }
}
