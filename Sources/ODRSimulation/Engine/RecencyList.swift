import ODRRuntime

/// The installed packs in order of last use, as an intrusive doubly linked list over pack indices:
/// touching, adding and removing are O(1), and walking it yields candidates least recently used first.
struct RecencyList {
    private var previous: [Int32]
    private var next: [Int32]
    /// `next[sentinel]` is the least recently used pack, `previous[sentinel]` the most.
    private let sentinel: Int32

    init(count: Int) {
        sentinel = Int32(count)
        previous = Array(repeating: -1, count: count + 1)
        next = Array(repeating: -1, count: count + 1)
        previous[count] = sentinel
        next[count] = sentinel
    }

    /// Makes `pack` the most recently used; it must not be in the list.
    mutating func append(_ pack: PackIndex) {
        let p = pack.rawValue, last = previous[Int(sentinel)]
        previous[Int(p)] = last
        next[Int(p)] = sentinel
        next[Int(last)] = p
        previous[Int(sentinel)] = p
    }

    /// Takes `pack` out of the list; it must be in it.
    mutating func remove(_ pack: PackIndex) {
        let p = Int(pack.rawValue)
        let before = previous[p], after = next[p]
        next[Int(before)] = after
        previous[Int(after)] = before
        previous[p] = -1
        next[p] = -1
    }

    /// Moves `pack`, which is in the list, to the most recently used end.
    mutating func touch(_ pack: PackIndex) {
        guard previous[Int(sentinel)] != pack.rawValue else { return }
        remove(pack)
        append(pack)
    }

    /// The least recently used pack, or `nil` when the list is empty.
    var first: PackIndex? { next[Int(sentinel)] == sentinel ? nil : PackIndex(rawValue: next[Int(sentinel)]) }

    /// The pack used next after `pack`, or `nil` when `pack` is the most recently used.
    func after(_ pack: PackIndex) -> PackIndex? {
        let p = next[pack.index]
        return p == sentinel ? nil : PackIndex(rawValue: p)
    }
}
