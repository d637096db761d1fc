/// In-memory reference counts of tags and packs across all requests of a manager, and the bytes in use.
///
/// A tag is *in use* while at least one request that began it has not ended; a pack is in use while
/// any in-use tag needs it. In-use packs are never purged, and their total installed size may not
/// exceed ``inUseLimit``: ``begin(_:)-(ArraySlice<TagIndex>)`` refuses, and changes nothing, when it
/// would.
///
/// The ledger is a value with no clock and no I/O. The resource manager keeps one behind a lock (`Locked`);
/// `odrsim` drives one directly, millions of times per second.
///
/// ```swift
/// var ledger = Ledger(catalog: catalog, inUseLimit: 2 << 30)
/// let tags = try catalog.tags(named: ["level3"])
/// try ledger.begin(tags)          // throws `exceeded-maximum-in-use-size` and changes nothing
/// ledger.isInUse(somePack)        // true while level3 is held
/// try ledger.end(tags)
/// ```
public struct Ledger: Sendable {
    /// The in-use limit managers start with: 2 GiB.
    public static let defaultInUseLimit: Int64 = 2 << 30

    /// The tags and packs being counted.
    public let catalog: LedgerCatalog
    /// The most installed bytes that may be in use at once. Lowering it below ``inUseBytes`` refuses
    /// further growth but never ends what is already in use.
    public var inUseLimit: Int64
    /// The installed bytes of the packs in use.
    public private(set) var inUseBytes: Int64 = 0
    /// How many requests hold each tag, by ``TagIndex``.
    private var tagCounts: [Int32]
    /// How many in-use tags need each pack, by ``PackIndex``: non-zero means in use. For callers
    /// that scan many packs (the simulator) without a call per pack.
    public private(set) var packReferenceCounts: [Int32]

    /// Creates a ledger in which nothing is in use.
    public init(catalog: LedgerCatalog, inUseLimit: Int64 = Ledger.defaultInUseLimit) {
        self.catalog = catalog
        self.inUseLimit = inUseLimit
        tagCounts = Array(repeating: 0, count: catalog.tagCount)
        packReferenceCounts = Array(repeating: 0, count: catalog.packCount)
    }

    /// This ledger's counts moved to `catalog`, a larger description of the same version (a split
    /// catalog that describes more tags now): every tag keeps its ``TagIndex``, so the tags requests
    /// hold stay valid, and each held tag is counted again against the packs `catalog` gives it.
    ///
    /// - Returns: `nil` when `catalog` does not list this ledger's tags first, in the same order.
    public func carried(to catalog: LedgerCatalog) -> Ledger? {
        guard catalog.tagCount >= self.catalog.tagCount,
              self.catalog.tagNames.indices.allSatisfy({ self.catalog.tagNames[$0] == catalog.tagNames[$0] }) else { return nil }
        var next = Ledger(catalog: catalog, inUseLimit: .max)
        for (index, count) in tagCounts.enumerated() where count > 0 {
            for _ in 0..<count { next.retain(TagIndex(index)) }
        }
        next.inUseLimit = inUseLimit
        return next
    }

    /// Counts one more request for each of `tags` (a tag listed twice is counted twice).
    ///
    /// - Returns: the installed bytes that became in use (packs already in use cost nothing).
    /// - Throws: ``ResourceError`` `exceeded-maximum-in-use-size` when the packs in use would then take
    ///   more than ``inUseLimit``; the ledger is then unchanged.
    @discardableResult
    public mutating func begin(_ tags: ArraySlice<TagIndex>) throws(ResourceError) -> Int64 {
        try count(beginning: tags)
    }

    /// Counts one more request for each of `tags`; see ``begin(_:)-(ArraySlice<TagIndex>)``.
    ///
    /// For callers that keep the tags of many requests in one buffer and lend a part of it (the
    /// simulator, for each of millions of requests): a slice of an array would be retained and
    /// released at every call.
    @discardableResult
    public mutating func begin(_ tags: UnsafeBufferPointer<TagIndex>) throws(ResourceError) -> Int64 {
        try count(beginning: tags)
    }

    /// ``begin(_:)-(ArraySlice<TagIndex>)`` for any collection of tags.
    private mutating func count(beginning tags: some BidirectionalCollection<TagIndex>) throws(ResourceError) -> Int64 {
        let before = inUseBytes
        for tag in tags { retain(tag) }
        let added = inUseBytes - before
        if inUseBytes > inUseLimit, added > 0 {
            for tag in tags.reversed() { release(tag) }
            throw ResourceError(
                .exceededMaximumInUseSize,
                "Beginning these tags would put \(before + added) bytes in use, over the limit of \(inUseLimit) bytes (\(before) already in use). End requests you no longer need, or raise the in-use limit.")
        }
        return added
    }

    /// Counts one more request for each of `tags`; see ``begin(_:)-(ArraySlice<TagIndex>)``.
    @discardableResult
    public mutating func begin(_ tags: [TagIndex]) throws(ResourceError) -> Int64 {
        try begin(tags[...])
    }

    /// Counts one request fewer for each of `tags`, releasing packs no in-use tag needs any more.
    ///
    /// - Returns: the installed bytes that stopped being in use.
    /// - Throws: ``ResourceError`` `end-before-begin` when a tag is ended more often than it was
    ///   begun; the ledger is then unchanged.
    @discardableResult
    public mutating func end(_ tags: ArraySlice<TagIndex>) throws(ResourceError) -> Int64 {
        try count(ending: tags)
    }

    /// Counts one request fewer for each of `tags`; see ``end(_:)-(ArraySlice<TagIndex>)``, and
    /// ``begin(_:)-(UnsafeBufferPointer<TagIndex>)`` for when to lend a buffer.
    @discardableResult
    public mutating func end(_ tags: UnsafeBufferPointer<TagIndex>) throws(ResourceError) -> Int64 {
        try count(ending: tags)
    }

    /// ``end(_:)-(ArraySlice<TagIndex>)`` for any collection of tags.
    private mutating func count(ending tags: some BidirectionalCollection<TagIndex>) throws(ResourceError) -> Int64 {
        let before = inUseBytes
        for (position, tag) in zip(tags.indices, tags) {
            guard tagCounts[tag.index] > 0 else {
                for earlier in tags[..<position].reversed() { retain(earlier) }
                throw ResourceError(
                    .endBeforeBegin,
                    "The tag '\(catalog.tagNames[tag.index])' is ended more often than it was begun; end each request once.")
            }
            release(tag)
        }
        return before - inUseBytes
    }

    /// Counts one request fewer for each of `tags`; see ``end(_:)-(ArraySlice<TagIndex>)``.
    @discardableResult
    public mutating func end(_ tags: [TagIndex]) throws(ResourceError) -> Int64 {
        try end(tags[...])
    }

    /// Whether any in-use tag needs `pack`.
    public func isInUse(_ pack: PackIndex) -> Bool { packReferenceCounts[pack.index] > 0 }

    /// Whether any request holds `tag`.
    public func isInUse(_ tag: TagIndex) -> Bool { tagCounts[tag.index] > 0 }

    /// How many requests hold `tag`.
    public func referenceCount(of tag: TagIndex) -> Int { Int(tagCounts[tag.index]) }

    /// How many in-use tags need `pack`.
    public func referenceCount(of pack: PackIndex) -> Int { Int(packReferenceCounts[pack.index]) }

    /// The installed bytes that beginning `tags` would put in use now, without changing anything.
    public func additionalBytes(toBegin tags: some Sequence<TagIndex>) -> Int64 {
        var counted = Set<PackIndex>()
        var bytes: Int64 = 0
        for tag in tags where tagCounts[tag.index] == 0 {
            for pack in catalog.packs(of: tag) where packReferenceCounts[pack.index] == 0 && counted.insert(pack).inserted {
                bytes += catalog.packBytes[pack.index]
            }
        }
        return bytes
    }

    private mutating func retain(_ tag: TagIndex) {
        tagCounts[tag.index] += 1
        guard tagCounts[tag.index] == 1 else { return }
        // Positions in the catalog's flat arrays rather than `packs(of:)`: no slice to retain per tag.
        for position in catalog.tagPackStart[tag.index] ..< catalog.tagPackStart[tag.index + 1] {
            let pack = catalog.tagPacks[position].index
            packReferenceCounts[pack] += 1
            if packReferenceCounts[pack] == 1 { inUseBytes += catalog.packBytes[pack] }
        }
    }

    private mutating func release(_ tag: TagIndex) {
        tagCounts[tag.index] -= 1
        guard tagCounts[tag.index] == 0 else { return }
        for position in catalog.tagPackStart[tag.index] ..< catalog.tagPackStart[tag.index + 1] {
            let pack = catalog.tagPacks[position].index
            packReferenceCounts[pack] -= 1
            if packReferenceCounts[pack] == 0 { inUseBytes -= catalog.packBytes[pack] }
        }
    }
}
