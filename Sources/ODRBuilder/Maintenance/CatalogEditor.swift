import Foundation
import ODRFormat

/// Changes a published catalog: moves distribution pointers and prunes old versions.
///
/// Every change rewrites `catalog.json` first (atomically, with a higher serial) and deletes files
/// only afterwards, so a client reading the index never finds a version whose files are gone.
///
/// ```swift
/// let editor = CatalogEditor(catalog: CatalogDirectory(root: url))
/// try editor.setDistribution("live", to: 8)        // promote test -> live
/// let pruned = try editor.prune(keep: 3)
/// ```
public struct CatalogEditor: Sendable {
    /// The catalog to change.
    public var catalog: CatalogDirectory
    /// How each rewritten `catalog.json` is signed; `nil` writes it unsigned, which a signed
    /// catalog refuses (`signing.required`).
    public var signing: CatalogSigning?

    /// Creates an editor.
    public init(catalog: CatalogDirectory, signing: CatalogSigning? = nil) {
        self.catalog = catalog
        self.signing = signing
    }

    /// Signs `catalog.json` again with ``signing``'s keys (a new `expires`, a higher serial),
    /// changing nothing else; with `rotatingFrom`, first records a key rotation from the current
    /// keys (those private keys) to ``signing``'s keys with `threshold`.
    ///
    /// - Returns: the signed index.
    /// - Throws: `signing.invalid` without ``signing``, or when `threshold` exceeds the new keys.
    @discardableResult
    public func sign(rotatingFrom previousKeys: [SigningKey] = [], threshold: Int = 1) throws(BuildError) -> CatalogIndex {
        guard let signing else { throw BuildError(.signingInvalid, "signing needs at least one key (--key KEY)") }
        var index = try catalog.loadIndex()
        if !previousKeys.isEmpty {
            do {
                index = try index.rotatingKeys(to: signing.keys.map(\.publicKey), threshold: threshold, signedBy: previousKeys)
            } catch {
                throw BuildError(.signingInvalid, "cannot record the key rotation: \(error.message)", cause: error)
            }
        }
        index.serial += 1
        try catalog.writeIndex(index, signing: signing)
        return try catalog.loadIndex()
    }

    /// Points distribution `name` at `version` (creating the distribution if needed).
    ///
    /// - Returns: the version it pointed at before, if any.
    /// - Throws: `catalog.unknownVersion` when the catalog does not list `version`;
    ///   `catalog.invalidDistribution` for an invalid name.
    @discardableResult
    public func setDistribution(_ name: String, to version: Int) throws(BuildError) -> Int? {
        try BuildError.checkDistributionName(name, key: "distribution")
        var index = try catalog.loadIndex()
        // Reading the manifest proves the version exists and is intact before clients are sent to it.
        _ = try catalog.loadManifest(version: version, in: index)
        let previous = index.distributions[name]
        guard previous != version else { return previous }
        index.distributions[name] = version
        index.serial += 1
        try catalog.writeIndex(index, signing: signing)
        return previous
    }

    /// What pruning removed (or would remove, in a dry run).
    public struct PruneResult: Codable, Sendable, Equatable {
        /// Versions kept.
        public var keptVersions: [Int]
        /// Versions removed from the index and deleted.
        public var removedVersions: [Int]
        /// Packs no kept version uses, deleted.
        public var removedPacks: [String]
        /// Split metadata files (`meta/…`) no kept version uses, deleted.
        public var removedMetadata: [String] = []
        /// Manifests (`versions/<n>.json`) no kept version uses: those of the removed versions,
        /// and any left in the folder by an earlier prune, a publish or a copy.
        public var removedManifests: [String] = []
        /// Bytes freed.
        public var freedBytes: Int64
        /// Whether this was a dry run that changed nothing.
        public var dryRun: Bool
    }

    /// Removes versions that no distribution uses beyond the newest `keep`, then the manifests,
    /// packs and split metadata files no kept version uses (also those already unlisted, such as a
    /// `versions/1.json` a published folder kept after an earlier prune).
    ///
    /// - Parameters:
    ///   - keep: how many of the newest versions to keep even without a distribution.
    ///   - dryRun: report what would go without changing anything.
    public func prune(keep: Int, dryRun: Bool = false) throws(BuildError) -> PruneResult {
        var index = try catalog.loadIndex()
        let newest = Set(index.versions.map(\.number).sorted(by: >).prefix(max(0, keep)))
        let used = Set(index.distributions.values)
        let kept = index.versions.filter { newest.contains($0.number) || used.contains($0.number) }
        let removed = index.versions.filter { entry in !kept.contains { $0.number == entry.number } }
        var keptPacks = Set<String>()
        var keptMetadata = Set<String>()
        for entry in kept {
            let loaded = try catalog.loadVersion(entry.number, in: index)
            keptPacks.formUnion(loaded.manifest.packs.map(\.id))
            keptMetadata.formUnion(loaded.split?.files.map(\.path) ?? [])
        }
        // Metadata files on disk that no kept version pins: a removed version's, or left by an
        // interrupted build.
        let metadataNames = (try? FileManager.default.contentsOfDirectory(atPath: catalog.url(of: SplitMetadata.folder).path)) ?? []
        let removedMetadata = metadataNames.filter { !$0.hasPrefix(".") }.map { "\(SplitMetadata.folder)/\($0)" }
            .filter { !keptMetadata.contains($0) }.sorted()
        // Manifests on disk that no kept version lists: the removed versions', and older leftovers.
        let keptManifests = Set(kept.map(\.manifest))
        let manifestNames = (try? FileManager.default.contentsOfDirectory(atPath: catalog.url(of: "versions").path)) ?? []
        let removedManifests = Set(removed.map(\.manifest) + manifestNames.map { "versions/\($0)" }
            .filter { VersionManifest.version(ofManifestPath: $0) != nil })
            .subtracting(keptManifests).sorted()
        var candidates = Set<String>()
        for entry in removed {
            if let manifest = try? catalog.loadManifest(version: entry.number, in: index) {
                candidates.formUnion(manifest.packs.map(\.id))
            }
        }
        // Archives on disk that no kept version lists (left by pruned versions or interrupted builds).
        let packFolder = catalog.url(of: "packs")
        let onDisk = (try? FileManager.default.contentsOfDirectory(atPath: packFolder.path)) ?? []
        for name in onDisk where name.hasSuffix(".zip") && !name.hasPrefix(".") {
            candidates.insert(String(name.dropLast(4)))
        }
        let removedPacks = candidates.subtracting(keptPacks).sorted()
        var freed: Int64 = 0
        for id in removedPacks {
            let size = (try? FileManager.default.attributesOfItem(atPath: catalog.packURL(id: id).path)[.size] as? NSNumber)??.int64Value
            freed += size ?? 0
        }
        for path in removedManifests + removedMetadata {
            let size = (try? FileManager.default.attributesOfItem(atPath: catalog.url(of: path).path)[.size] as? NSNumber)??.int64Value
            freed += size ?? 0
        }
        var result = PruneResult(
            keptVersions: kept.map(\.number), removedVersions: removed.map(\.number), removedPacks: removedPacks,
            freedBytes: freed, dryRun: dryRun)
        result.removedMetadata = removedMetadata
        result.removedManifests = removedManifests
        guard !dryRun, !(removed.isEmpty && removedPacks.isEmpty && removedMetadata.isEmpty && removedManifests.isEmpty) else { return result }

        if !removed.isEmpty {
            index.versions = kept
            index.serial += 1
            try catalog.writeIndex(index, signing: signing)
        }
        do {
            for path in removedManifests where FileManager.default.fileExists(atPath: catalog.url(of: path).path) {
                try FileManager.default.removeItem(at: catalog.url(of: path))
            }
            for id in removedPacks where FileManager.default.fileExists(atPath: catalog.packURL(id: id).path) {
                try FileManager.default.removeItem(at: catalog.packURL(id: id))
            }
            for path in removedMetadata where FileManager.default.fileExists(atPath: catalog.url(of: path).path) {
                try FileManager.default.removeItem(at: catalog.url(of: path))
            }
        } catch {
            throw BuildError(.catalogIO, "cannot delete a pruned file; the index is already updated, run prune again", cause: error)
        }
        return result
    }
}
