import Foundation
import ODRFormat

/// Builds a catalog version from an assets folder: scan, hash, plan, write packs, then publish.
///
/// Publishing follows the catalog's rules: packs first (`packs/<sha256>.zip`, never rewritten), then
/// the new `versions/<n+1>.json`, then `catalog.json` last and atomically, so a client that reads
/// the index never finds a version whose files are missing. When the assets produce exactly the
/// latest version's manifest, no new version is published; the distribution is only pointed at it.
///
/// ```swift
/// var options = BuildOptions(assets: assetsURL, output: catalogURL)
/// options.cache = BuildCache.defaultLocation(forAssets: assetsURL)
/// let report = try await CatalogBuilder(options: options).build()
/// print(report.rendered())
/// ```
public struct CatalogBuilder: Sendable {
    /// What to build.
    public var options: BuildOptions

    /// Creates a builder.
    public init(options: BuildOptions) {
        self.options = options
    }

    /// Runs the build.
    ///
    /// - Parameter progress: called from any thread as each stage advances.
    /// - Returns: the report of what was built.
    /// - Throws: `BuildError`: `rules.*` for the rules file, `scan.*`, `plan.*`, `catalog.*`.
    public func build(progress: @escaping @Sendable (BuildProgress) -> Void = { _ in }) async throws(BuildError) -> BuildReport {
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: options.assets.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw BuildError(.assetsUnreadable, "the assets folder does not exist or is not a folder", file: options.assets.path)
        }
        // A rebuild that finds everything as the last build left it (``UnchangedBuild``) stops here.
        let rulesData = try? Data(contentsOf: options.rulesURL)
        let proofKey = rulesData.map { UnchangedBuild.key(options: options, rules: $0) }
        if options.usesUnchangedProof, options.signing == nil, let proofKey,
           let report = UnchangedBuild.report(options: options, key: proofKey) {
            progress(BuildProgress(phase: .publishing, completedBytes: 1, totalBytes: 1))
            return report
        }
        if let cache = options.cache { UnchangedBuild.forget(forCache: cache) }
        // The build cache and the earlier versions are read on the other core while this one reads
        // the rules and scans the assets: a rebuild with nothing changed is mostly these reads.
        let loadingCache = Task { [location = options.cache] in location.map { BuildCache.load(from: $0) } }
        let catalog = CatalogDirectory(root: options.output)
        // A bad rules file is reported before a bad catalog, as when the index was read after it.
        let readIndex = Result { () throws(BuildError) in try catalog.loadIndexIfPresent() }
        let earlierVersions = Task { [catalog] in
            guard case .success(let index?) = readIndex else { return [CatalogDirectory.LoadedVersion?]() }
            return index.versions.map { try? catalog.loadVersion($0.number, in: index) }
        }
        // The bytes the proof's key hashed, parsed: not read again, so the two cannot differ.
        let rules = if let rulesData {
            try TagRules.parse(rulesData, file: options.rulesURL.path)
        } else {
            try TagRules.load(from: options.rulesURL)
        }
        let index = try readIndex.get()
        let catalogID = try resolveCatalogID(rules: rules, index: index)
        try BuildError.checkDistributionName(options.distribution, key: "--distribution")

        progress(BuildProgress(phase: .scanning, completedBytes: 0, totalBytes: 0))
        let scanStart = FileStamp.now()
        let scan = try AssetScanner(root: options.assets, rules: rules, skipping: skippedPaths()).scan()
        // Variant names are checked before hashing, so a misnamed file fails the build at once.
        let names = try VariantResolver(rules: rules.variants).resolve(scan.files.map(\.path))
        var cache: BuildCache? = await loadingCache.value
        let loadedCache = cache
        let uncachedBytes = scan.files.reduce(Int64(0)) { $0 + (cache?.sha256(for: $1) == nil ? $1.size : 0) }
        progress(BuildProgress(phase: .hashing, completedBytes: 0, totalBytes: uncachedBytes))
        let hashing = try await AssetHasher(concurrency: options.concurrency).hash(scan.files, cache: &cache) { done in
            progress(BuildProgress(phase: .hashing, completedBytes: done, totalBytes: uncachedBytes))
        }

        let plan = try PackPlanner(rules: rules, allowOversize: options.allowOversize).plan(hashing.assets, names: names)
        guard !plan.packs.isEmpty else {
            throw BuildError(
                .emptyBuild, "no files to pack: the assets folder is empty or the rules leave everything out",
                file: options.assets.path)
        }

        try catalog.createLayout()
        var packOptions = options.packOptions
        packOptions.chunkThreshold = rules.limits.chunkThreshold
        if let sizes = rules.limits.chunkSizes { packOptions.chunkSizes = sizes }
        var archiver = PackArchiver(catalog: catalog, options: packOptions)
        archiver.knownChunkTables = cache?.chunkTables(for: packOptions.chunkSizes) ?? [:]
        var metadata = SplitMetadataWriter(catalog: catalog)
        var previous: CatalogDirectory.LoadedVersion?
        // Split metadata of earlier versions, offered for reuse once the form is known.
        var earlierParts: [SplitMetadata.Parts] = []
        let mayWriteSplit = (options.splitMetadata ?? rules.splitMetadata) != false
        if index != nil {
            for case let loaded? in await earlierVersions.value {
                archiver.offerReuse(of: loaded.manifest)
                if mayWriteSplit, let parts = loaded.split { earlierParts.append(parts) }
                previous = loaded
            }
        }
        let form = BuildReport.MetadataForm.chosen(
            option: options.splitMetadata, rules: rules.splitMetadata,
            latest: previous.map { ($0.manifest.version, $0.split != nil) })
        let split = form.form == .split
        if split { for parts in earlierParts { metadata.offerReuse(of: parts) } }
        earlierParts = []
        let written = try await writePacks(plan.packs, archiver: archiver, progress: progress)
        progress(BuildProgress(phase: .publishing, completedBytes: 0, totalBytes: 1))

        let latest = index?.versions.map(\.number).max() ?? 0
        let manifest = Self.manifest(
            catalogID: catalogID, version: latest + 1, plan: plan, written: written, rules: rules)
        var version = latest + 1
        var published = true
        // The same files in the other layout (split or not) are a new version too.
        if var unchanged = previous?.manifest, unchanged.version == latest, (previous?.split != nil) == split {
            unchanged.version = manifest.version
            if unchanged == manifest {
                version = latest
                published = false
            }
        }
        if published {
            let data: Data
            do {
                // Split: validated as a whole manifest, but never encoded as one (39 MB of JSON at 100,000 files).
                if split { try manifest.validate() }
                data = split ? Data() : try manifest.encoded()
            } catch {
                throw BuildError(.catalogMalformed, "the new manifest is invalid (a bug in odrpack): \(error)", cause: error)
            }
            let file = split ? try metadata.write(manifest) : data
            try catalog.writeImmutable(file, at: VersionManifest.manifestPath(forVersion: version))
        }
        var newIndex = index ?? CatalogIndex(id: catalogID, serial: 0, distributions: [:], versions: [])
        if published {
            newIndex.versions.append(.init(number: version, manifest: VersionManifest.manifestPath(forVersion: version)))
        }
        // A signed build always writes: signing refreshes `expires` (and signs an unsigned catalog).
        if published || newIndex.distributions[options.distribution] != version || index == nil || options.signing != nil {
            newIndex.distributions[options.distribution] = version
            newIndex.serial += 1
            try catalog.writeIndex(newIndex, signing: options.signing)
        }
        if var cache, let location = options.cache {
            for file in manifest.files where !file.chunks.isEmpty {
                cache.recordChunks(file.chunks, sha256: file.sha256, sizes: packOptions.chunkSizes)
            }
            cache.retain(paths: Set(scan.files.map(\.path)))
            // A rebuild that hashed and chunked nothing new leaves the file as it was.
            if cache != loadedCache || !FileManager.default.fileExists(atPath: location.path) {
                try cache.save(to: location)
            }
        }
        progress(BuildProgress(phase: .publishing, completedBytes: 1, totalBytes: 1))

        var built = report(
            manifest: published ? manifest : { var m = manifest; m.version = version; return m }(),
            published: published, plan: plan, written: written, rules: rules, hashing: hashing,
            warnings: scan.warnings + plan.warnings)
        built.followedLinks = scan.followedLinks
        if manifest.files.contains(where: { !$0.chunks.isEmpty }) {
            built.chunking = ChunkSummary(of: manifest, against: previous?.manifest)
        }
        if split {
            built.splitMetadata = BuildReport.SplitMetadataCounts(written: metadata.written, reused: metadata.reused)
        }
        built.metadataForm = form
        // What a rebuild with nothing changed reports, kept for the next build to return at once.
        var unchanged = built
        unchanged.publishedNewVersion = false
        unchanged.hashedFiles = 0
        unchanged.hashedBytes = 0
        unchanged.writtenPacks = 0
        for position in unchanged.packs.indices { unchanged.packs[position].reused = true }
        if split { unchanged.splitMetadata = BuildReport.SplitMetadataCounts(written: 0, reused: 0) }
        unchanged.metadataForm = .chosen(option: options.splitMetadata, rules: rules.splitMetadata, latest: (version, split))
        var current = manifest
        current.version = version
        if unchanged.chunking != nil { unchanged.chunking = ChunkSummary(of: current, against: current) }
        UnchangedBuild.record(
            options: options, key: proofKey, scan: scan, scanStart: scanStart, catalog: catalog, index: newIndex,
            version: version, manifest: current, report: unchanged)
        if let previous, published, let growth = BaseGrowth(from: previous.manifest, to: manifest),
           let warning = growth.warning(threshold: rules.limits.baseGrowthWarning) {
            built.warnings.append(warning)
        }
        return built
    }

    private func resolveCatalogID(rules: TagRules, index: CatalogIndex?) throws(BuildError) -> String {
        let requested = options.catalogID ?? rules.catalogID
        if let index, let requested, requested != index.id {
            throw BuildError(
                .catalogIDMismatch,
                "the catalog at this path has id '\(index.id)', not '\(requested)'; write to another --output or use the same id",
                file: options.output.path, key: "catalogID", value: requested)
        }
        if let id = requested ?? index?.id { return id }
        let folder = options.assets.standardizedFileURL.lastPathComponent
        let cleaned = String(folder.lowercased().map { $0.isLetter || $0.isNumber || $0 == "-" || $0 == "_" ? $0 : "-" })
        return cleaned.isEmpty ? "catalog" : cleaned
    }

    /// Paths inside the assets folder that are not assets: the rules file, the catalog, the cache
    /// and the proof kept beside it.
    private func skippedPaths() -> Set<String> {
        let root = options.assets.standardizedFileURL.path
        var skipped: Set<String> = [TagRules.defaultFileName]
        let proof = options.cache.map { UnchangedBuild.location(forCache: $0) }
        for location in [options.rulesURL, options.output, options.cache, proof].compactMap({ $0 }) {
            let path = location.standardizedFileURL.path
            if path.hasPrefix(root + "/") { skipped.insert(String(path.dropFirst(root.count + 1))) }
        }
        return skipped
    }

    /// Writes the packs on every core, largest first, and returns them in plan order.
    private func writePacks(
        _ packs: [PackPlan.Pack], archiver: PackArchiver, progress: @escaping @Sendable (BuildProgress) -> Void
    ) async throws(BuildError) -> [WrittenPack] {
        let total = packs.reduce(Int64(0)) { $0 + $1.installedBytes }
        let done = ByteCounter()
        let order = packs.indices.sorted { packs[$0].installedBytes > packs[$1].installedBytes || (packs[$0].installedBytes == packs[$1].installedBytes && $0 < $1) }
        var results = [WrittenPack?](repeating: nil, count: packs.count)
        let workers = max(1, options.concurrency)
        progress(BuildProgress(phase: .writing, completedBytes: 0, totalBytes: total))
        do {
            try await withThrowingTaskGroup(of: (Int, WrittenPack).self) { group in
                var next = 0
                func submit() {
                    let index = order[next]
                    next += 1
                    group.addTask {
                        let pack = try archiver.write(packs[index]) { bytes in
                            let now = done.add(bytes)
                            progress(BuildProgress(phase: .writing, completedBytes: now, totalBytes: total))
                        }
                        return (index, pack)
                    }
                }
                while next < order.count && next < workers { submit() }
                while let (index, pack) = try await group.next() {
                    results[index] = pack
                    if next < order.count { submit() }
                }
            }
        } catch let error as BuildError {
            throw error
        } catch {
            throw BuildError(.catalogIO, "writing packs was interrupted", cause: error)
        }
        return results.compactMap { $0 }
    }

    /// The version manifest for the written packs.
    static func manifest(
        catalogID: String, version: Int, plan: PackPlan, written: [WrittenPack], rules: TagRules
    ) -> VersionManifest {
        let packs = written.map(\.record).sorted { $0.id < $1.id }
        // By path, then variant: the order the format requires, whatever order packs were written in.
        let files = written.flatMap(\.files).sorted {
            $0.path != $1.path ? $0.path < $1.path : $0.variant.variantDescription < $1.variant.variantDescription
        }
        let tags = plan.tags.map { tag -> TagRecord in
            let needed = packs.filter { $0.tags.contains(tag.name) }
            return TagRecord(
                name: tag.name, preservationPriority: tag.preservationPriority, packs: needed.map(\.id),
                downloadBytes: needed.reduce(0) { $0 + $1.archiveBytes },
                installedBytes: needed.reduce(0) { $0 + $1.installedBytes })
        }
        return VersionManifest(
            catalogID: catalogID, version: version, tags: tags, initialInstallTags: rules.effectiveInitialInstall,
            prefetchOrder: rules.prefetchOrder, packs: packs, files: files, variantAxes: plan.variantAxes)
    }

    /// A device that prefers `value` on `axis`: that value first, then the axis's other values in
    /// declared order; every other axis in declared order.
    static func device(preferring value: String, of axis: VariantAxis) -> VariantPreferences {
        VariantPreferences([axis.name: [value] + axis.values.filter { $0 != value }])
    }

    /// For each tag, what a device preferring each value of each axis downloads, as the runtime
    /// chooses packs (``ManifestIndex``): that value first, then the axis's other values in
    /// declared order; every other axis in declared order.
    /// Tags without variant packs cost every device the same and get no breakdown.
    static func variantDownloads(of manifest: VersionManifest) -> [String: [BuildReport.VariantDownload]] {
        var result: [String: [BuildReport.VariantDownload]] = [:]
        let variantPacks = Set(manifest.packs.filter { !$0.variant.isEmpty }.map(\.id))
        let varying = Set(manifest.tags.filter { $0.packs.contains(where: variantPacks.contains) }.map(\.name))
        guard !varying.isEmpty else { return result }
        for axis in manifest.variantAxes {
            for value in axis.values {
                for tag in ManifestIndex(manifest, variants: device(preferring: value, of: axis)).tags where varying.contains(tag.name) {
                    result[tag.name, default: []].append(BuildReport.VariantDownload(
                        axis: axis.name, value: value, packs: tag.packs.sorted(), downloadBytes: tag.downloadBytes,
                        installedBytes: tag.installedBytes))
                }
            }
        }
        return result
    }

    private func report(
        manifest: VersionManifest, published: Bool, plan: PackPlan, written: [WrittenPack], rules: TagRules,
        hashing: AssetHasher.Result, warnings: [BuildWarning]
    ) -> BuildReport {
        var warnings = warnings
        let budgetTags = manifest.initialInstallTags + manifest.prefetchOrder.filter { !manifest.initialInstallTags.contains($0) }
        // With variants, the budget holds for the device that needs the most: the default one or
        // one preferring any single value.
        let budgetBytes = BuildReport.initialInstallBytes(of: manifest, tags: budgetTags)
        if budgetBytes > rules.limits.initialInstallAndPrefetch {
            warnings.append(BuildWarning(
                .budgetExceeded,
                "initial install + prefetch tags need \(budgetBytes) bytes, over the \(rules.limits.initialInstallAndPrefetch)-byte budget (limits.initialInstallAndPrefetch)"))
        }
        // A tag's files are the paths its packs hold, as `odrpack report` counts them from the manifest.
        var pathsInPack: [String: Set<String>] = [:]
        for file in manifest.files { pathsInPack[file.pack, default: []].insert(file.path) }
        let filesPerTag = Dictionary(uniqueKeysWithValues: manifest.tags.map { tag in
            (tag.name, tag.packs.reduce(into: Set<String>()) { $0.formUnion(pathsInPack[$1] ?? []) }.count)
        })
        let variantDownloads = Self.variantDownloads(of: manifest)
        let overFetched = Dictionary(plan.tags.map { ($0.name, $0.overFetchedBytes) }) { first, _ in first }
        return BuildReport(
            catalogID: manifest.catalogID, version: manifest.version, publishedNewVersion: published,
            distribution: options.distribution, files: manifest.files.count, hashedFiles: hashing.hashedFiles,
            hashedBytes: hashing.hashedBytes,
            packs: written.map { pack in
                BuildReport.Pack(
                    id: pack.record.id, tags: pack.record.tags, variant: pack.record.variant,
                    part: pack.plan.part, partCount: pack.plan.partCount,
                    entries: pack.record.entryCount, files: pack.files.count, archiveBytes: pack.record.archiveBytes,
                    installedBytes: pack.record.installedBytes, reused: pack.reused, shared: pack.record.tags.count > 1)
            },
            tags: manifest.tags.map { tag in
                BuildReport.Tag(
                    name: tag.name, preservationPriority: tag.preservationPriority, packs: tag.packs,
                    downloadBytes: tag.downloadBytes, installedBytes: tag.installedBytes, files: filesPerTag[tag.name] ?? 0,
                    overFetchedBytes: overFetched[tag.name] ?? 0, variants: variantDownloads[tag.name] ?? [])
            },
            variantAxes: manifest.variantAxes,
            sharedPacks: written.filter { $0.record.tags.count > 1 }.map(\.record.id),
            writtenPacks: written.count { !$0.reused },
            duplicateFiles: plan.duplicateFiles, bytesSavedByDeduplication: plan.bytesSavedByDeduplication,
            initialInstallAndPrefetchTags: budgetTags, initialInstallAndPrefetchBytes: budgetBytes,
            initialInstallAndPrefetchBudget: rules.limits.initialInstallAndPrefetch, warnings: warnings)
    }
}
