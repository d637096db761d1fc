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
    /// The bins and tables it was assembled from, with their pins.
    public var files: [SplitMetadata.File]
    /// Tags asked for that the version does not define (their bins do not hold them), sorted.
    public var unknownTags: [String]
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
    /// - Throws: as ``TagBin/decode(from:pin:index:binCount:file:)``; whatever `fetch` throws.
    public static func tableFiles(forTags tags: some Sequence<String>, of manifest: SplitManifest,
                                  fetch: (String) throws -> Data) throws -> [File] {
        let wanted = Set(tags)
        let bins = try decodedBins(forTags: wanted, of: manifest, fetch: fetch)
        var files: [File] = []
        var seen = Set<String>()
        for tag in bins.tags.values.filter({ wanted.contains($0.name) }).sorted(by: { $0.name < $1.name }) {
            for id in tag.packs where seen.insert(id).inserted {
                if let entry = bins.packs[id] { files.append(File(path: tablePath(for: entry.table), pin: entry.table)) }
            }
        }
        return files
    }

    /// Assembles the part of `manifest` that `tags` use (see ``MetadataScope``).
    ///
    /// - Parameters:
    ///   - tags: the tags in scope; names the version does not define end up in
    ///     ``MetadataScope/unknownTags``.
    ///   - previous: an earlier scope of the same version: its tags and packs keep their positions
    ///     and the new ones follow, so indices into the earlier one stay valid in the new one.
    ///   - fetch: the bytes of a metadata file by its path in the catalog; each is checked against
    ///     its pin before it is decoded.
    /// - Throws: ``FormatError`` from the bins, the tables and the manifest's validation;
    ///   `duplicate` when two bins describe one pack differently; `dangling-reference` when a tag
    ///   references a pack its bin does not describe; whatever `fetch` throws.
    public static func scoped(_ manifest: SplitManifest, tags: some Sequence<String>, keepingOrderOf previous: VersionManifest? = nil,
                              fetch: (String) throws -> Data) throws -> MetadataScope {
        var wanted: [String] = []
        var seenNames = Set<String>()
        for name in (previous?.tags.map(\.name) ?? []) + Array(tags) where seenNames.insert(name).inserted { wanted.append(name) }
        let bins = try decodedBins(forTags: wanted, of: manifest, fetch: fetch)
        var tagRecords: [TagRecord] = []
        var unknown: [String] = []
        for name in wanted {
            if let tag = bins.tags[name] { tagRecords.append(tag) } else { unknown.append(name) }
        }
        let inScope = Set(tagRecords.map(\.name))
        var packIDs: [String] = []
        var seenPacks = Set<String>()
        for id in previous?.packs.map(\.id) ?? [] where seenPacks.insert(id).inserted { packIDs.append(id) }
        for tag in tagRecords {
            for id in tag.packs where seenPacks.insert(id).inserted { packIDs.append(id) }
        }
        var packs: [PackRecord] = []
        var files: [FileRecord] = []
        var used = bins.files
        for id in packIDs {
            guard let entry = bins.packs[id] else {
                throw FormatError(.danglingReference, "A tag references pack \(id), which its bin does not describe. Rebuild the catalog.", field: "packs")
            }
            var pack = entry.pack
            pack.tags = pack.tags.filter(inScope.contains)
            packs.append(pack)
            let path = tablePath(for: entry.table)
            let table = try PackFileTable.decode(from: try fetch(path), pin: entry.table, expected: entry, file: path)
            files += table.files
            used.append(File(path: path, pin: entry.table))
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
        return MetadataScope(manifest: scoped, files: used, unknownTags: unknown.sorted())
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
