import ODRFormat

extension BuildReport {
    /// The report of a version already in a catalog, made from its manifest alone: what
    /// `odrpack report` shows for a version it did not just build.
    ///
    /// Packs, tags, sharing, variants, deduplication and the initial-install budget come out as
    /// `odrpack build` reported them. What only a build sees is left at zero or derived: nothing was
    /// hashed; a pack counts as reused when `previous` has it; a tag set's parts are the packs
    /// sharing its tags, variant and variant availability that the planner's split of their entries
    /// would give (``splitParts(among:index:limit:)``; packs merged into the same tag set are not
    /// parts, whatever their sizes add up to), in order of their first entry name; warnings name the
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
        // Packs of one tag set, variant and variant availability (the planner's group) are the parts
        // of a split only when splitting their entries as the planner does gives exactly those packs:
        // packs merged into one tag set, each under the pack size limit, can together be over it
        // without being a split. At most one split per group, beside merged packs.
        let packSize = (limits ?? TagRules.Limits()).packSize
        var variantsOfPath: [String: [String]] = [:]
        for file in manifest.files where !file.variant.isEmpty {
            variantsOfPath[file.path, default: []].append(file.variant.variantDescription)
        }
        func availability(of pack: PackRecord) -> String {
            // A common entry's availability is that of the path it is named after.
            let file = index.files(inPack: pack.id).first { !$0.variant.isEmpty || $0.path == $0.entry }
            return file.map { (variantsOfPath[$0.path] ?? []).sorted().joined(separator: " ") } ?? ""
        }
        func order(_ ids: [String]) -> [String] { ids.sorted { (firstName[$0] ?? "", $0) < (firstName[$1] ?? "", $1) } }
        var splits: [(group: Group, ids: [String])] = []
        struct PartsKey: Hashable {
            var group: Group
            var availability: String
        }
        for packs in Dictionary(grouping: manifest.packs, by: { PartsKey(group: group(of: $0), availability: availability(of: $0)) }).values {
            guard packs.count > 1, packs.lazy.map(\.installedBytes).clampedSum() > packSize,
                  let parts = Self.splitParts(among: packs.map(\.id), index: index, limit: packSize)
            else { continue }
            splits.append((group(of: packs[0]), order(parts)))
        }
        var partsOf: [String: [String]] = [:]
        for split in splits { for id in split.ids { partsOf[id] = split.ids } }
        let ordered = manifest.packs.sorted { a, b in
            let (ga, gb) = (group(of: a), group(of: b))
            if ga.tags != gb.tags { return ga.tags.lexicographicallyPrecedes(gb.tags) }
            if ga.variant != gb.variant { return ga.variant.lexicographicallyPrecedes(gb.variant) }
            return (firstName[a.id] ?? "", a.id) < (firstName[b.id] ?? "", b.id)
        }
        var warnings: [BuildWarning] = []
        for (key, ids) in splits.sorted(by: { a, b in
            if a.group.tags != b.group.tags { return a.group.tags.lexicographicallyPrecedes(b.group.tags) }
            if a.group.variant != b.group.variant { return a.group.variant.lexicographicallyPrecedes(b.group.variant) }
            return (firstName[a.ids[0]] ?? "", a.ids[0]) < (firstName[b.ids[0]] ?? "", b.ids[0])
        }) {
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
                let parts = partsOf[pack.id] ?? [pack.id]
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

    /// The packs among `ids` (of one tag set, variant and availability) that are the parts of a
    /// split: the largest set of them (and the first, in the order of `ids`, among sets of one size)
    /// whose entries the planner's split (``PackPlanner/balancedParts(of:limit:)``, entries over
    /// `limit` in packs of their own) puts in exactly those packs; `nil` when no two are.
    /// Every set is tried for up to 10 packs of up to 4,096 entries; beyond that all of them, and
    /// for up to 32 packs all but one.
    static func splitParts(among ids: [String], index: ManifestIndex, limit: Int64) -> [String]? {
        let entriesOf: [[(name: String, size: Int64)]] = ids.map { id in
            var seen = Set<String>()
            return index.files(inPack: id).compactMap { seen.insert($0.entry).inserted ? ($0.entry, $0.size) : nil }
        }
        func isSplit(_ members: [Int]) -> Bool {
            let entries = members.flatMap { entriesOf[$0] }
            guard entries.reduce(Int64(0), { $0.clampedAdding($1.size) }) > limit else { return false }
            let fitting = entries.filter { $0.size <= limit }
            let parts = PackPlanner.balancedParts(of: fitting, limit: limit).map { Set($0.map { fitting[$0].name }) }
                + entries.filter { $0.size > limit }.map { Set([$0.name]) }
            return Set(parts) == Set(members.map { Set(entriesOf[$0].map(\.name)) })
        }
        let all = Array(ids.indices)
        var candidates: [[Int]] = []
        if ids.count <= 10, entriesOf.reduce(0, { $0 + $1.count }) <= 4096 {
            candidates = (1..<(1 << ids.count)).map { mask in all.filter { mask & (1 << $0) != 0 } }
                .filter { $0.count > 1 }
                .sorted { $0.count != $1.count ? $0.count > $1.count : $0.lexicographicallyPrecedes($1) }
        } else {
            candidates = [all] + (ids.count <= 32 ? all.map { skipped in all.filter { $0 != skipped } } : [])
        }
        return candidates.first(where: isSplit).map { $0.map { ids[$0] } }
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
