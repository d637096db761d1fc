import Foundation
import ODRFormat

/// Writes a version's split metadata (`odrpack build`'s default; `--split-metadata`): a file table per pack and
/// a tag bin per bin number into `meta/`, and returns the split manifest that pins them.
///
/// A bin or table whose content equals one of an earlier version keeps that version's file: the
/// writer compares the compact bytes (before compression), so an unchanged table keeps its name
/// even if another zlib would compress it differently, and is neither compressed nor written again.
struct SplitMetadataWriter {
    let catalog: CatalogDirectory
    /// Pins of earlier metadata files, by the SHA-256 of their compact bytes.
    private var earlier: [String: MetadataPin] = [:]
    /// Files written by this build, and files reused from earlier versions.
    private(set) var written = 0, reused = 0

    init(catalog: CatalogDirectory) {
        self.catalog = catalog
    }

    /// Offers an earlier split version's bins and tables for reuse.
    mutating func offerReuse(of parts: SplitMetadata.Parts) {
        for (index, bin) in parts.bins.enumerated() {
            if let bytes = try? bin.compactBytes() { earlier[ContentHash.sha256Hex(of: bytes)] = parts.manifest.bins[index] }
        }
        for bin in parts.bins {
            for entry in bin.packs {
                if let table = parts.tables[entry.pack.id], let bytes = try? table.compactBytes() {
                    earlier[ContentHash.sha256Hex(of: bytes)] = entry.table
                }
            }
        }
    }

    /// Writes `manifest` split, and returns the bytes of its `versions/<n>.json`.
    mutating func write(_ manifest: VersionManifest) throws(BuildError) -> Data {
        pending = []
        defer { pending = [] }
        let top = try split(manifest)
        let new = try catalog.writeImmutableFiles(pending)
        written += new
        reused += pending.count - new
        return top
    }

    /// Files to write, collected while splitting and written together.
    private var pending: [(path: String, data: Data)] = []

    private mutating func split(_ manifest: VersionManifest) throws(BuildError) -> Data {
        do {
            let split = try SplitMetadata.split(
                manifest,
                tablePin: { (table: PackFileTable) throws(BuildError) -> MetadataPin in
                    try place(try Self.bytes { () throws(FormatError) in try table.compactBytes() }, path: SplitMetadata.tablePath(for:))
                },
                binPin: { (bin: TagBin) throws(BuildError) -> MetadataPin in
                    try place(try Self.bytes { () throws(FormatError) in try bin.compactBytes() }, path: SplitMetadata.binPath(for:))
                })
            return try split.encoded()
        } catch let error as BuildError {
            throw error
        } catch {
            throw BuildError(.catalogMalformed, "the new split manifest is invalid (a bug in odrpack): \(error)", cause: error)
        }
    }

    private static func bytes(_ body: () throws(FormatError) -> Data) throws(BuildError) -> Data {
        do {
            return try body()
        } catch {
            throw BuildError(.catalogMalformed, "the new manifest cannot be split (a bug in odrpack): \(error.message)", cause: error)
        }
    }

    /// The pin of the metadata file with these compact bytes: an earlier one when its file is still
    /// there with its size, otherwise the compressed bytes, written once.
    private mutating func place(_ compact: Data, path: (MetadataPin) -> String) throws(BuildError) -> MetadataPin {
        let key = ContentHash.sha256Hex(of: compact)
        if let pin = earlier[key],
           let size = (try? FileManager.default.attributesOfItem(atPath: catalog.url(of: path(pin)).path))?[.size] as? NSNumber,
           size.int64Value == pin.size {
            reused += 1
            return pin
        }
        let served: Data
        do {
            served = try SplitMetadata.served(compact: compact)
        } catch {
            throw BuildError(.catalogIO, "cannot compress a metadata file: \(error.message)", cause: error)
        }
        let pin = MetadataPin(of: served)
        pending.append((path(pin), served))
        earlier[key] = pin
        return pin
    }
}
