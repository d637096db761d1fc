import ODRRuntime

/// Installed packs in order of last use, in one or more lists (one per purge rank), as an intrusive
/// doubly linked list over pack indices: touching, adding and removing are O(1), and walking a list
/// yields its packs least recently used first.
struct RecencyList: Sendable {
    private var previous: [Int32]
    private var next: [Int32]
    private var listOf: [Int32]
    /// Entries at and above `packCount` are the lists' sentinels: `next[sentinel]` is the least
    /// recently used pack of the list, `previous[sentinel]` the most.
    private let packCount: Int32

    init(packCount: Int, lists: Int = 1) {
        self.packCount = Int32(packCount)
        previous = Array(repeating: -1, count: packCount + lists)
        next = Array(repeating: -1, count: packCount + lists)
        listOf = Array(repeating: -1, count: packCount)
        for list in 0 ..< lists {
            previous[packCount + list] = Int32(packCount + list)
            next[packCount + list] = Int32(packCount + list)
        }
    }

    /// Makes `pack` the most recently used of `list`; it must not be in any list.
    mutating func append(_ pack: PackIndex, to list: Int = 0) {
        let p = Int(pack.rawValue), sentinel = Int(packCount) + list
        let last = Int(previous[sentinel])
        previous[p] = Int32(last)
        next[p] = Int32(sentinel)
        next[last] = Int32(p)
        previous[sentinel] = Int32(p)
        listOf[p] = Int32(list)
    }

    /// Takes `pack` out of its list; it must be in one.
    mutating func remove(_ pack: PackIndex) {
        let p = Int(pack.rawValue)
        let before = Int(previous[p]), after = Int(next[p])
        next[before] = Int32(after)
        previous[after] = Int32(before)
        previous[p] = -1
        next[p] = -1
        listOf[p] = -1
    }

    /// Moves `pack`, which is in a list, to the most recently used end of that list.
    mutating func touch(_ pack: PackIndex) {
        let list = Int(listOf[pack.index])
        guard previous[Int(packCount) + list] != pack.rawValue else { return }
        remove(pack)
        append(pack, to: list)
    }

    /// The least recently used pack of `list`, or `nil` when it is empty.
    func first(in list: Int = 0) -> PackIndex? { pack(at: next[Int(packCount) + list]) }

    /// The pack used next after `pack` in its list, or `nil` when `pack` is the most recent.
    func after(_ pack: PackIndex) -> PackIndex? { self.pack(at: next[pack.index]) }

    private func pack(at entry: Int32) -> PackIndex? { entry < packCount ? PackIndex(rawValue: entry) : nil }
}
