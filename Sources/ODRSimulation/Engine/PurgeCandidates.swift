import ODRRuntime

/// The installed packs not in use at the moment a policy must purge, as the simulator offers them:
/// all at once in recency order (``all()``), or lazily in the runtime's purge order
/// (``makePurgeOrderIterator()``), so that the runtime's planner reads only the packs it deletes.
///
/// A snapshot: it shares the simulator's arrays (copy on write) and must not outlive the purge.
public struct PurgeCandidates {
    let recency: RecencyList
    /// One recency list per rank, by ascending priority.
    let ranks: RecencyList
    let rankPriorities: [Double]
    let ledger: Ledger
    let lastUse: [Double]
    let packPriority: [Double]

    /// Every candidate, least recently used first, with ``PurgeCandidate/id`` the pack index.
    public func all() -> [PurgeCandidate] {
        var result: [PurgeCandidate] = []
        var cursor = recency.first()
        while let pack = cursor {
            cursor = recency.after(pack)
            if !ledger.isInUse(pack) { result.append(candidate(pack)) }
        }
        return result
    }

    /// The highest preservation priority among the candidates.
    public var topPriority: Double {
        for rank in rankPriorities.indices.reversed() {
            var cursor = ranks.first(in: rank)
            while let pack = cursor {
                if !ledger.isInUse(pack) { return rankPriorities[rank] }
                cursor = ranks.after(pack)
            }
        }
        return 0
    }

    /// The candidates by ascending preservation priority, least recently used first within each.
    public func makePurgeOrderIterator() -> PurgeOrderIterator { PurgeOrderIterator(candidates: self) }

    func candidate(_ pack: PackIndex) -> PurgeCandidate {
        PurgeCandidate(
            id: pack.index, bytes: ledger.catalog.packBytes[pack.index], lastUse: lastUse[pack.index],
            preservationPriority: packPriority[pack.index])
    }

    /// Walks the rank lists lowest priority first, skipping packs in use.
    public struct PurgeOrderIterator: IteratorProtocol {
        let candidates: PurgeCandidates
        var rank = 0
        var cursor: PackIndex?

        init(candidates: PurgeCandidates) {
            self.candidates = candidates
            cursor = candidates.rankPriorities.isEmpty ? nil : candidates.ranks.first(in: 0)
        }

        public mutating func next() -> PurgeCandidate? {
            while true {
                if let pack = cursor {
                    cursor = candidates.ranks.after(pack)
                    if !candidates.ledger.isInUse(pack) { return candidates.candidate(pack) }
                } else {
                    rank += 1
                    guard rank < candidates.rankPriorities.count else { return nil }
                    cursor = candidates.ranks.first(in: rank)
                }
            }
        }
    }
}
