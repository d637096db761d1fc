import ODRRuntime

/// The installed packs not in use at the moment a policy must purge, as the simulator offers them:
/// all at once (``all()``), or lazily in the runtime's purge order
/// (``makePurgeOrderIterator(planner:)``), so that the runtime's planner reads only the packs it
/// deletes.
///
/// A view of the simulator's state during one purge; it must not outlive the purge.
public struct PurgeCandidates {
    /// How many use classes (``PurgePlanner/useClass(of:)``) each priority has lists for.
    static let useClasses = 63
    /// One recency list per priority and use class: list `rank * useClasses + useClass`, ranks by
    /// ascending priority.
    let ranks: RecencyList
    let rankPriorities: [Double]
    /// One more than the highest use class any pack has had: lists above it are empty.
    let useClassesSeen: Int
    /// The ledger's reference counts by pack: non-zero means in use.
    let inUse: [Int32]
    let packBytes: [Int64]
    let packs: [PackState]
    let packPriority: [Double]
    /// The simulated time of the purge, in seconds since the start.
    public let now: Double

    /// The lists that may hold packs: by ascending priority, then ascending use class.
    var lists: [Int] {
        rankPriorities.indices.flatMap { rank in (0 ..< useClassesSeen).map { rank * Self.useClasses + $0 } }
    }

    /// Every candidate, with ``PurgeCandidate/id`` the pack index: by ascending priority and use
    /// class, least recently used first within each.
    public func all() -> [PurgeCandidate] {
        var result: [PurgeCandidate] = []
        for list in lists {
            var cursor = ranks.first(in: list)
            while let pack = cursor {
                cursor = ranks.after(pack)
                if inUse[pack.index] == 0 { result.append(candidate(pack)) }
            }
        }
        return result
    }

    /// The highest preservation priority among the candidates.
    public var topPriority: Double {
        for list in lists.reversed() {
            var cursor = ranks.first(in: list)
            while let pack = cursor {
                if inUse[pack.index] == 0 { return rankPriorities[list / Self.useClasses] }
                cursor = ranks.after(pack)
            }
        }
        return 0
    }

    /// The candidates in `planner`'s purge order at ``now``: each list is in recency order, which
    /// among packs of one priority and use class is the planner's order, so merging the lists'
    /// heads by ``PurgePlanner/goesBefore(_:_:now:)`` yields the whole order.
    public func makePurgeOrderIterator(planner: PurgePlanner) -> PurgeOrderIterator {
        PurgeOrderIterator(candidates: self, planner: planner)
    }

    func candidate(_ pack: PackIndex) -> PurgeCandidate {
        PurgeCandidate(
            id: pack.index, bytes: packBytes[pack.index], lastUse: packs[pack.index].lastUse,
            preservationPriority: packPriority[pack.index], useCount: packs[pack.index].uses)
    }

    /// Merges the lists, skipping packs in use.
    public struct PurgeOrderIterator: IteratorProtocol {
        let candidates: PurgeCandidates
        let planner: PurgePlanner
        /// Per non-empty list, the list position after the head, and the head: the next candidate
        /// not in use.
        var cursors: [PackIndex?]
        var heads: [PurgeCandidate?]

        init(candidates: PurgeCandidates, planner: PurgePlanner) {
            self.candidates = candidates
            self.planner = planner
            cursors = candidates.lists.compactMap { candidates.ranks.first(in: $0) }
            heads = Array(repeating: nil, count: cursors.count)
            for rank in heads.indices { heads[rank] = advance(rank) }
        }

        private mutating func advance(_ rank: Int) -> PurgeCandidate? {
            while let pack = cursors[rank] {
                cursors[rank] = candidates.ranks.after(pack)
                if candidates.inUse[pack.index] == 0 { return candidates.candidate(pack) }
            }
            return nil
        }

        public mutating func next() -> PurgeCandidate? {
            var best: Int?
            for rank in heads.indices {
                guard let head = heads[rank] else { continue }
                if let current = best, let other = heads[current], !planner.goesBefore(head, other, now: candidates.now) { continue }
                best = rank
            }
            guard let rank = best else { return nil }
            defer { heads[rank] = advance(rank) }
            return heads[rank]
        }
    }
}
