#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The part of a split version a client uses: what it reads of a version it never needs whole.
///
/// A client that installs one tag of a catalog of 10,000 needs that tag's bin and the tables of
/// the tag's packs, not the other bins and tables. ``SplitMetadata/scoped(_:tags:keepingOrderOf:fetch:)``
/// assembles a ``VersionManifest`` of just those tags: their records, every pack they reference
/// (its tag set cut to the tags in scope) and those packs' files. Every tag it lists has all its
/// packs and files, so lookups, variant choice and ledgers work on it as on a whole manifest.
public struct MetadataScope: Sendable {
    /// The version manifest of the tags in scope, validated as a whole manifest is.
    public var manifest: VersionManifest
    /// The bins and tables it was assembled from, with their pins (of what was carried from an
    /// earlier version's part, the bins only).
    public var files: [SplitMetadata.File]
    /// Tags asked for that the version does not define (their bins do not hold them), sorted.
    public var unknownTags: [String]
    /// The packs taken as they were from an earlier version's part (``SplitMetadata/scoped(_:tags:keepingOrderOf:carrying:fetch:)``):
    /// their records and files are the ones that part lists.
    public var carriedPacks: Set<String> = []
}

extension SplitMetadata {
    /// The bins that hold `tags`, in bin order, each once.
    public static func binFiles(forTags tags: some Sequence<String>, of manifest: SplitManifest) -> [File] {
        binIndices(forTags: tags, of: manifest).map { File(path: binPath(for: manifest.bins[$0]), pin: manifest.bins[$0]) }
    }

    private static func binIndices(forTags tags: some Sequence<String>, of manifest: SplitManifest) -> [Int] {
        guard !manifest.bins.isEmpty else { return [] }
        return Set(tags.map { SplitManifest.bin(ofTag: $0, binCount: manifest.bins.count) }).sorted()
    }

    /// The tables of every pack that `tags` reference, each once, read from their bins (fetched
    /// through `fetch`, each checked against its pin); tags no bin holds are skipped.
    ///
    /// - Throws: as ``TagBin/decode(from:pin:index:binCount:file:)``; `size-mismatch` (field
    ///   `maximumFileRecords`) when the bins say the tables list more files together than
    ///   ``maximumFileRecords``, so nothing is fetched for them; whatever `fetch` throws.
    public static func tableFiles(forTags tags: some Sequence<String>, of manifest: SplitManifest,
                                  fetch: (String) throws -> Data) throws -> [File] {
        let wanted = Set(tags)
        let bins = try decodedBins(forTags: wanted, of: manifest, fetch: fetch)
        var files: [File] = []
        var counts: [Int] = []
        var seen = Set<String>()
        for tag in bins.tags.values.filter({ wanted.contains($0.name) }).sorted(by: { $0.name < $1.name }) {
            for id in tag.packs where seen.insert(id).inserted {
                if let entry = bins.packs[id] {
                    files.append(File(path: tablePath(for: entry.table), pin: entry.table))
                    counts.append(entry.fileCount)
                }
            }
        }
        try checkRecordBudget(counts)
        return files
    }

    /// Assembles the part of `manifest` that `tags` use (see ``MetadataScope``).
    ///
    /// - Parameters:
    ///   - tags: the tags in scope; names the version does not define end up in
    ///     ``MetadataScope/unknownTags``.
    ///   - previous: an earlier scope of the same version: its tags and packs keep their positions
    ///     and the new ones follow, so indices into the earlier one stay valid in the new one.
    ///   - earlier: the split manifest of another version and the part of it a client holds: the
    ///     tags of every bin whose pin is the same in both are taken from that part, with their
    ///     packs and files, so an update reads only the bins and tables that changed.
    ///   - fetch: the bytes of a metadata file by its path in the catalog; each is checked against
    ///     its pin before it is decoded.
    /// - Throws: ``FormatError`` from the bins, the tables and the manifest's validation;
    ///   `duplicate` when two bins describe one pack differently; `dangling-reference` when a tag
    ///   references a pack its bin does not describe; whatever `fetch` throws.
    public static func scoped(_ manifest: SplitManifest, tags: some Sequence<String>, keepingOrderOf previous: VersionManifest? = nil,
                              carrying earlier: (manifest: SplitManifest, part: VersionManifest)? = nil,
                              fetch: (String) throws -> Data) throws -> MetadataScope {
        var wanted: [String] = []
        var seenNames = Set<String>()
        for name in (previous?.tags.map(\.name) ?? []) + Array(tags) where seenNames.insert(name).inserted { wanted.append(name) }
        // A bin whose pin did not change since `earlier` pins the same tags, packs and tables: what
        // the earlier part holds of it is taken as it is, without reading the bin or its tables.
        let earlierTags = carriedTags(of: manifest, from: earlier)
        let bins = try decodedBins(forTags: wanted.filter { earlierTags[$0] == nil }, of: manifest, fetch: fetch)
        var tagRecords: [TagRecord] = []
        var unknown: [String] = []
        var carried = Set<String>()
        for name in wanted {
            if let tag = bins.tags[name] {
                tagRecords.append(tag)
            } else if let tag = earlierTags[name] {
                tagRecords.append(tag)
                carried.insert(name)
            } else {
                unknown.append(name)
            }
        }
        let inScope = Set(tagRecords.map(\.name))
        var packIDs: [String] = []
        var seenPacks = Set<String>()
        for id in previous?.packs.map(\.id) ?? [] where seenPacks.insert(id).inserted { packIDs.append(id) }
        for tag in tagRecords {
            for id in tag.packs where seenPacks.insert(id).inserted { packIDs.append(id) }
        }
        // The packs' tag sets, cut to the tags in scope: a carried pack's record was cut to the
        // earlier scope, so its tags are rebuilt from the tags that list it.
        var tagsOfPack: [String: [String]] = [:]
        for tag in tagRecords {
            for id in tag.packs { tagsOfPack[id, default: []].append(tag.name) }
        }
        var earlierPacks: [String: PackRecord] = [:]
        var earlierFiles: [String: [FileRecord]] = [:]
        if let earlier, !carried.isEmpty {
            let wantedCarried = Set(tagRecords.filter { carried.contains($0.name) }.flatMap(\.packs))
            for pack in earlier.part.packs where wantedCarried.contains(pack.id) { earlierPacks[pack.id] = pack }
            for file in earlier.part.files where earlierPacks[file.pack] != nil { earlierFiles[file.pack, default: []].append(file) }
        }
        var packs: [PackRecord] = []
        var files: [FileRecord] = []
        var carriedPacks = Set<String>()
        var used = bins.files
        // A carried tag's bin is the same file in both versions; the tables of carried packs are
        // named by the earlier version's bins, which this version does not read.
        let usedBins = Set(used.map(\.path))
        for index in binIndices(forTags: carried, of: manifest) {
            let file = File(path: binPath(for: manifest.bins[index]), pin: manifest.bins[index])
            if !usedBins.contains(file.path) { used.append(file) }
        }
        let decodedIDs = Set(tagRecords.filter { !carried.contains($0.name) }.flatMap(\.packs))
        // The tables to decode, by their bins' counts, before any is read.
        try checkRecordBudget(packIDs.filter(decodedIDs.contains).compactMap { bins.packs[$0]?.fileCount })
        for id in packIDs {
            if decodedIDs.contains(id), let entry = bins.packs[id] {
                var pack = entry.pack
                pack.tags = pack.tags.filter(inScope.contains)
                packs.append(pack)
                let path = tablePath(for: entry.table)
                let table = try PackFileTable.decode(from: try fetch(path), pin: entry.table, expected: entry, file: path)
                files += table.files
                used.append(File(path: path, pin: entry.table))
            } else if var pack = earlierPacks[id] {
                pack.tags = (tagsOfPack[id] ?? []).sorted()
                packs.append(pack)
                carriedPacks.insert(id)
                files += earlierFiles[id] ?? []
            } else {
                throw FormatError(.danglingReference, "A tag references pack \(id), which its bin does not describe. Rebuild the catalog.", field: "packs")
            }
        }
        // By path, then variant: the order the builder writes, which lookups by path rely on.
        files.sort { (a: FileRecord, b: FileRecord) -> Bool in
            if a.path != b.path { return a.path < b.path }
            return a.variant.variantDescription < b.variant.variantDescription
        }
        let scoped = VersionManifest(
            catalogID: manifest.catalogID, version: manifest.version, tags: tagRecords,
            initialInstallTags: manifest.initialInstallTags.filter(inScope.contains),
            prefetchOrder: manifest.prefetchOrder.filter(inScope.contains), packs: packs, files: files, variantAxes: manifest.variantAxes)
        try scoped.validate()
        try checkFormatVersion(of: manifest, against: scoped, whole: false)
        return MetadataScope(manifest: scoped, files: used, unknownTags: unknown.sorted(), carriedPacks: carriedPacks)
    }

    /// The tags `earlier`'s part holds whose bin has the same pin in `manifest`: taken from that
    /// part, they need no metadata file read (see ``scoped(_:tags:keepingOrderOf:carrying:fetch:)``).
    public static func carriedTags(of manifest: SplitManifest, from earlier: (manifest: SplitManifest, part: VersionManifest)?) -> [String: TagRecord] {
        guard let earlier, earlier.manifest.bins.count == manifest.bins.count, !manifest.bins.isEmpty else { return [:] }
        var tags: [String: TagRecord] = [:]
        for tag in earlier.part.tags {
            let bin = SplitManifest.bin(ofTag: tag.name, binCount: manifest.bins.count)
            if earlier.manifest.bins[bin] == manifest.bins[bin] { tags[tag.name] = tag }
        }
        return tags
    }

    /// The tags and packs of the bins that hold `tags`, each bin checked against its pin.
    private static func decodedBins(forTags tags: some Sequence<String>, of manifest: SplitManifest,
                                    fetch: (String) throws -> Data) throws -> (tags: [String: TagRecord], packs: [String: BinPack], files: [File]) {
        var tagsByName: [String: TagRecord] = [:]
        var packs: [String: BinPack] = [:]
        var files: [File] = []
        for index in binIndices(forTags: tags, of: manifest) {
            let file = File(path: binPath(for: manifest.bins[index]), pin: manifest.bins[index])
            files.append(file)
            let bin = try TagBin.decode(from: try fetch(file.path), pin: file.pin, index: index, binCount: manifest.bins.count, file: file.path)
            for tag in bin.tags { tagsByName[tag.name] = tag }
            for entry in bin.packs {
                if let known = packs[entry.pack.id] {
                    guard known == entry else {
                        throw FormatError(.duplicate, "\(file.path) describes pack \(entry.pack.id) otherwise than another bin of the version does. Rebuild the catalog.", field: file.path)
                    }
                    continue
                }
                packs[entry.pack.id] = entry
            }
        }
        return (tagsByName, packs, files)
    }
}
