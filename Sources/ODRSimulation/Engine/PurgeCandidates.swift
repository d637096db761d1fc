import ODRRuntime

/// The installed packs not in use at the moment a policy must purge, as the simulator offers them:
/// all at once (``all()``), or lazily in the runtime's purge order (``makePurgeOrderIterator()``),
/// so that the runtime's planner reads only the packs it deletes.
///
/// A view of the simulator's state during one purge; it must not outlive the purge.
public struct PurgeCandidates {
    /// One recency list per rank, by ascending priority.
    let ranks: RecencyList
    let rankPriorities: [Double]
    /// The ledger's reference counts by pack: non-zero means in use.
    let inUse: [Int32]
    let packBytes: [Int64]
    let packs: [PackState]
    let packPriority: [Double]

    /// Every candidate, with ``PurgeCandidate/id`` the pack index, in purge order: by ascending
    /// priority, least recently used first within each.
    public func all() -> [PurgeCandidate] { Array(IteratorSequence(makePurgeOrderIterator())) }

    /// The highest preservation priority among the candidates.
    public var topPriority: Double {
        for rank in rankPriorities.indices.reversed() {
            var cursor = ranks.first(in: rank)
            while let pack = cursor {
                if inUse[pack.index] == 0 { return rankPriorities[rank] }
                cursor = ranks.after(pack)
            }
        }
        return 0
    }

    /// The candidates by ascending preservation priority, least recently used first within each.
    public func makePurgeOrderIterator() -> PurgeOrderIterator { PurgeOrderIterator(candidates: self) }

    func candidate(_ pack: PackIndex) -> PurgeCandidate {
        PurgeCandidate(
            id: pack.index, bytes: packBytes[pack.index], lastUse: packs[pack.index].lastUse,
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
                    if candidates.inUse[pack.index] == 0 { return candidates.candidate(pack) }
                } else {
                    rank += 1
                    guard rank < candidates.rankPriorities.count else { return nil }
                    cursor = candidates.ranks.first(in: rank)
                }
            }
        }
    }
}
