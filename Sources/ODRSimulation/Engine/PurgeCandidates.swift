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
    /// By pack, the likelihood of the likeliest live hint naming it (0: none); empty for policies
    /// that take no hints (so that a purge retains no array of hints it does not read).
    let packHint: [Double]
    /// The installed packs not in use that a live hint names, each once: few (what the game expects
    /// next), so they are sorted at each purge rather than kept in lists.
    let hintedPacks: [PackIndex]
    /// The simulated time of the purge, in seconds since the start.
    public let now: Double

    /// The lists of the priority of `rank` that may hold packs, by ascending use class.
    func lists(ofRank rank: Int) -> Range<Int> {
        rank * Self.useClasses ..< rank * Self.useClasses + useClassesSeen
    }

    /// Every candidate, with ``PurgeCandidate/id`` the pack index: by ascending priority and use
    /// class, least recently used first within each (hinted packs among them, with their likelihood).
    public func all() -> [PurgeCandidate] {
        var result: [PurgeCandidate] = []
        for rank in rankPriorities.indices {
            for list in lists(ofRank: rank) {
                var cursor = ranks.first(in: list)
                while let pack = cursor {
                    cursor = ranks.after(pack)
                    if inUse[pack.index] == 0 { result.append(candidate(pack)) }
                }
            }
        }
        return result
    }

    /// The highest preservation priority among the candidates.
    public var topPriority: Double {
        for rank in rankPriorities.indices.reversed() {
            for list in lists(ofRank: rank) {
                var cursor = ranks.first(in: list)
                while let pack = cursor {
                    if inUse[pack.index] == 0 { return rankPriorities[rank] }
                    cursor = ranks.after(pack)
                }
            }
        }
        return 0
    }

    /// The candidates in `planner`'s purge order at ``now``: each list is in recency order, which
    /// among packs of one priority and use class is the planner's order, so merging the lists'
    /// heads by ``PurgePlanner/goesBefore(_:_:now:)`` yields the whole order of the unhinted packs;
    /// the hinted packs, which go after them all, follow sorted.
    public __consuming func makePurgeOrderIterator(planner: PurgePlanner) -> PurgeOrderIterator {
        PurgeOrderIterator(candidates: self, planner: planner)
    }

    /// The likeliest live hint naming `pack`, 0 when none does.
    func hintLikelihood(of pack: PackIndex) -> Double {
        packHint.isEmpty ? 0 : packHint[pack.index]
    }

    func candidate(_ pack: PackIndex) -> PurgeCandidate {
        PurgeCandidate(
            id: pack.index, bytes: packBytes[pack.index], lastUse: packs[pack.index].lastUse,
            preservationPriority: packPriority[pack.index], useCount: packs[pack.index].uses,
            hintLikelihood: hintLikelihood(of: pack))
    }

    /// Merges the lists, skipping packs in use.
    public struct PurgeOrderIterator: IteratorProtocol {
        /// One non-empty list: the position after its head, its head (the next pack not in use),
        /// the ageing rate all its packs share, and the head's weighted idle time.
        struct Head {
            var cursor: PackIndex?
            var pack: PackIndex?
            var rate: Double
            var weightedIdleTime = 0.0
        }

        let candidates: PurgeCandidates
        let planner: PurgePlanner
        /// Whether heads compare by weighted idle time first, as ``PurgePlanner/goesBefore(_:_:now:)``
        /// does unless priority is a strict first key.
        let comparesWeightedIdleTimes: Bool
        var lists: [Head] = []
        /// The hinted candidates in purge order, read once the lists are exhausted.
        var hinted: [PurgeCandidate] = []
        var hintedPosition = 0

        init(candidates: __owned PurgeCandidates, planner: PurgePlanner) {
            self.candidates = candidates
            self.planner = planner
            comparesWeightedIdleTimes = planner.priorityHalvingStep > 0
            lists.reserveCapacity(self.candidates.rankPriorities.count * self.candidates.useClassesSeen)
            for rank in self.candidates.rankPriorities.indices {
                let range = self.candidates.lists(ofRank: rank)
                var priorityRate: Double?
                for list in range {
                    guard let first = self.candidates.ranks.first(in: list) else { continue }
                    // The planner's own rate for the list's priority and use class, so that the
                    // weighted idle times below are bit for bit the planner's.
                    let rate = priorityRate ?? planner.agingRate(priority: self.candidates.rankPriorities[rank])
                    priorityRate = rate
                    lists.append(Head(cursor: first, pack: nil, rate: planner.agingRate(priorityRate: rate, useCount: 1 << (list - range.lowerBound))))
                }
            }
            for list in lists.indices { advance(list) }
            if !self.candidates.hintedPacks.isEmpty {
                hinted = self.candidates.hintedPacks.map { self.candidates.candidate($0) }
                hinted.sort { planner.goesBefore($0, $1, now: self.candidates.now) }
            }
        }

        private mutating func advance(_ list: Int) {
            while let pack = lists[list].cursor {
                lists[list].cursor = candidates.ranks.after(pack)
                if candidates.inUse[pack.index] == 0, !(candidates.hintLikelihood(of: pack) > 0) {
                    lists[list].pack = pack
                    lists[list].weightedIdleTime = max(0, candidates.now - candidates.packs[pack.index].lastUse) * lists[list].rate
                    return
                }
            }
            lists[list].pack = nil
        }

        public mutating func next() -> PurgeCandidate? {
            var best = -1
            for list in lists.indices {
                guard let head = lists[list].pack else { continue }
                if best >= 0 {
                    let (mine, theirs) = (lists[list].weightedIdleTime, lists[best].weightedIdleTime)
                    if comparesWeightedIdleTimes, mine != theirs {
                        if mine < theirs { continue }
                    } else if !planner.goesBefore(
                        candidates.candidate(head), candidates.candidate(lists[best].pack!), now: candidates.now) {
                        continue
                    }
                }
                best = list
            }
            guard best >= 0, let pack = lists[best].pack else {
                guard hintedPosition < hinted.count else { return nil }
                defer { hintedPosition += 1 }
                return hinted[hintedPosition]
            }
            advance(best)
            return candidates.candidate(pack)
        }
    }
}
