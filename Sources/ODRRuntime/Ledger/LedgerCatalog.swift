import ODRFormat

/// The tags and packs a ``Ledger`` counts: which packs each tag needs and how many bytes each pack
/// takes once installed.
///
/// Built once per catalog version from names; afterwards everything is addressed by ``TagIndex`` and
/// ``PackIndex``, and each tag's packs sit in one contiguous array, so counting a request touches no
/// dictionary and allocates nothing.
///
/// ```swift
/// let catalog = try LedgerCatalog(
///     tags: ["level1", "level2"],
///     packs: [.init(id: "a1", bytes: 300 << 20, tags: ["level1"]),
///             .init(id: "s12", bytes: 80 << 20, tags: ["level1", "level2"])])
/// let level1 = try catalog.tags(named: ["level1"])
/// ```
public struct LedgerCatalog: Sendable {
    /// A pack as the ledger sees it.
    public struct Pack: Sendable, Equatable {
        /// The pack's identifier (in a catalog, the SHA-256 of its archive).
        public var id: String
        /// The bytes it takes once installed: what counts against the in-use limit.
        public var bytes: Int64
        /// The tags whose requests need this pack.
        public var tags: [String]

        /// Describes a pack by its id, installed size and tags.
        public init(id: String, bytes: Int64, tags: [String]) {
            self.id = id
            self.bytes = bytes
            self.tags = tags
        }
    }

    /// Tag names, by ``TagIndex``.
    public let tagNames: [String]
    /// Pack identifiers, by ``PackIndex``.
    public let packIDs: [String]
    /// Installed bytes, by ``PackIndex``.
    public let packBytes: [Int64]
    /// `tagPacks[tagPackStart[t] ..< tagPackStart[t + 1]]` are the packs of tag `t`, ascending.
    let tagPackStart: [Int]
    let tagPacks: [PackIndex]
    /// Positions by name: the same dictionaries as the manifest's index when built from one.
    private let tagsByName: [String: Int]
    private let packsByID: [String: Int]

    /// Creates a catalog; tags keep the order of `tags`, packs the order of `packs`.
    ///
    /// - Throws: ``ResourceError`` `invalid-catalog` when a name repeats, a pack names a tag that is
    ///   not in `tags`, or a pack has a negative size.
    public init(tags: [String], packs: [Pack]) throws(ResourceError) {
        var tagsByName: [String: Int] = [:]
        tagsByName.reserveCapacity(tags.count)
        for (i, name) in tags.enumerated() where tagsByName.updateValue(i, forKey: name) != nil {
            throw ResourceError(.invalidCatalog, "The tag '\(name)' is listed twice; rebuild the catalog.")
        }
        var packsByID: [String: Int] = [:]
        packsByID.reserveCapacity(packs.count)
        for (i, pack) in packs.enumerated() where packsByID.updateValue(i, forKey: pack.id) != nil {
            throw ResourceError(.invalidCatalog, "The pack '\(pack.id)' is listed twice; rebuild the catalog.")
        }
        try self.init(tagNames: tags, tagsByName: tagsByName, packIDs: packs.map(\.id), packsByID: packsByID,
                      packBytes: packs.map(\.bytes), tagsOfPack: { packs[$0].tags })
    }

    /// The catalog of a version manifest as one device sees it: its tags and packs in manifest
    /// order, sizes as installed, each tag needing only the packs of ``ManifestIndex/tags`` (the
    /// common packs and those of the device's chosen variants).
    ///
    /// Every pack keeps its place (so a pack's index is its position in the manifest), but a pack
    /// of a variant the device did not choose belongs to no tag: no request counts it, and it is
    /// never in use. Shares the index's dictionaries instead of building its own, which matters
    /// when a manager opens a catalog of 10,000 tags.
    ///
    /// - Throws: ``ResourceError`` `invalid-catalog` as ``init(tags:packs:)`` does.
    public init(manifest index: ManifestIndex) throws(ResourceError) {
        let manifest = index.manifest
        let packs = manifest.packs
        // A validated manifest lists a pack under a tag exactly when the pack names the tag, so the
        // chosen packs' own tag sets give the same lists as `index.tags`, without a pass per tag.
        let tagsOfPack: (Int) -> [String] = manifest.variantAxes.isEmpty
            ? { packs[$0].tags }
            : { index.isChosen(packID: packs[$0].id) ? packs[$0].tags : [] }
        guard index.tagPositions.count == manifest.tags.count, index.packPositions.count == packs.count else {
            // A name repeats; the other initializer says which.
            try self.init(tags: manifest.tags.map(\.name),
                          packs: packs.indices.map { Pack(id: packs[$0].id, bytes: packs[$0].installedBytes, tags: tagsOfPack($0)) })
            return
        }
        try self.init(tagNames: manifest.tags.map(\.name), tagsByName: index.tagPositions, packIDs: packs.map(\.id),
                      packsByID: index.packPositions, packBytes: packs.map(\.installedBytes), tagsOfPack: tagsOfPack)
    }

    private init(tagNames: [String], tagsByName: [String: Int], packIDs: [String], packsByID: [String: Int],
                 packBytes: [Int64], tagsOfPack: (Int) -> [String]) throws(ResourceError) {
        // Two passes over the packs (count each tag's packs, then place them) fill one flat array
        // with no array per tag; packs are visited in order, so each tag's packs come out ascending.
        var packTags: [TagIndex] = []
        packTags.reserveCapacity(packIDs.count)
        var packTagEnd: [Int] = []
        packTagEnd.reserveCapacity(packIDs.count)
        var counts = [Int](repeating: 0, count: tagNames.count)
        for i in packIDs.indices {
            guard packBytes[i] >= 0 else {
                throw ResourceError(.invalidCatalog, "The pack '\(packIDs[i])' has a negative size (\(packBytes[i]) bytes).")
            }
            let first = packTags.count
            for tag in tagsOfPack(i) {
                guard let position = tagsByName[tag] else {
                    throw ResourceError(
                        .invalidTag, "The pack '\(packIDs[i])' belongs to the tag '\(tag)', which the catalog does not define.")
                }
                let t = TagIndex(position)
                // A tag named twice by one pack counts once.
                if !packTags[first...].contains(t) {
                    packTags.append(t)
                    counts[position] += 1
                }
            }
            packTagEnd.append(packTags.count)
        }
        var start = [Int](repeating: 0, count: tagNames.count + 1)
        for t in 0..<tagNames.count { start[t + 1] = start[t] + counts[t] }
        var next = Array(start.dropLast())
        var flat = [PackIndex](repeating: PackIndex(0), count: start[tagNames.count])
        var from = 0
        for (i, end) in packTagEnd.enumerated() {
            for t in packTags[from..<end] {
                flat[next[t.index]] = PackIndex(i)
                next[t.index] += 1
            }
            from = end
        }
        self.tagNames = tagNames
        self.packIDs = packIDs
        self.packBytes = packBytes
        self.tagPackStart = start
        self.tagPacks = flat
        self.tagsByName = tagsByName
        self.packsByID = packsByID
    }

    /// The number of tags.
    public var tagCount: Int { tagNames.count }

    /// The number of packs.
    public var packCount: Int { packIDs.count }

    /// The packs a request for `tag` needs, ascending by index.
    public func packs(of tag: TagIndex) -> ArraySlice<PackIndex> {
        tagPacks[tagPackStart[tag.index] ..< tagPackStart[tag.index + 1]]
    }

    /// The installed size of `pack`.
    public func bytes(of pack: PackIndex) -> Int64 { packBytes[pack.index] }

    /// The tag called `name`, if the catalog defines it.
    public func tag(named name: String) -> TagIndex? { tagsByName[name].map(TagIndex.init) }

    /// The pack with identifier `id`, if the catalog has it.
    public func pack(id: String) -> PackIndex? { packsByID[id].map(PackIndex.init) }

    /// The tags called `names`, in order.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` naming the first name the catalog does not define.
    public func tags(named names: some Sequence<String>) throws(ResourceError) -> [TagIndex] {
        var result: [TagIndex] = []
        for name in names {
            guard let tag = tagsByName[name].map(TagIndex.init) else {
                throw ResourceError(
                    .invalidTag, "The catalog has no tag '\(name)'. Check the spelling or update the catalog.")
            }
            result.append(tag)
        }
        return result
    }
}
