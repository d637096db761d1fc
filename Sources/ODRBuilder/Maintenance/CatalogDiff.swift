import Foundation
import ODRFormat

/// What changed between two versions of a catalog, and what a client on the first pays to reach the second.
public struct CatalogDiff: Codable, Sendable, Equatable {
    /// A tag present in both versions whose packs or priority changed.
    public struct ChangedTag: Codable, Sendable, Equatable {
        /// The tag.
        public var name: String
        /// Bytes a client holding the tag's packs of the first version downloads to hold them in the
        /// second: only the entries of new packs whose content it does not hold.
        public var downloadBytes: Int64
        /// Whether its preservation priority changed.
        public var priorityChanged: Bool
    }

    /// A changed file of `to` that is chunked: what reaching it costs chunk by chunk.
    public struct ChunkedFile: Codable, Sendable, Equatable {
        /// The path (variants as in ``CatalogDiff/changedFiles``).
        public var path: String
        /// Its chunks in `to`.
        public var chunks: Int
        /// Those whose content no file of `from` holds.
        public var changedChunks: Int
        /// Their stored bytes: what a client holding `from` fetches for the file.
        public var bytesToMove: Int64
    }

    /// The version compared from.
    public var from: Int
    /// The version compared to.
    public var to: Int
    /// Tags only in `to`.
    public var addedTags: [String]
    /// Tags only in `from`.
    public var removedTags: [String]
    /// Tags in both whose packs or priority differ.
    public var changedTags: [ChangedTag]
    /// Pack ids only in `to`.
    public var addedPacks: [String]
    /// Pack ids only in `from`.
    public var removedPacks: [String]
    /// Packs in both (unchanged bytes; clients keep them).
    public var keptPacks: Int
    /// Paths only in `to`. A variant is listed as `path [axis=value,...]`, each variant on its own.
    public var addedFiles: [String]
    /// Paths only in `from` (variants as in ``addedFiles``).
    public var removedFiles: [String]
    /// Paths in both whose content changed (variants as in ``addedFiles``).
    public var changedFiles: [String]
    /// Bytes a client holding every pack of `from` downloads to hold every pack of `to`: the entries
    /// of new packs whose content it does not hold, as byte ranges; of a chunked entry some of whose
    /// chunks it holds, only the other chunks (as ``chunkedFiles`` counts them).
    public var downloadBytes: Int64
    /// The archive bytes of the new packs: what downloading them whole would cost.
    public var archiveBytes: Int64
    /// The changed or added files of `to` that are chunked, by path; `nil` when there are none.
    public var chunkedFiles: [ChunkedFile]?
    /// How the `base` tag changed; `nil` when `to` has none.
    public var baseGrowth: BaseGrowth?
    /// Warnings: `baseGrew` when `base` grew by more than the threshold.
    public var warnings: [BuildWarning]

    /// Compares two manifests; `baseGrowthWarning` is the growth of `base` above which a
    /// `baseGrew` warning is added (0: never; the rules' `limits.baseGrowthWarning`, 1 MiB by default).
    public init(from old: VersionManifest, to new: VersionManifest, baseGrowthWarning: Int64 = TagRules.Limits().baseGrowthWarning) {
        baseGrowth = BaseGrowth(from: old, to: new)
        warnings = [baseGrowth?.warning(threshold: baseGrowthWarning)].compactMap { $0 }
        from = old.version
        to = new.version
        let oldTags = Dictionary(uniqueKeysWithValues: old.tags.map { ($0.name, $0) })
        let newTags = Dictionary(uniqueKeysWithValues: new.tags.map { ($0.name, $0) })
        addedTags = newTags.keys.filter { oldTags[$0] == nil }.sorted()
        removedTags = oldTags.keys.filter { newTags[$0] == nil }.sorted()
        let oldPacks = Set(old.packs.map(\.id))
        let newPackRecords = Dictionary(uniqueKeysWithValues: new.packs.map { ($0.id, $0) })
        // Clients install entry by entry: of a new pack they fetch only the entries whose content
        // they do not hold, as byte ranges (the runtime's plan, with its default policy).
        let newIndex = ManifestIndex(new)
        let oldIndex = ManifestIndex(old)
        // A chunked entry of which a client holds some chunks moves only the others (the runtime
        // assembles it from what it holds), not the whole entry the pack's plan counts; one of which
        // it holds none downloads whole, as the plan says.
        func fetchBytes(_ packs: some Sequence<String>, holding held: Set<String>, chunks heldChunks: Set<String>) -> Int64 {
            var bytes: Int64 = 0, saved: Int64 = 0
            var seenEntries = Set<String>()
            for id in packs {
                guard let pack = newPackRecords[id] else { continue }
                bytes = bytes.clampedAdding(PackFetchPlan.make(entries: newIndex.expectedEntries(inPack: id), archiveBytes: pack.archiveBytes,
                                                               held: held).fetchBytes)
                for file in newIndex.files(inPack: id) where !file.chunks.isEmpty && !held.contains(file.sha256)
                    && seenEntries.insert(id + "/" + file.entry).inserted {
                    let moved = ChunkSummary.toMove(file, holding: heldChunks)
                    if moved.chunks < file.chunks.count { saved = saved.clampedAdding(max(0, file.storedSize - moved.bytes)) }
                }
            }
            return max(0, bytes - saved)
        }
        func contents(ofPacks packs: some Sequence<String>) -> Set<String> {
            Set(packs.flatMap { oldIndex.expectedEntries(inPack: $0).map(\.sha256) })
        }
        func chunks(ofPacks packs: some Sequence<String>) -> Set<String> {
            Set(packs.flatMap { oldIndex.files(inPack: $0).flatMap(\.chunks).map(\.sha256) })
        }
        changedTags = newTags.keys.sorted().compactMap { name in
            guard let before = oldTags[name], let after = newTags[name],
                  before.packs != after.packs || before.preservationPriority != after.preservationPriority
            else { return nil }
            let held = Set(before.packs)
            let download = fetchBytes(after.packs.filter { !held.contains($0) }, holding: contents(ofPacks: before.packs),
                                      chunks: chunks(ofPacks: before.packs))
            return ChangedTag(
                name: name, downloadBytes: download, priorityChanged: before.preservationPriority != after.preservationPriority)
        }
        addedPacks = new.packs.map(\.id).filter { !oldPacks.contains($0) }
        removedPacks = old.packs.map(\.id).filter { newPackRecords[$0] == nil }
        keptPacks = new.packs.count - addedPacks.count
        // Variants share a logical path: each variant is a file of its own here.
        func label(_ file: FileRecord) -> String {
            file.variant.isEmpty ? file.path : "\(file.path) [\(file.variant.variantDescription)]"
        }
        let oldFiles = Dictionary(old.files.map { (label($0), $0.sha256) }, uniquingKeysWith: { first, _ in first })
        let newFiles = Dictionary(new.files.map { (label($0), $0.sha256) }, uniquingKeysWith: { first, _ in first })
        addedFiles = newFiles.keys.filter { oldFiles[$0] == nil }.sorted()
        removedFiles = oldFiles.keys.filter { newFiles[$0] == nil }.sorted()
        changedFiles = newFiles.keys.filter { oldFiles[$0] != nil && oldFiles[$0] != newFiles[$0] }.sorted()
        let held = ChunkSummary.heldChunks(in: old)
        downloadBytes = fetchBytes(addedPacks, holding: Set(old.files.map(\.sha256)), chunks: held)
        archiveBytes = addedPacks.lazy.map { newPackRecords[$0]?.archiveBytes ?? 0 }.clampedSum()
        let touched = Set(changedFiles + addedFiles)
        let chunked = new.files.filter { !$0.chunks.isEmpty && touched.contains(label($0)) }.map { file in
            let moved = ChunkSummary.toMove(file, holding: held)
            return ChunkedFile(path: label(file), chunks: file.chunks.count, changedChunks: moved.chunks, bytesToMove: moved.bytes)
        }
        chunkedFiles = chunked.isEmpty ? nil : chunked.sorted { $0.path < $1.path }
    }

    /// Reads versions `from` and `to` of a catalog and compares them.
    public init(catalog: CatalogDirectory, from: Int, to: Int, baseGrowthWarning: Int64 = TagRules.Limits().baseGrowthWarning) throws(BuildError) {
        let index = try catalog.loadIndex()
        self.init(
            from: try catalog.loadManifest(version: from, in: index), to: try catalog.loadManifest(version: to, in: index),
            baseGrowthWarning: baseGrowthWarning)
    }

    /// The comparison as text.
    public func rendered() -> String {
        var lines = ["version \(from) -> \(to): a client holding all of \(from) downloads \(ByteCount.format(downloadBytes))"
                     + (downloadBytes < archiveBytes ? " of the new packs' \(ByteCount.format(archiveBytes)) (only the changed files)" : "")]
        func section(_ title: String, _ items: [String]) {
            guard !items.isEmpty else { return }
            lines.append("\(title) (\(items.count)):")
            lines += items.prefix(50).map { "  \($0)" }
            if items.count > 50 { lines.append("  ... \(items.count - 50) more") }
        }
        section("tags added", addedTags)
        section("tags removed", removedTags)
        section("tags changed", changedTags.map {
            "\($0.name): \(ByteCount.format($0.downloadBytes)) to download" + ($0.priorityChanged ? ", priority changed" : "")
        })
        section("packs added", addedPacks)
        section("packs removed", removedPacks)
        lines.append("packs kept: \(keptPacks)")
        section("files added", addedFiles)
        section("files removed", removedFiles)
        section("files changed", changedFiles)
        section("chunked files changed", (chunkedFiles ?? []).map {
            "\($0.path): \($0.changedChunks) of \($0.chunks) chunks changed, \(ByteCount.format($0.bytesToMove)) to move"
        })
        section("warnings", warnings.map(\.description))
        return lines.joined(separator: "\n") + "\n"
    }
}
