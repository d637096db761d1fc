import Foundation
import ODRFormat

/// Writes planned packs into a catalog's `packs/` folder, reusing archives that earlier versions
/// already published.
///
/// Because packs are deterministic, a planned pack with the same tag set and the same entries (names
/// and SHA-256) as a pack of an earlier version has the same bytes; that archive is kept as it is and
/// nothing is compressed. A new archive is written to a hidden temporary file and renamed to
/// `packs/<sha256>.zip`; if that name already exists it holds the same bytes, so the temporary file
/// is dropped and the published one is never rewritten.
public struct PackArchiver: Sendable {
    /// The catalog written into.
    public var catalog: CatalogDirectory
    /// Archive settings.
    public var options: PackWriter.Options
    /// Packs of earlier versions, keyed by their content signature: several when versions cut the
    /// same files with other chunk sizes.
    var reusable: [String: [WrittenPackSource]] = [:]
    /// Chunk tables an earlier build computed with the same ``PackWriter/Options/chunkSizes``,
    /// by content SHA-256 (from the build cache): an unchanged large file is not chunked again.
    public var knownChunkTables: [String: [FileChunk]] = [:]

    struct WrittenPackSource: Sendable {
        var record: PackRecord
        var entries: [String: FileRecord]
    }

    /// Creates an archiver for `catalog`.
    public init(catalog: CatalogDirectory, options: PackWriter.Options = .init()) {
        self.catalog = catalog
        self.options = options
    }

    /// Offers the packs of an earlier version for reuse; only archives present on disk with the
    /// recorded size are used.
    public mutating func offerReuse(of manifest: VersionManifest) {
        var entriesByPack: [String: [String: FileRecord]] = [:]
        for file in manifest.files { entriesByPack[file.pack, default: [:]][file.entry] = file }
        for pack in manifest.packs {
            let entries = entriesByPack[pack.id] ?? [:]
            let signature = Self.signature(
                tags: pack.tags, variant: pack.variant, entries: entries.values.map { ($0.entry, $0.sha256, !$0.chunks.isEmpty) })
            guard reusable[signature]?.contains(where: { $0.record.id == pack.id }) != true else { continue }
            let attributes = try? FileManager.default.attributesOfItem(atPath: catalog.packURL(id: pack.id).path)
            guard let size = attributes?[.size] as? NSNumber, size.int64Value == pack.archiveBytes else { continue }
            reusable[signature, default: []].append(WrittenPackSource(record: pack, entries: entries))
        }
    }

    /// A key that equal packs share: tag set, variant, and sorted (entry name, SHA-256, chunked)
    /// triples. An entry chunked in one and not the other has other bytes (the flushes), so the
    /// packs differ: a catalog built again with another `limits.chunkThreshold` rewrites them.
    static func signature(tags: [String], variant: Variant, entries: [(String, String, Bool)]) -> String {
        var text = tags.sorted().joined(separator: ",") + "\n"
        if !variant.isEmpty { text += "variant \(variant.variantDescription)\n" }
        for (name, sha, chunked) in entries.sorted(by: { $0.0 < $1.0 }) { text += "\(sha) \(name)\(chunked ? " chunked" : "")\n" }
        return ContentHash.sha256Hex(of: Data(text.utf8))
    }

    /// Whether an entry of `size` bytes is chunked under ``options``.
    func isChunked(_ size: Int64) -> Bool { options.chunkThreshold > 0 && size >= options.chunkThreshold }

    /// Writes (or reuses) one pack.
    ///
    /// - Parameter progress: called with the uncompressed bytes of each entry once it is written.
    public func write(_ pack: PackPlan.Pack, progress: (Int64) -> Void = { _ in }) throws(BuildError) -> WrittenPack {
        let signature = Self.signature(tags: pack.tags, variant: pack.variant, entries: pack.entries.map { ($0.name, $0.sha256, isChunked($0.size)) })
        if let source = try reusableSource(for: pack.entries, among: reusable[signature] ?? []) {
            var files: [FileRecord] = []
            for entry in pack.entries {
                guard let record = source.entries[entry.name] else { continue }
                for path in entry.paths {
                    var file = record
                    file.path = path
                    files.append(file)
                }
                progress(entry.size)
            }
            return WrittenPack(plan: pack, record: source.record, files: files, reused: true)
        }

        let temporary = catalog.temporaryURL(in: "packs", suffix: ".zip")
        let summary: PackSummary
        do {
            let writer = try PackWriter(creating: temporary, options: options)
            for entry in pack.entries {
                let written = try writer.addEntry(
                    named: entry.name, contentsOf: entry.source, knownChunks: knownChunkTables[entry.sha256], method: entry.method)
                guard written.sha256 == entry.sha256 else {
                    throw BuildError(
                        .assetsUnreadable, "the file changed while it was being packed; build again once it is stable",
                        file: entry.source.path)
                }
                progress(entry.size)
            }
            summary = try writer.finish()
        } catch let error as BuildError {
            try? FileManager.default.removeItem(at: temporary)
            throw error
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw BuildError(.catalogIO, "cannot write a pack for tags [\(pack.tags.joined(separator: ", "))]", file: temporary.path, cause: error)
        }

        // Same name, same bytes: an archive already published under this hash stays untouched.
        _ = try catalog.publish(temporary, to: catalog.packURL(id: summary.sha256))

        let byName = Dictionary(uniqueKeysWithValues: summary.entries.map { ($0.name, $0) })
        var files: [FileRecord] = []
        for entry in pack.entries {
            guard let written = byName[entry.name] else { continue }
            for path in entry.paths {
                files.append(FileRecord(
                    path: path, pack: summary.sha256, entry: written.name, sha256: written.sha256,
                    storedSize: written.storedSize, size: written.size, headerOffset: written.headerOffset,
                    method: written.method, variant: pack.variant, chunks: written.chunks))
            }
        }
        let record = PackRecord(
            id: summary.sha256, tags: pack.tags, archiveBytes: summary.archiveBytes,
            installedBytes: summary.installedBytes, entryCount: summary.entries.count, variant: pack.variant)
        return WrittenPack(plan: pack, record: record, files: files, reused: false)
    }
}
