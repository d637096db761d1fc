import ODRFormat

extension BuildReport {
    /// The report of a version already in a catalog, made from its manifest alone: what
    /// `odrpack report` shows for a version it did not just build.
    ///
    /// Packs, tags, sharing, variants, deduplication and the initial-install budget come out as
    /// `odrpack build` reported them. What only a build sees is left at zero or derived: nothing was
    /// hashed; a pack counts as reused when `previous` has it; a tag set's parts are the packs
    /// sharing its tags and variant when together they are over the pack size limit (packs merged
    /// into the same tag set are not parts), in order of their first entry name; warnings name the
    /// split tag sets and an exceeded budget, not the files the build skipped.
    ///
    /// - Parameters:
    ///   - manifest: the version, validated.
    ///   - distribution: the distributions pointing at it, for the heading (empty when none does).
    ///   - previous: an earlier version whose packs count as reused.
    ///   - limits: the pack size limit and the initial-install budget the version was built under;
    ///     `nil` when unknown (the budget is then the default one, and split warnings name no limit).
    public init(manifest: VersionManifest, distribution: String, previous: VersionManifest? = nil, limits: TagRules.Limits? = nil) {
        let index = ManifestIndex(manifest)
        let earlier = Set(previous?.packs.map(\.id) ?? [])
        // A tag set split into parts: its packs share the tags and the variant.
        struct Group: Hashable {
            var tags: [String]
            var variant: [String]
        }
        func group(of pack: PackRecord) -> Group {
            Group(tags: pack.tags, variant: pack.variant.sorted { $0.key < $1.key }.map { "\($0.key)=\($0.value)" })
        }
        var firstName: [String: String] = [:]
        var fileCount: [String: Int] = [:]
        var packPaths: [String: Set<String>] = [:]
        for pack in manifest.packs {
            let files = index.files(inPack: pack.id)
            firstName[pack.id] = files.map(\.entry).min() ?? ""
            fileCount[pack.id] = files.count
            packPaths[pack.id] = Set(files.map(\.path))
        }
        // Merged packs can share a tag set too (two merges whose tags add up to the same set): packs
        // of one tag set are the parts of a split only when together they are over the pack size
        // limit, as a split's parts always are (merges never make a pack over it).
        let packSize = (limits ?? TagRules.Limits()).packSize
        let groups = Dictionary(grouping: manifest.packs, by: group(of:)).mapValues { packs in
            packs.sorted { (firstName[$0.id] ?? "", $0.id) < (firstName[$1.id] ?? "", $1.id) }.map(\.id)
        }.filter { _, ids in
            ids.count > 1 && ids.lazy.compactMap { index.pack(id: $0)?.installedBytes }.clampedSum() > packSize
        }
        let ordered = manifest.packs.sorted { a, b in
            let (ga, gb) = (group(of: a), group(of: b))
            if ga.tags != gb.tags { return ga.tags.lexicographicallyPrecedes(gb.tags) }
            if ga.variant != gb.variant { return ga.variant.lexicographicallyPrecedes(gb.variant) }
            return (firstName[a.id] ?? "", a.id) < (firstName[b.id] ?? "", b.id)
        }
        var warnings: [BuildWarning] = []
        for (key, ids) in groups.sorted(by: { $0.key.tags.lexicographicallyPrecedes($1.key.tags) }) {
            let total = ids.lazy.compactMap { index.pack(id: $0)?.installedBytes }.clampedSum()
            warnings.append(BuildWarning(
                .splitPack,
                "tag set [\(key.tags.joined(separator: ","))]\(key.variant.isEmpty ? "" : " {\(key.variant.joined(separator: ","))}") "
                    + "holds \(total) bytes, over the " + (limits.map { "\($0.packSize)-byte " } ?? "") + "pack size limit; split into \(ids.count) packs"))
        }
        let budgetTags = manifest.initialInstallTags + manifest.prefetchOrder.filter { !manifest.initialInstallTags.contains($0) }
        let budgetBytes = Self.initialInstallBytes(of: manifest, tags: budgetTags)
        let budget = (limits ?? TagRules.Limits()).initialInstallAndPrefetch
        if budgetBytes > budget {
            warnings.append(BuildWarning(
                .budgetExceeded,
                "initial install + prefetch tags need \(budgetBytes) bytes, over the \(budget)-byte budget (limits.initialInstallAndPrefetch)"))
        }
        for tag in manifest.tags where tag.packs.isEmpty {
            warnings.append(BuildWarning(.emptyTag, "tag '\(tag.name)' has no files"))
        }
        // Paths that share content with an earlier path of the same pack are stored once.
        var seenEntries = Set<String>()
        var duplicates = 0
        var saved: Int64 = 0
        for file in manifest.files {
            if !seenEntries.insert("\(file.pack)/\(file.entry)").inserted {
                duplicates += 1
                saved = saved.clampedAdding(file.size)
            }
        }
        let variantDownloads = CatalogBuilder.variantDownloads(of: manifest)
        self.init(
            catalogID: manifest.catalogID, version: manifest.version, publishedNewVersion: true, distribution: distribution,
            files: manifest.files.count, hashedFiles: 0, hashedBytes: 0,
            packs: ordered.map { pack in
                let parts = groups[group(of: pack)] ?? [pack.id]
                return Pack(
                    id: pack.id, tags: pack.tags, variant: pack.variant, part: (parts.firstIndex(of: pack.id) ?? 0) + 1,
                    partCount: parts.count, entries: pack.entryCount, files: fileCount[pack.id] ?? 0,
                    archiveBytes: pack.archiveBytes, installedBytes: pack.installedBytes, reused: earlier.contains(pack.id),
                    shared: pack.tags.count > 1)
            },
            tags: manifest.tags.map { tag in
                Tag(
                    name: tag.name, preservationPriority: tag.preservationPriority, packs: tag.packs,
                    downloadBytes: tag.downloadBytes, installedBytes: tag.installedBytes,
                    files: tag.packs.count == 1 ? packPaths[tag.packs[0]]?.count ?? 0
                        : tag.packs.reduce(into: Set<String>()) { $0.formUnion(packPaths[$1] ?? []) }.count,
                    variants: variantDownloads[tag.name] ?? [])
            },
            variantAxes: manifest.variantAxes,
            sharedPacks: ordered.filter { $0.tags.count > 1 }.map(\.id),
            writtenPacks: manifest.packs.count { !earlier.contains($0.id) },
            duplicateFiles: duplicates, bytesSavedByDeduplication: saved,
            initialInstallAndPrefetchTags: budgetTags, initialInstallAndPrefetchBytes: budgetBytes,
            initialInstallAndPrefetchBudget: budget, warnings: warnings)
    }

    /// Installed bytes of the packs `tags` need; with variant axes, for the device that needs the
    /// most among the default one and those preferring any single value.
    static func initialInstallBytes(of manifest: VersionManifest, tags: [String]) -> Int64 {
        let devices = [VariantPreferences()] + manifest.variantAxes.flatMap { axis in
            axis.values.map { CatalogBuilder.device(preferring: $0, of: axis) }
        }
        return devices.map { device -> Int64 in
            let index = ManifestIndex(manifest, variants: device)
            return index.packs(forTags: tags).lazy.map { index.pack(id: $0)?.installedBytes ?? 0 }.clampedSum()
        }.max() ?? 0
    }
}
