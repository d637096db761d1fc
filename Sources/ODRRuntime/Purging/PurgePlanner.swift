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

    /// `default`: the runtime's policy, as reports and `odrsim` name it.
    public var name: String { "default" }

    /// Chooses packs rank by rank, passing over those that would overshoot the need (see ``PurgePlanner``).
    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        guard bytesNeeded > 0 else { return PurgePlan(bytesNeeded: bytesNeeded, deletions: []) }
        let (pool, ranks) = Self.ranked(candidates)
        let topPriority = ranks.last { !pool[$0.lowerBound].isSuperseded }.map { pool[$0.lowerBound].preservationPriority } ?? 0
        var position = 0
        return plan(bytesNeeded: bytesNeeded, topPriority: topPriority) {
            guard position < pool.count else { return nil }
            defer { position += 1 }
            return pool[position]
        }
    }

    /// Plans from candidates the caller already produces in purge order, reading only as many as
    /// the plan needs: the same plan as ``plan(_:bytesNeeded:)`` on the same candidates.
    ///
    /// A caller that keeps installed packs in one recency list per rank (the simulator does) plans
    /// in time proportional to the packs it deletes rather than to the packs installed.
    ///
    /// - Parameters:
    ///   - topPriority: the highest preservation priority among the candidates that are not
    ///     superseded; packs of lower priority are purged for ``PurgeReason/lowPreservationPriority``.
    ///   - next: the next candidate not in use: superseded first, then by ascending preservation
    ///     priority, least recently used first (ids ascending among equal times) within each.
    public func plan(
        bytesNeeded: Int64, topPriority: Double, candidatesInPurgeOrder next: () -> PurgeCandidate?
    ) -> PurgePlan {
        var deletions: [PurgePlan.Deletion] = []
        var remaining = bytesNeeded
        var upcoming = remaining > 0 ? next() : nil
        while remaining > 0, let first = upcoming {
            let reason: PurgeReason =
                if first.isSuperseded { .superseded }
                else if first.preservationPriority < topPriority { .lowPreservationPriority }
                else { .leastRecentlyUsed }
            // Walk the rank least recently used first, passing over packs that would overshoot
            // by more than the allowance. A rank that fits the need whole passes nothing over.
            // Until something is passed over, taken packs are the rank's oldest, in order.
            let allowance = max(Int64(Double(remaining) * overPurgeFraction), overPurgeSlack)
            let rankStart = deletions.count
            var takenPositions: [Int]?
            var smallestPassedOver: (position: Int, candidate: PurgeCandidate)?
            var still = remaining
            var position = 0
            while still > 0, let candidate = upcoming, Self.sameRank(candidate, first) {
                if candidate.bytes <= still + allowance {
                    deletions.append(.init(id: candidate.id, bytes: candidate.bytes, reason: reason))
                    takenPositions?.append(position)
                    still -= candidate.bytes
                } else {
                    if takenPositions == nil { takenPositions = Array(0 ..< deletions.count - rankStart) }
                    if smallestPassedOver.map({ candidate.bytes < $0.candidate.bytes }) ?? true {
                        smallestPassedOver = (position, candidate)
                    }
                }
                position += 1
                // Read no further than the plan needs.
                upcoming = still > 0 ? next() : nil
            }
            if let positions = takenPositions {
                var taken = Array(zip(positions, deletions[rankStart...]))
                if still > 0, let finisher = smallestPassedOver {
                    // The finisher alone may cover what smaller packs were taken for: keep the
                    // most recent of those it makes unnecessary.
                    var freed = remaining - still + finisher.candidate.bytes
                    for index in taken.indices.reversed() where freed - taken[index].1.bytes >= remaining {
                        freed -= taken[index].1.bytes
                        taken.remove(at: index)
                    }
                    taken.append((finisher.position, .init(id: finisher.candidate.id, bytes: finisher.candidate.bytes, reason: reason)))
                    taken.sort { $0.0 < $1.0 }
                    still = 0
                }
                // A pack that went while an older one of its rank stayed was chosen for its size.
                var olderKept = false
                var expected = 0
                deletions.removeSubrange(rankStart...)
                for (position, deletion) in taken {
                    if position > expected { olderKept = true }
                    expected = position + 1
                    deletions.append(.init(id: deletion.id, bytes: deletion.bytes, reason: olderKept ? .closestFit : reason))
                }
            }
            remaining = still
        }
        return PurgePlan(bytesNeeded: bytesNeeded, deletions: deletions)
    }

    /// The candidates not in use, in purge order, and the ranges of its ranks: superseded first,
    /// then one rank per preservation priority, lowest first; least recently used first within each.
    ///
    /// A stable partition by rank (there are few) followed by a check that each rank is already in
    /// recency order, so callers that pass candidates least recently used first (odrsim does) pay
    /// a few linear scans rather than a sort.
    static func ranked(_ candidates: [PurgeCandidate]) -> ([PurgeCandidate], [Range<Int>]) {
        var hasSuperseded = false
        var priorities: [Double] = []
        for candidate in candidates where !candidate.isInUse {
            if candidate.isSuperseded {
                hasSuperseded = true
            } else if !priorities.contains(candidate.preservationPriority) {
                priorities.append(candidate.preservationPriority)
            }
        }
        priorities.sort()
        var pool: [PurgeCandidate] = []
        pool.reserveCapacity(candidates.count)
        var ranks: [Range<Int>] = []
        func appendRank(where belongs: (PurgeCandidate) -> Bool) {
            let start = pool.count
            for candidate in candidates where !candidate.isInUse && belongs(candidate) { pool.append(candidate) }
            if !isInRecencyOrder(pool[start...]) { pool[start...].sort(by: recencyOrder) }
            ranks.append(start ..< pool.count)
        }
        if hasSuperseded { appendRank { $0.isSuperseded } }
        for priority in priorities {
            appendRank { !$0.isSuperseded && $0.preservationPriority == priority }
        }
        return (pool, ranks)
    }

    private static func sameRank(_ a: PurgeCandidate, _ b: PurgeCandidate) -> Bool {
        a.isSuperseded == b.isSuperseded && (a.isSuperseded || a.preservationPriority == b.preservationPriority)
    }

    /// Least recently used first; ids break ties so plans are deterministic.
    private static func recencyOrder(_ a: PurgeCandidate, _ b: PurgeCandidate) -> Bool {
        a.lastUse != b.lastUse ? a.lastUse < b.lastUse : a.id < b.id
    }

    private static func isInRecencyOrder(_ rank: ArraySlice<PurgeCandidate>) -> Bool {
        var i = rank.startIndex + 1
        while i < rank.endIndex {
            if recencyOrder(rank[i], rank[i - 1]) { return false }
            i += 1
        }
        return true
    }
}
