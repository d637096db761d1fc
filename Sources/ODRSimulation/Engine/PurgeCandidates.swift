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
        /// One non-empty list: its head (the next pack not in use, -1 once the list is exhausted),
        /// the position after it (-1: the end), the ageing rate all its packs share, and the head's
        /// weighted idle time (minus infinity once exhausted, below any head's). Raw indices rather
        /// than optionals, so that the scan of the heads at each step reads 24 bytes a list.
        struct Head {
            var weightedIdleTime = -Double.infinity
            var rate: Double
            var pack: Int32 = -1
            var cursor: Int32
        }

        let candidates: PurgeCandidates
        let planner: PurgePlanner
        /// Whether heads compare by weighted idle time first, as ``PurgePlanner/goesBefore(_:_:now:)``
        /// does unless priority is a strict first key.
        let comparesWeightedIdleTimes: Bool
        var lists: [Head]
        /// The hinted candidates in purge order, read once the lists are exhausted.
        var hinted: [PurgeCandidate]
        var hintedPosition: Int

        init(candidates: __owned PurgeCandidates, planner: PurgePlanner) {
            // Built in locals and stored at once at the end: reading the candidates through `self`
            // while the iterator was half built made the compiler copy them (retaining every
            // array), and a property stored early made it copy the whole iterator, once per purge.
            let comparesWeightedIdleTimes = planner.priorityHalvingStep > 0
            var lists: [Head] = []
            lists.reserveCapacity(candidates.rankPriorities.count * candidates.useClassesSeen)
            for rank in candidates.rankPriorities.indices {
                let range = candidates.lists(ofRank: rank)
                var priorityRate: Double?
                for list in range {
                    guard let first = candidates.ranks.first(in: list) else { continue }
                    // The planner's own rate for the list's priority and use class, so that the
                    // weighted idle times below are bit for bit the planner's.
                    let rate = priorityRate ?? planner.agingRate(priority: candidates.rankPriorities[rank])
                    priorityRate = rate
                    var head = Head(rate: planner.agingRate(priorityRate: rate, useCount: 1 << (list - range.lowerBound)), cursor: first.rawValue)
                    Self.advance(&head, in: candidates)
                    lists.append(head)
                }
            }
            var hinted: [PurgeCandidate] = []
            if !candidates.hintedPacks.isEmpty {
                hinted = candidates.hintedPacks.map { candidates.candidate($0) }
                hinted.sort { planner.goesBefore($0, $1, now: candidates.now) }
            }
            self.candidates = candidates
            self.planner = planner
            self.comparesWeightedIdleTimes = comparesWeightedIdleTimes
            self.lists = lists
            self.hinted = hinted
            hintedPosition = 0
        }

        /// Moves `head` to the next pack of its list not in use and not hinted, or marks it exhausted.
        private static func advance(_ head: inout Head, in candidates: PurgeCandidates) {
            var cursor = head.cursor
            while cursor >= 0 {
                let pack = PackIndex(rawValue: cursor)
                cursor = candidates.ranks.after(pack)?.rawValue ?? -1
                if candidates.inUse[pack.index] == 0, !(candidates.hintLikelihood(of: pack) > 0) {
                    head.pack = pack.rawValue
                    head.cursor = cursor
                    head.weightedIdleTime = max(0, candidates.now - candidates.packs[pack.index].lastUse) * head.rate
                    return
                }
            }
            head.pack = -1
            head.cursor = -1
            head.weightedIdleTime = -.infinity
        }

        /// Whether the head of one list goes before the head of another (both not exhausted): by
        /// the cached weighted idle times when they differ, else by the planner's comparison.
        private static func goesBefore(
            _ mine: Head, _ theirs: Head, candidates: PurgeCandidates, planner: PurgePlanner, comparingWeightedIdleTimes: Bool
        ) -> Bool {
            if comparingWeightedIdleTimes, mine.weightedIdleTime != theirs.weightedIdleTime {
                return !(mine.weightedIdleTime < theirs.weightedIdleTime)
            }
            return planner.goesBefore(
                candidates.candidate(PackIndex(rawValue: mine.pack)), candidates.candidate(PackIndex(rawValue: theirs.pack)),
                now: candidates.now)
        }

        public mutating func next() -> PurgeCandidate? {
            // The head of largest weighted idle time, if it is the only one: what the comparison
            // below finds then, in one pass over the times alone (exhausted lists' are minus
            // infinity). A tie, a NaN (a rate that overflowed) or a planner that ranks priority
            // first leaves it to the comparison, which settles those as the planner does.
            var best = -1, top = -Double.infinity, ties = false, unordered = !comparesWeightedIdleTimes
            for list in lists.indices {
                let time = lists[list].weightedIdleTime
                if time > top {
                    (best, top, ties) = (list, time, false)
                } else if time == top {
                    ties = true
                } else if time.isNaN {
                    unordered = true
                }
            }
            if unordered || (ties && best >= 0) {
                best = -1
                for list in lists.indices where lists[list].pack >= 0 {
                    if best >= 0, !Self.goesBefore(
                        lists[list], lists[best], candidates: candidates, planner: planner,
                        comparingWeightedIdleTimes: comparesWeightedIdleTimes) {
                        continue
                    }
                    best = list
                }
            }
            guard best >= 0 else {
                guard hintedPosition < hinted.count else { return nil }
                defer { hintedPosition += 1 }
                return hinted[hintedPosition]
            }
            let pack = PackIndex(rawValue: lists[best].pack)
            Self.advance(&lists[best], in: candidates)
            return candidates.candidate(pack)
        }
    }
}
