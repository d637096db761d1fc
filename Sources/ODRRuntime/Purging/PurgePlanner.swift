#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFormat

/// The runtime's purge policy: superseded packs first, then the packs that have gone unused the
/// longest, with preservation priority and frequent use slowing how fast a pack ages, without
/// freeing far more than needed.
///
/// Purge order:
/// 1. Superseded packs (no current catalog version needs them) and packs of variants the device
///    does not choose (``PurgeCandidate/isUnchosenVariant``), least recently used first.
/// 2. Every other pack by *weighted idle time*, longest first: the time since its last use,
///    halved for every ``priorityHalvingStep`` (default 0.06) of its preservation priority and
///    divided by its use count rounded down to a power of two, that is
///    `(now - lastUse) × 2^(-priority / priorityHalvingStep) / 2^⌊log2(useCount)⌋`. Of two packs
///    used as often at the same time the lower priority always goes first; a pack of priority 0.8
///    goes before one of 0.4 used as often only when it has gone unused about 100 times as long,
///    and a pack used 8 times before one used once only when it has gone unused 8 times as long.
///    Equal weighted idle times go lower priority first, then fewer uses (by power of two), then
///    least recently used, then by id.
///
/// Priority is a weight rather than a strict first key so that high-priority packs that no longer
/// get used do not fill the store: under a strict rank, packs of the top priority are kept for
/// ever once there are more of them than the store holds (see docs/ODRSIM.md). The use count keeps
/// packs players come back to (a town, a boss level) over packs passed through once, which recency
/// alone cannot tell apart; rounding it to a power of two keeps the order coarse, so that a
/// caller keeping one recency list per priority and power of two reads the order by merging them.
///
/// 3. Packs that a live anticipation hint names (``PurgeCandidate/hintLikelihood`` above 0), after
///    every unhinted pack: the least likely first, then as in 2. A pack hinted at 0.9 goes after
///    every unhinted pack and after packs hinted at 0.5; a pack a request holds never goes.
///
/// Within that order, a pack that would overshoot what is still needed by more than the allowance
/// (the larger of ``overPurgeFraction`` of the need and ``overPurgeSlack``) is passed over; if the
/// smaller packs are not enough, the smallest passed-over pack that covers the rest goes instead,
/// and any pack it makes unnecessary is kept. So a 512 MB pack is not deleted to make room for
/// 100 MB when a 120 MB pack would do. Superseded and unchosen packs are one group, unhinted packs
/// another and hinted packs a third: nothing is passed over to take a pack a current version needs,
/// nor an unhinted pack to take a hinted one. In-use packs are never chosen.
///
/// The planner uses only what the store records for each pack: its size, its last use, its use
/// count, its preservation priority and whether it is superseded or of a variant not chosen, and
/// the likelihood of the live hints that name it.
///
/// ```swift
/// let plan = PurgePlanner().plan(candidates, bytesNeeded: 100 << 20, now: clock.now())
/// for deletion in plan.deletions { log("purge \(deletion.id): \(deletion.reason)") }
/// if plan.shortfall > 0 { throw outOfSpace }
/// ```
public struct PurgePlanner: PurgePolicy, Equatable {
    /// How much more than what is still needed one pack may free without being passed over, as a
    /// fraction of that need.
    public var overPurgeFraction: Double
    /// The overshoot always tolerated, in bytes, so that small needs do not pass over every pack.
    public var overPurgeSlack: Int64
    /// How much preservation priority halves how fast a pack ages; `0.06` makes a pack of
    /// priority 0.8 age about 100 times slower than one of 0.4, and one of priority 1 about
    /// 100,000 times slower than one of 0 (a year unused weighs as five minutes). Zero or less makes priority a strict first
    /// key (lowest priority first, then least recently used), the planner's order before priority
    /// became a weight.
    public var priorityHalvingStep: Double
    /// Whether a pack's ``PurgeCandidate/useCount``, rounded down to a power of two, divides its
    /// weighted idle time; `false` orders by recency and priority only (the planner before it
    /// counted uses).
    public var weighsUseCount: Bool

    /// Creates the planner; the defaults tolerate freeing up to 1.5 times the need, or 32 MiB more,
    /// halve a pack's ageing for every 0.06 of preservation priority and divide it by the pack's
    /// use count rounded down to a power of two.
    public init(
        overPurgeFraction: Double = 0.5, overPurgeSlack: Int64 = 32 << 20, priorityHalvingStep: Double = 0.06,
        weighsUseCount: Bool = true
    ) {
        self.overPurgeFraction = overPurgeFraction
        self.overPurgeSlack = overPurgeSlack
        self.priorityHalvingStep = priorityHalvingStep
        self.weighsUseCount = weighsUseCount
    }

    /// `default`: the runtime's policy, as reports and `odrsim` name it.
    public var name: String { "default" }

    /// How fast a pack of `priority` ages relative to one of priority 0: `2^(-priority / step)`.
    public func agingRate(priority: Double) -> Double {
        priorityHalvingStep > 0 ? exp2(-priority / priorityHalvingStep) : 1
    }

    /// The power of two a use count is rounded down to, as its exponent: 0 for 0 or 1 use, 1 for
    /// 2 or 3, 2 for 4 to 7, and so on (at most 62).
    public static func useClass(of useCount: Int) -> Int {
        useCount > 1 ? Int.bitWidth - 1 - useCount.leadingZeroBitCount : 0
    }

    /// How fast a pack of `priority` used `useCount` times ages relative to one of priority 0 used
    /// once: ``agingRate(priority:)`` divided by the use count rounded down to a power of two
    /// (unless ``weighsUseCount`` is off).
    public func agingRate(priority: Double, useCount: Int) -> Double {
        agingRate(priorityRate: agingRate(priority: priority), useCount: useCount)
    }

    /// ``agingRate(priority:useCount:)`` from the priority's ``agingRate(priority:)``, for callers
    /// that need the rates of many use counts at one priority.
    public func agingRate(priorityRate: Double, useCount: Int) -> Double {
        weighsUseCount ? priorityRate / Double(1 << Self.useClass(of: useCount)) : priorityRate
    }

    /// The time since `candidate` was last used at `now`, scaled by its
    /// ``agingRate(priority:useCount:)``; the larger, the sooner it goes.
    public func weightedIdleTime(of candidate: PurgeCandidate, now: Double) -> Double {
        max(0, now - candidate.lastUse) * agingRate(priority: candidate.preservationPriority, useCount: candidate.useCount)
    }

    /// Whether `a` goes before `b` when neither is superseded, unchosen nor in use, at `now`.
    public func goesBefore(_ a: PurgeCandidate, _ b: PurgeCandidate, now: Double) -> Bool {
        let (ha, hb) = (Self.hintRank(a), Self.hintRank(b))
        if ha != hb { return ha < hb }
        if priorityHalvingStep <= 0, a.preservationPriority != b.preservationPriority {
            return a.preservationPriority < b.preservationPriority
        }
        let (wa, wb) = (weightedIdleTime(of: a, now: now), weightedIdleTime(of: b, now: now))
        if wa != wb { return wa > wb }
        if a.preservationPriority != b.preservationPriority { return a.preservationPriority < b.preservationPriority }
        if weighsUseCount {
            let (ca, cb) = (Self.useClass(of: a.useCount), Self.useClass(of: b.useCount))
            if ca != cb { return ca < cb }
        }
        return a.lastUse != b.lastUse ? a.lastUse < b.lastUse : a.id < b.id
    }

    /// Chooses packs at `now` (seconds on the same clock as ``PurgeCandidate/lastUse``), passing
    /// over those that would overshoot the need (see ``PurgePlanner``).
    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64, now: Double) -> PurgePlan {
        guard bytesNeeded > 0 else { return PurgePlan(bytesNeeded: bytesNeeded, deletions: []) }
        let pool = ordered(candidates, now: now)
        let topPriority = pool.lazy.filter { !$0.isObsolete }.map(\.preservationPriority).max() ?? 0
        var position = 0
        return plan(bytesNeeded: bytesNeeded, topPriority: topPriority) {
            guard position < pool.count else { return nil }
            defer { position += 1 }
            return pool[position]
        }
    }

    /// Chooses packs as ``plan(_:bytesNeeded:now:)`` does, taking the most recent last use among
    /// `candidates` as the present. Callers with a clock should pass it.
    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        plan(candidates, bytesNeeded: bytesNeeded, now: candidates.lazy.map(\.lastUse).max() ?? 0)
    }

    /// Plans from candidates the caller already produces in purge order, reading only as many as
    /// the plan needs: the same plan as ``plan(_:bytesNeeded:now:)`` on the same candidates.
    ///
    /// A caller that keeps installed packs in one recency list per priority and use class (the
    /// simulator does) plans in time proportional to the packs it deletes rather than to the packs
    /// installed.
    ///
    /// - Parameters:
    ///   - topPriority: the highest preservation priority among the candidates that are not
    ///     superseded nor of a variant not chosen; packs of lower priority are purged for ``PurgeReason/lowPreservationPriority``.
    ///   - next: the next candidate not in use in purge order: superseded and unchosen first, least recently
    ///     used first, then the others as ``goesBefore(_:_:now:)`` orders them (packs of one
    ///     priority and use class used at the same instant may come in the caller's order rather than by id).
    ///     Among packs of one priority and one ``useClass(of:)`` that order is recency order, so a
    ///     caller that keeps one recency list per priority and use class merges their heads
    ///     (`odrsim` does).
    public func plan(
        bytesNeeded: Int64, topPriority: Double, candidatesInPurgeOrder next: () -> PurgeCandidate?
    ) -> PurgePlan {
        var deletions: [PurgePlan.Deletion] = []
        var remaining = bytesNeeded
        // A pack frees between 0 and 2^62 bytes: sizes outside that (a damaged store row, a
        // caller's mistake) are clamped, so no difference or sum below can overflow.
        func nextChecked() -> PurgeCandidate? {
            guard var candidate = next() else { return nil }
            candidate.bytes = min(max(candidate.bytes, 0), StoreRow.maximumBytes)
            return candidate
        }
        var upcoming = remaining > 0 ? nextChecked() : nil
        func reason(_ candidate: PurgeCandidate) -> PurgeReason {
            if candidate.isSuperseded { .superseded }
            else if candidate.isUnchosenVariant { .variantNotChosen }
            else if candidate.isHinted { .leastLikelyHint }
            else if candidate.preservationPriority < topPriority { .lowPreservationPriority }
            else { .leastRecentlyUsed }
        }
        while remaining > 0, let first = upcoming {
            // Walk the group in purge order, passing over packs that would overshoot
            // by more than the allowance. A group that fits the need whole passes nothing over.
            // Until something is passed over, taken packs are the group's first, in order.
            // In Double and compared by difference, so a need near Int64.max (purge everything)
            // cannot overflow.
            let allowance = max(Int64(min(Double(remaining) * max(overPurgeFraction, 0), 0x1p62)), overPurgeSlack)
            let rankStart = deletions.count
            var takenPositions: [Int]?
            var smallestPassedOver: (position: Int, candidate: PurgeCandidate)?
            var still = remaining
            var position = 0
            while still > 0, let candidate = upcoming, Self.sameRank(candidate, first) {
                if candidate.bytes - still <= allowance {
                    deletions.append(.init(id: candidate.id, bytes: candidate.bytes, reason: reason(candidate)))
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
                upcoming = still > 0 ? nextChecked() : nil
            }
            if let positions = takenPositions {
                var taken = Array(zip(positions, deletions[rankStart...]))
                if still > 0, let finisher = smallestPassedOver {
                    // The finisher alone may cover what smaller packs were taken for: keep the
                    // most recent of those it makes unnecessary.
                    var freed = (remaining - still).clampedAdding(finisher.candidate.bytes)
                    for index in taken.indices.reversed() where freed - taken[index].1.bytes >= remaining {
                        freed -= taken[index].1.bytes
                        taken.remove(at: index)
                    }
                    taken.append((finisher.position, .init(id: finisher.candidate.id, bytes: finisher.candidate.bytes, reason: reason(finisher.candidate))))
                    taken.sort { $0.0 < $1.0 }
                    still = 0
                }
                // A pack that went while one before it in purge order stayed was chosen for its size.
                var olderKept = false
                var expected = 0
                deletions.removeSubrange(rankStart...)
                for (position, deletion) in taken {
                    if position > expected { olderKept = true }
                    expected = position + 1
                    deletions.append(.init(id: deletion.id, bytes: deletion.bytes, reason: olderKept ? .closestFit : deletion.reason))
                }
            }
            remaining = still
        }
        return PurgePlan(bytesNeeded: bytesNeeded, deletions: deletions)
    }

    /// The candidates not in use, in purge order at `now`: superseded and unchosen first, least recently used
    /// first (ids ascending among equal times), then the others by ``goesBefore(_:_:now:)``.
    func ordered(_ candidates: [PurgeCandidate], now: Double) -> [PurgeCandidate] {
        var superseded: [PurgeCandidate] = [], current: [PurgeCandidate] = []
        for candidate in candidates where !candidate.isInUse {
            if candidate.isObsolete { superseded.append(candidate) } else { current.append(candidate) }
        }
        superseded.sort { $0.lastUse != $1.lastUse ? $0.lastUse < $1.lastUse : $0.id < $1.id }
        current.sort { goesBefore($0, $1, now: now) }
        return superseded + current
    }

    /// The likelihood a candidate's hints give it in purge order: ``PurgeCandidate/hintLikelihood``
    /// clamped to 0...1, NaN as 0 (not hinted). Obsolete packs rank first whatever their hints.
    public static func hintRank(_ candidate: PurgeCandidate) -> Double {
        let likelihood = candidate.hintLikelihood
        return likelihood > 0 ? min(likelihood, 1) : 0
    }

    /// Packs of one group may be passed over for one another (closest fit): obsolete packs, unhinted
    /// packs, and hinted packs are three groups, so that nothing unhinted is kept by taking a hinted pack.
    private static func sameRank(_ a: PurgeCandidate, _ b: PurgeCandidate) -> Bool {
        a.isObsolete == b.isObsolete && (a.isObsolete || a.isHinted == b.isHinted)
    }
}
