/// Lookups over a ``VersionManifest`` by pack id, tag and path, for one device's choice of variants.
///
/// Building it is part of opening a store's catalog, so it does as little as it can up front:
/// packs and tags get dictionaries; files, which are many (100,000 in a large catalog), are read
/// from a compact manifest's bytes one at a time, or, in a manifest of records, found by binary
/// search when it lists them sorted by path (as `odrpack` writes them) and grouped by pack only the
/// first time a pack's files are asked for.
///
/// In a manifest with ``VersionManifest/variantAxes``, the index applies a ``VariantPreferences``
/// once, when it is built: each logical path resolves to the variant the device ranks best among
/// those it accepts, a pack is *chosen* when it holds one of those files (common packs always are),
/// and ``tags`` and ``tag(named:)`` list only chosen packs, with their sizes. Everything a request
/// does afterwards sees only the chosen packs, at no cost per request.
public struct ManifestIndex: Sendable {
    /// The manifest this index was built from.
    public let manifest: VersionManifest
    /// The device's choice of variants this index resolves paths and tags for.
    public let variants: VariantPreferences
    private let packsByID: [String: Int]
    private let tagsByName: [String: Int]
    /// The position of each pack in `manifest.packs` by id (the first, should an id repeat).
    package var packPositions: [String: Int] { packsByID }
    /// The position of each tag in `manifest.tags` by name (the first, should a name repeat).
    package var tagPositions: [String: Int] { tagsByName }
    /// The files of a manifest decoded from its compact form: everything below is unused then.
    private let compactFiles: CompactFileTable?
    /// Positions of each path's files, or `nil` when `manifest.files` is sorted by path.
    private let filesByPath: [String: [Int]]?
    /// Positions in `manifest.files` of each pack's files, in manifest order; built on first use.
    private let filesByPack = Locked<[String: [Int]]?>(nil)
    /// The tags as this device sees them and the packs it chose; `nil` without variant axes.
    private var selection: Selection?

    private struct Selection: Sendable {
        var tags: [TagRecord]
        var chosenPacks: Set<String>
    }

    /// Indexes `manifest` for a device that chooses `variants` (by default, the manifest's
    /// declared order on every axis).
    public init(_ manifest: VersionManifest, variants: VariantPreferences = VariantPreferences()) {
        self.manifest = manifest
        self.variants = variants
        packsByID = Self.firstPositions(of: manifest.packs.lazy.map(\.id))
        tagsByName = Self.firstPositions(of: manifest.tags.lazy.map(\.name))
        switch manifest.fileTable {
        case .compact(let table):
            compactFiles = table
            filesByPath = nil
        case .records(let files):
            compactFiles = nil
            let sorted = files.indices.dropFirst().allSatisfy { files[$0 - 1].path <= files[$0].path }
            filesByPath = sorted ? nil : Dictionary(grouping: files.indices, by: { files[$0].path })
        }
        selection = nil
        if !manifest.variantAxes.isEmpty { selection = makeSelection() }
    }

    private static func firstPositions(of keys: some Collection<String>) -> [String: Int] {
        // One hash per key: the first position wins without a lookup before each insert.
        Dictionary(zip(keys, 0..<keys.count), uniquingKeysWith: { first, _ in first })
    }

    /// The pack with this id, chosen or not.
    public func pack(id: String) -> PackRecord? { packsByID[id].map { manifest.packs[$0] } }

    /// The tag with this name, listing only the packs this device chose and their sizes.
    public func tag(named name: String) -> TagRecord? {
        guard let position = tagsByName[name] else { return nil }
        return selection?.tags[position] ?? manifest.tags[position]
    }

    /// Every tag in manifest order, listing only the packs this device chose and their sizes.
    public var tags: [TagRecord] { selection?.tags ?? manifest.tags }

    /// Whether this device downloads pack `id` with its tags: every common pack is chosen, and a
    /// variant pack when it holds the chosen variant of at least one file.
    public func isChosen(packID id: String) -> Bool { selection?.chosenPacks.contains(id) ?? (packsByID[id] != nil) }

    /// The file at this logical path: of its variants, the one this device ranks best among those
    /// it accepts; `nil` when there is no file at the path or the device accepts none of its variants.
    public func file(atPath path: String) -> FileRecord? {
        let candidates = files(atPath: path)
        guard selection != nil else { return candidates.first }
        return preferred(among: candidates)
    }

    /// Every file at this logical path: one, or one per variant.
    public func files(atPath path: String) -> [FileRecord] {
        if let compactFiles { return compactFiles.files(atPath: path) }
        let files = manifest.files
        if let filesByPath { return filesByPath[path]?.map { files[$0] } ?? [] }
        var low = 0, high = files.count
        while low < high {
            let middle = (low + high) / 2
            if files[middle].path < path { low = middle + 1 } else { high = middle }
        }
        var found: [FileRecord] = []
        while low < files.count, files[low].path == path {
            found.append(files[low])
            low += 1
        }
        return found
    }

    /// The files pack `id` holds, in manifest order.
    public func files(inPack id: String) -> [FileRecord] {
        if let compactFiles { return packsByID[id].map { compactFiles.files(inPackAt: $0) } ?? [] }
        let positions = filesByPack.withLock { byPack in
            if byPack == nil {
                var grouped: [String: [Int]] = [:]
                grouped.reserveCapacity(manifest.packs.count)
                for (position, file) in manifest.files.enumerated() { grouped[file.pack, default: []].append(position) }
                byPack = grouped
            }
            return byPack?[id] ?? []
        }
        return positions.map { manifest.files[$0] }
    }

    /// The distinct entries of pack `id` in archive order; the same as
    /// ``VersionManifest/expectedEntries(inPack:)`` without reading every file of the manifest.
    public func expectedEntries(inPack id: String) -> [PackEntryExpectation] {
        PackEntryExpectation.distinctEntries(of: files(inPack: id))
    }

    /// The ids of the packs that a request for `tags` needs on this device, sorted; unknown tags
    /// are ignored.
    public func packs(forTags tags: some Sequence<String>) -> [String] {
        var ids = Set<String>()
        for name in tags { ids.formUnion(tag(named: name)?.packs ?? []) }
        return ids.sorted()
    }

    // MARK: Variants

    /// Of the variants of one path, the one whose values this device ranks best, axis by axis in
    /// the manifest's declared order; `nil` when it accepts none of them.
    private func preferred(among candidates: [FileRecord]) -> FileRecord? {
        guard candidates.count > 1 || candidates.first?.variant.isEmpty == false else { return candidates.first }
        let rankings = manifest.variantAxes.map { (axis: $0.name, values: variants.ranking(of: $0)) }
        var best: (file: FileRecord, ranks: [Int])?
        candidateLoop: for candidate in candidates {
            var ranks: [Int] = []
            for ranking in rankings {
                guard let value = candidate.variant[ranking.axis] else { continue }
                guard let rank = ranking.values.firstIndex(of: value) else { continue candidateLoop }
                ranks.append(rank)
            }
            if best.map({ ranks.lexicographicallyPrecedes($0.ranks) }) ?? true { best = (candidate, ranks) }
        }
        return best?.file
    }

    /// Resolves every variant path once: which packs this device downloads, and the tags seen
    /// through them. Reads only the files of variant packs.
    private func makeSelection() -> Selection {
        var chosen = Set(manifest.packs.lazy.filter(\.variant.isEmpty).map(\.id))
        var resolved = Set<String>()
        for pack in manifest.packs where !pack.variant.isEmpty {
            for file in files(inPack: pack.id) where resolved.insert(file.path).inserted {
                if let best = preferred(among: files(atPath: file.path)) { chosen.insert(best.pack) }
            }
        }
        let tags = manifest.tags.map { tag -> TagRecord in
            var view = tag
            view.packs = tag.packs.filter(chosen.contains)
            guard view.packs.count != tag.packs.count else { return tag }
            view.downloadBytes = 0
            view.installedBytes = 0
            for id in view.packs {
                guard let pack = pack(id: id) else { continue }
                // Clamped: a tag may list a pack twice, so validation's bound on the packs' sum is not enough.
                view.downloadBytes = view.downloadBytes.clampedAdding(pack.archiveBytes)
                view.installedBytes = view.installedBytes.clampedAdding(pack.installedBytes)
            }
            return view
        }
        return Selection(tags: tags, chosenPacks: chosen)
    }
}
