import Foundation
import ODRFormat

/// Checks a catalog on disk: the index, every listed manifest, every pack's bytes and every entry.
///
/// It stops at the first problem with a `BuildError` that names the file and what is wrong, so CI
/// can fail a publish before a client ever sees a broken catalog.
///
/// ```swift
/// let summary = try CatalogVerifier(catalog: CatalogDirectory(root: url)).verify()
/// print("\(summary.packs) packs, \(summary.entries) entries OK")
/// ```
public struct CatalogVerifier: Sendable {
    /// The catalog to check.
    public var catalog: CatalogDirectory

    /// Creates a verifier.
    public init(catalog: CatalogDirectory) {
        self.catalog = catalog
    }

    /// What a successful verification covered.
    public struct Summary: Codable, Sendable, Equatable {
        /// Versions checked.
        public var versions: Int
        /// Distinct packs whose bytes were hashed.
        public var packs: Int
        /// Entries whose content was inflated and hashed.
        public var entries: Int
        /// File records checked.
        public var files: Int
        /// Archive bytes read.
        public var bytes: Int64
        /// Split metadata files (tag bins and file tables) checked against their pins.
        public var metadataFiles = 0
        /// Files in `meta/` that no version pins: left by a pruned version or an interrupted
        /// build; harmless, and `odrpack prune` removes them.
        public var orphanMetadata: [String] = []
    }

    /// Verifies everything the index references.
    ///
    /// - Throws: `BuildError`: `catalog.malformed`, `verify.missingFile`, `verify.packCorrupt`,
    ///   `verify.entryCorrupt`, `verify.danglingReference` or `verify.manifestPinMismatch`, naming the file.
    public func verify() throws(BuildError) -> Summary {
        let index = try catalog.loadIndex()
        var summary = Summary(versions: 0, packs: 0, entries: 0, files: 0, bytes: 0)
        var verifiedPacks = Set<String>()
        var pinned = Set<String>()
        for entry in index.versions {
            let expectedPath = VersionManifest.manifestPath(forVersion: entry.number)
            guard entry.manifest == expectedPath else {
                throw BuildError(
                    .danglingReference, "version \(entry.number) should live at \(expectedPath), not \(entry.manifest)",
                    file: catalog.url(of: CatalogIndex.fileName).path, key: "versions", value: entry.manifest)
            }
            // A split version's bins and tables are checked against their pins as it loads, and
            // each table against its pack's archive below, through the assembled manifest.
            let loaded = try catalog.loadVersion(entry.number, in: index)
            let manifest = loaded.manifest
            for file in loaded.split?.files ?? [] where pinned.insert(file.path).inserted { summary.metadataFiles += 1 }
            try checkTagTotals(of: manifest)
            try checkPin(of: entry)
            summary.versions += 1
            summary.files += manifest.files.count
            let lookup = manifest.makeIndex()
            for pack in manifest.packs where verifiedPacks.insert(pack.id).inserted {
                summary.entries += try verify(pack, of: lookup)
                summary.packs += 1
                summary.bytes = summary.bytes.clampedAdding(pack.archiveBytes)  // many versions' packs can exceed Int64
            }
        }
        let onDisk = (try? FileManager.default.contentsOfDirectory(atPath: catalog.url(of: SplitMetadata.folder).path)) ?? []
        summary.orphanMetadata = onDisk.filter { !$0.hasPrefix(".") }.map { "\(SplitMetadata.folder)/\($0)" }
            .filter { !pinned.contains($0) }.sorted()
        return summary
    }

    /// Checks that each tag's byte totals are the sums over its packs, which is what clients budget with.
    func checkTagTotals(of manifest: VersionManifest) throws(BuildError) {
        let index = manifest.makeIndex()
        for tag in manifest.tags {
            let packs = tag.packs.compactMap { index.pack(id: $0) }
            // Clamped, not trapping: validation bounds these sums, but the verifier takes any manifest.
            let download = packs.lazy.map(\.archiveBytes).clampedSum()
            let installed = packs.lazy.map(\.installedBytes).clampedSum()
            guard download == tag.downloadBytes, installed == tag.installedBytes else {
                throw BuildError(
                    .danglingReference,
                    "tag '\(tag.name)' declares \(tag.downloadBytes) download and \(tag.installedBytes) installed bytes, but its packs add up to \(download) and \(installed)",
                    file: catalog.url(of: VersionManifest.manifestPath(forVersion: manifest.version)).path,
                    key: "tags", value: tag.name)
            }
        }
    }

    /// Checks one pack against its manifest; returns the number of entries checked.
    func verify(_ pack: PackRecord, of lookup: ManifestIndex) throws(BuildError) -> Int {
        let manifest = lookup.manifest
        let location = catalog.packURL(id: pack.id)
        let manifestPath = catalog.url(of: VersionManifest.manifestPath(forVersion: manifest.version)).path
        guard FileManager.default.fileExists(atPath: location.path) else {
            throw BuildError(
                .missingFile, "version \(manifest.version) needs this pack but it is missing; rebuild or restore it",
                file: location.path)
        }
        let expected = lookup.expectedEntries(inPack: pack.id)
        let entryBytes = expected.lazy.map(\.size).checkedSum()
        guard expected.count == pack.entryCount, entryBytes == pack.installedBytes else {
            let described = entryBytes.map { "\($0) bytes" } ?? "more than \(Int64.max) bytes"
            throw BuildError(
                .danglingReference,
                "the manifest says pack \(pack.id) has \(pack.entryCount) entries and \(pack.installedBytes) installed bytes, but its file records describe \(expected.count) entries and \(described)",
                file: manifestPath, key: "packs", value: pack.id)
        }
        do {
            let archive = try PackArchive(contentsOf: location)
            guard archive.size == pack.archiveBytes else {
                throw BuildError(
                    .packCorrupt,
                    "the pack is \(archive.size) bytes but the manifest says \(pack.archiveBytes); it is truncated or replaced",
                    file: location.path)
            }
            try archive.verify(expecting: expected, archiveSHA256: pack.id)
            // Each chunk on its own, as a client reusing the others fetches it: its bytes hash to
            // its digest, and a deflated one inflates alone.
            var checkedEntries = Set<String>()
            for file in lookup.files(inPack: pack.id) where !file.chunks.isEmpty && checkedEntries.insert(file.entry).inserted {
                try FileChunk.verifyChunks(of: file, inArchiveAt: location)
            }
        } catch let error as BuildError {
            throw error
        } catch let error as FormatError {
            let code: BuildError.Code = switch error.code {
            case .hashMismatch where error.field == nil, .malformedArchive, .truncated: .packCorrupt
            default: .entryCorrupt
            }
            throw BuildError(code, error.message, file: location.path, key: error.field, cause: error)
        } catch {
            throw BuildError(.packCorrupt, "cannot read the pack", file: location.path, cause: error)
        }
        return expected.count
    }

    /// A version's manifest file must have the SHA-256 and size `catalog.json` pins, or every
    /// client refuses it (`integrity`).
    private func checkPin(of entry: CatalogIndex.VersionEntry) throws(BuildError) {
        guard let sha256 = entry.sha256, let size = entry.size else { return }
        let location = catalog.url(of: entry.manifest)
        guard let data = try? Data(contentsOf: location) else {
            throw BuildError(.missingFile, "the version manifest listed in catalog.json is missing", file: location.path)
        }
        let digest = ContentHash.sha256Hex(of: data)
        guard digest == sha256, Int64(data.count) == size else {
            throw BuildError(
                .manifestPinMismatch,
                "the manifest is \(data.count) bytes with SHA-256 \(digest), but catalog.json pins \(size) bytes with SHA-256 \(sha256); clients will refuse it. Restore the published manifest (manifests are never rewritten)",
                file: location.path)
        }
    }
}
