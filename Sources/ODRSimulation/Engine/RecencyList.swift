import ODRRuntime

/// Installed packs in order of last use, in one list per purge rank, as an intrusive doubly linked
/// list over pack indices: touching, adding and removing are O(1), and walking a list yields its
/// packs least recently used first.
///
/// A class over raw buffers because it is the simulator's innermost loop: no copy-on-write checks,
/// no reference counting per step. Used by one simulation run on one thread.
final class RecencyList {
    /// Entries at and above `packCount` are the lists' sentinels: `next[sentinel]` is the least
    /// recently used pack of the list, `previous[sentinel]` the most.
    private let previous: UnsafeMutableBufferPointer<Int32>
    private let next: UnsafeMutableBufferPointer<Int32>
    private let listOf: UnsafeMutableBufferPointer<Int32>
    private let packCount: Int32
    /// The number of lists.
    let lists: Int

    init(packCount: Int, lists: Int) {
        self.packCount = Int32(packCount)
        self.lists = lists
        previous = .allocate(capacity: packCount + lists)
        next = .allocate(capacity: packCount + lists)
        listOf = .allocate(capacity: max(packCount, 1))
        previous.initialize(repeating: -1)
        next.initialize(repeating: -1)
        listOf.initialize(repeating: -1)
        for list in 0 ..< lists {
            previous[packCount + list] = Int32(packCount + list)
            next[packCount + list] = Int32(packCount + list)
        }
    }

    deinit {
        previous.deallocate()
        next.deallocate()
        listOf.deallocate()
    }

    /// Whether `pack` is in a list.
    func contains(_ pack: PackIndex) -> Bool { listOf[pack.index] >= 0 }

    /// Makes `pack` the most recently used of `list`; it must not be in any list.
    func append(_ pack: PackIndex, to list: Int) {
        let sentinel = Int(packCount) + list
        link(pack, after: Int(previous[sentinel]), list: list)
    }

    /// Makes `pack` the least recently used of `list`; it must not be in any list.
    func prepend(_ pack: PackIndex, to list: Int) {
        link(pack, after: Int(packCount) + list, list: list)
    }

    /// Puts `pack` into `list` right after entry `before` (a pack of the list or its sentinel).
    private func link(_ pack: PackIndex, after before: Int, list: Int) {
        let p = pack.index, after = Int(next[before])
        previous[p] = Int32(before)
        next[p] = Int32(after)
        next[before] = Int32(p)
        previous[after] = Int32(p)
        listOf[p] = Int32(list)
    }

    /// Takes `pack` out of its list; it must be in one.
    func remove(_ pack: PackIndex) {
        let p = pack.index
        let before = Int(previous[p]), after = Int(next[p])
        next[before] = Int32(after)
        previous[after] = Int32(before)
        listOf[p] = -1
    }

    /// Moves `pack`, which is in a list, to the most recently used end of that list.
    func touch(_ pack: PackIndex) {
        let list = Int(listOf[pack.index])
        guard previous[Int(packCount) + list] != pack.rawValue else { return }
        remove(pack)
        append(pack, to: list)
    }

    /// The least recently used pack of `list`, or `nil` when it is empty.
    func first(in list: Int) -> PackIndex? { pack(at: next[Int(packCount) + list]) }

    /// The pack used next after `pack` in its list, or `nil` when `pack` is the most recent.
    func after(_ pack: PackIndex) -> PackIndex? { self.pack(at: next[pack.index]) }

    private func pack(at entry: Int32) -> PackIndex? { entry < packCount ? PackIndex(rawValue: entry) : nil }
}
