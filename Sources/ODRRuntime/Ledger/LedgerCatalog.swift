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
    private let tagsByName: [String: TagIndex]
    private let packsByID: [String: PackIndex]

    /// Creates a catalog; tags keep the order of `tags`, packs the order of `packs`.
    ///
    /// - Throws: ``ResourceError`` `invalid-catalog` when a name repeats, a pack names a tag that is
    ///   not in `tags`, or a pack has a negative size.
    public init(tags: [String], packs: [Pack]) throws(ResourceError) {
        var tagsByName: [String: TagIndex] = [:]
        tagsByName.reserveCapacity(tags.count)
        for (i, name) in tags.enumerated() {
            guard tagsByName.updateValue(TagIndex(i), forKey: name) == nil else {
                throw ResourceError(.invalidCatalog, "The tag '\(name)' is listed twice; rebuild the catalog.")
            }
        }
        var packsByID: [String: PackIndex] = [:]
        packsByID.reserveCapacity(packs.count)
        // Two passes over the packs (count each tag's packs, then place them) fill one flat array
        // with no array per tag; packs are visited in order, so each tag's packs come out ascending.
        var packTags: [TagIndex] = []
        packTags.reserveCapacity(packs.count)
        var packTagEnd: [Int] = []
        packTagEnd.reserveCapacity(packs.count)
        var counts = [Int](repeating: 0, count: tags.count)
        for (i, pack) in packs.enumerated() {
            guard packsByID.updateValue(PackIndex(i), forKey: pack.id) == nil else {
                throw ResourceError(.invalidCatalog, "The pack '\(pack.id)' is listed twice; rebuild the catalog.")
            }
            guard pack.bytes >= 0 else {
                throw ResourceError(.invalidCatalog, "The pack '\(pack.id)' has a negative size (\(pack.bytes) bytes).")
            }
            let first = packTags.count
            for tag in pack.tags {
                guard let t = tagsByName[tag] else {
                    throw ResourceError(
                        .invalidTag, "The pack '\(pack.id)' belongs to the tag '\(tag)', which the catalog does not define.")
                }
                // A tag named twice by one pack counts once.
                if !packTags[first...].contains(t) {
                    packTags.append(t)
                    counts[t.index] += 1
                }
            }
            packTagEnd.append(packTags.count)
        }
        var start = [Int](repeating: 0, count: tags.count + 1)
        for t in 0..<tags.count { start[t + 1] = start[t] + counts[t] }
        var next = Array(start.dropLast())
        var flat = [PackIndex](repeating: PackIndex(0), count: start[tags.count])
        var from = 0
        for (i, end) in packTagEnd.enumerated() {
            for t in packTags[from..<end] {
                flat[next[t.index]] = PackIndex(i)
                next[t.index] += 1
            }
            from = end
        }
        self.tagNames = tags
        self.packIDs = packs.map(\.id)
        self.packBytes = packs.map(\.bytes)
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
    public func tag(named name: String) -> TagIndex? { tagsByName[name] }

    /// The pack with identifier `id`, if the catalog has it.
    public func pack(id: String) -> PackIndex? { packsByID[id] }

    /// The tags called `names`, in order.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` naming the first name the catalog does not define.
    public func tags(named names: some Sequence<String>) throws(ResourceError) -> [TagIndex] {
        var result: [TagIndex] = []
        for name in names {
            guard let tag = tagsByName[name] else {
                throw ResourceError(
                    .invalidTag, "The catalog has no tag '\(name)'. Check the spelling or update the catalog.")
            }
            result.append(tag)
        }
        return result
    }
}
