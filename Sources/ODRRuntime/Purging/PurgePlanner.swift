/// The runtime's purge policy: superseded packs first, then the lowest preservation priority, then the
/// least recently used, without freeing far more than needed.
///
/// Candidates fall into ranks: all superseded packs form the first rank, then one rank per
/// preservation priority, lowest first. Whole ranks go, in that order, while they do not cover the
/// need. Within the rank that covers it, packs go least recently used first, except that a pack
/// that would overshoot the need by more than the allowance (the larger of ``overPurgeFraction`` of
/// what is still needed and ``overPurgeSlack``) is passed over; if the smaller packs are not enough,
/// the smallest passed-over pack that covers the rest goes instead, and any pack it makes
/// unnecessary is kept. So a 512 MB pack is not deleted to make room for 100 MB when a 120 MB pack of
/// the same rank would do. In-use packs are never chosen.
///
/// ```swift
/// let plan = PurgePlanner().plan(candidates, bytesNeeded: 100 << 20)
/// for deletion in plan.deletions { log("purge \(deletion.id): \(deletion.reason)") }
/// if plan.shortfall > 0 { throw outOfSpace }
/// ```
public struct PurgePlanner: PurgePolicy, Equatable {
    /// How much more than what is still needed one pack may free without being passed over, as a
    /// fraction of that need.
    public var overPurgeFraction: Double
    /// The overshoot always tolerated, in bytes, so that small needs do not pass over every pack.
    public var overPurgeSlack: Int64

    /// Creates the planner; the defaults tolerate freeing up to 1.5 times the need, or 32 MiB more.
    public init(overPurgeFraction: Double = 0.5, overPurgeSlack: Int64 = 32 << 20) {
        self.overPurgeFraction = overPurgeFraction
        self.overPurgeSlack = overPurgeSlack
    }

    public var name: String { "default" }

    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        guard bytesNeeded > 0 else { return PurgePlan(bytesNeeded: bytesNeeded, deletions: []) }
        var pool = candidates.filter { !$0.isInUse }
        // Callers that pass candidates least recently used first (odrsim does) make this sort a
        // linear merge of runs.
        pool.sort(by: Self.purgeOrder)
        let topPriority = pool.lazy.filter { !$0.isSuperseded }.map(\.preservationPriority).max() ?? 0

        var deletions: [PurgePlan.Deletion] = []
        var remaining = bytesNeeded
        var start = 0
        while start < pool.count, remaining > 0 {
            var end = start + 1
            var rankBytes = pool[start].bytes
            while end < pool.count, Self.sameRank(pool[start], pool[end]) {
                rankBytes += pool[end].bytes
                end += 1
            }
            let reason: PurgeReason =
                if pool[start].isSuperseded { .superseded }
                else if pool[start].preservationPriority < topPriority { .lowPreservationPriority }
                else { .leastRecentlyUsed }
            if rankBytes <= remaining {
                for candidate in pool[start ..< end] {
                    deletions.append(.init(id: candidate.id, bytes: candidate.bytes, reason: reason))
                }
                remaining -= rankBytes
            } else {
                deletions += closestFit(in: pool[start ..< end], need: remaining, reason: reason)
                remaining = 0
            }
            start = end
        }
        return PurgePlan(bytesNeeded: bytesNeeded, deletions: deletions)
    }

    /// The packs of one rank (least recently used first, together larger than `need`) that free
    /// `need` bytes, least recently used first but without overshooting by more than the allowance.
    private func closestFit(
        in rank: ArraySlice<PurgeCandidate>, need: Int64, reason: PurgeReason
    ) -> [PurgePlan.Deletion] {
        let allowance = max(Int64(Double(need) * overPurgeFraction), overPurgeSlack)
        var taken: [Int] = []
        var remaining = need
        var smallestPassedOver: Int?
        var position = rank.startIndex
        while position < rank.endIndex, remaining > 0 {
            let bytes = rank[position].bytes
            if bytes <= remaining + allowance {
                taken.append(position)
                remaining -= bytes
            } else if smallestPassedOver.map({ bytes < rank[$0].bytes }) ?? true {
                smallestPassedOver = position
            }
            position += 1
        }
        if remaining > 0, let finisher = smallestPassedOver {
            // The finisher alone may cover what smaller packs were taken for: keep the most recent
            // of those it makes unnecessary.
            var freed = taken.reduce(0) { $0 + rank[$1].bytes } + rank[finisher].bytes
            for index in taken.indices.reversed() where freed - rank[taken[index]].bytes >= need {
                freed -= rank[taken[index]].bytes
                taken.remove(at: index)
            }
            taken.append(finisher)
            taken.sort()
        }
        // A pack that went while an older one of its rank stayed was chosen for its size.
        var olderKept = false
        var next = rank.startIndex
        return taken.map { position in
            if position > next { olderKept = true }
            next = position + 1
            let candidate = rank[position]
            return .init(id: candidate.id, bytes: candidate.bytes, reason: olderKept ? .closestFit : reason)
        }
    }

    /// Superseded first, then lowest priority, then least recently used; ids break ties so plans
    /// are deterministic.
    static func purgeOrder(_ a: PurgeCandidate, _ b: PurgeCandidate) -> Bool {
        if a.isSuperseded != b.isSuperseded { return a.isSuperseded }
        if !a.isSuperseded, a.preservationPriority != b.preservationPriority {
            return a.preservationPriority < b.preservationPriority
        }
        if a.lastUse != b.lastUse { return a.lastUse < b.lastUse }
        return a.id < b.id
    }

    private static func sameRank(_ a: PurgeCandidate, _ b: PurgeCandidate) -> Bool {
        a.isSuperseded == b.isSuperseded && (a.isSuperseded || a.preservationPriority == b.preservationPriority)
    }
}
