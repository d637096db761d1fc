import ODRRuntime
import Testing

/// One row of the planner's table: candidates, the need, and the plan a reader can check by hand.
struct PlannerCase: CustomTestStringConvertible, Sendable {
    var name: String
    var candidates: [PurgeCandidate]
    var need: Int64
    var expected: [Int]
    var reasons: [PurgeReason]
    var shortfall: Int64 = 0
    /// The present: every row's packs were last used before it.
    var now: Double = 100

    var testDescription: String { name }
}

private let mb: Int64 = 1 << 20

/// A candidate `id` of `megabytes`, last used at `lastUse`, used `uses` times.
private func pack(
    _ id: Int, _ megabytes: Int64, lastUse: Double, priority: Double = 0.5, superseded: Bool = false, inUse: Bool = false,
    uses: Int = 1, unchosen: Bool = false, hint: Double = 0
) -> PurgeCandidate {
    PurgeCandidate(
        id: id, bytes: megabytes * mb, lastUse: lastUse, preservationPriority: priority, isSuperseded: superseded,
        isInUse: inUse, useCount: uses, isUnchosenVariant: unchosen, hintLikelihood: hint)
}

struct PurgePlannerTests {
    /// Hinted packs go after every unhinted one (a pack hinted at 0.9 after one used a moment ago
    /// at top priority), the least likely first; held packs never go; NaN is no hint.
    @Test func hintedPacksGoLastTheLeastLikelyFirst() {
        let candidates = [
            pack(1, 100, lastUse: 1, hint: 0.9),
            pack(2, 100, lastUse: 99, priority: 1, uses: 64),
            pack(3, 100, lastUse: 50, hint: 0.3),
            pack(4, 100, lastUse: 2, inUse: true, hint: 1),
            pack(5, 100, lastUse: 90, hint: .nan),
            pack(6, 100, lastUse: 5, superseded: true, hint: 0.9),
        ]
        let plan = PurgePlanner().plan(candidates, bytesNeeded: 600 * mb, now: 100)
        #expect(plan.deletions.map(\.id) == [6, 5, 2, 3, 1])
        #expect(plan.deletions.map(\.reason) == [.superseded, .lowPreservationPriority, .leastRecentlyUsed, .leastLikelyHint, .leastLikelyHint])
        #expect(plan.shortfall == 100 * mb)
    }

    /// Closest fit never passes over an unhinted pack to take a hinted one, however better it fits.
    @Test func closestFitDoesNotReachIntoHintedPacks() {
        let candidates = [pack(1, 512, lastUse: 10), pack(2, 10, lastUse: 5, hint: 0.1)]
        let plan = PurgePlanner().plan(candidates, bytesNeeded: 10 * mb, now: 100)
        #expect(plan.deletions.map(\.id) == [1])
    }

    @Test(arguments: [Int64.max, Int64.max - 1, Int64.max / 2])
    func aNeedNearInt64MaxPurgesEverythingWithoutOverflowing(need: Int64) {
        let candidates = [pack(1, 100, lastUse: 10), pack(2, 512, lastUse: 20, priority: 0.9), pack(3, 1, lastUse: 30, superseded: true)]
        let plan = PurgePlanner().plan(candidates, bytesNeeded: need, now: 100)
        #expect(Set(plan.deletions.map(\.id)) == [1, 2, 3])
        #expect(plan.deletions.map(\.id).first == 3, "superseded first")
    }

    static let cases: [PlannerCase] = [
        PlannerCase(
            name: "least recently used first within one priority",
            candidates: [pack(3, 100, lastUse: 30), pack(1, 100, lastUse: 10), pack(2, 100, lastUse: 20)],
            need: 150 * mb, expected: [1, 2], reasons: [.leastRecentlyUsed, .leastRecentlyUsed]),
        PlannerCase(
            name: "lower preservation priority goes before an older pack",
            candidates: [pack(1, 100, lastUse: 1, priority: 0.8), pack(2, 100, lastUse: 50, priority: 0.2)],
            need: 50 * mb, expected: [2], reasons: [.lowPreservationPriority]),
        PlannerCase(
            name: "superseded goes first whatever its priority and recency",
            candidates: [pack(1, 100, lastUse: 1, priority: 0.1), pack(2, 100, lastUse: 99, priority: 1, superseded: true)],
            need: 100 * mb, expected: [2], reasons: [.superseded]),
        PlannerCase(
            name: "a variant no longer chosen goes first whatever its priority and recency",
            candidates: [pack(1, 100, lastUse: 1, priority: 0.1), pack(2, 100, lastUse: 99, priority: 1, uses: 64, unchosen: true)],
            need: 100 * mb, expected: [2], reasons: [.variantNotChosen]),
        PlannerCase(
            name: "superseded and unchosen packs go together, least recently used first, each with its reason",
            candidates: [pack(1, 100, lastUse: 1), pack(2, 100, lastUse: 50, superseded: true),
                         pack(3, 100, lastUse: 40, unchosen: true), pack(4, 100, lastUse: 60, inUse: true, unchosen: true)],
            need: 300 * mb, expected: [3, 2, 1], reasons: [.variantNotChosen, .superseded, .leastRecentlyUsed]),
        PlannerCase(
            name: "a 120 MB pack rather than an older 512 MB one for 100 MB",
            candidates: [pack(1, 512, lastUse: 1), pack(2, 120, lastUse: 2), pack(3, 300, lastUse: 3)],
            need: 100 * mb, expected: [2], reasons: [.closestFit]),
        PlannerCase(
            name: "smaller packs in recency order when together they suffice",
            candidates: [pack(1, 512, lastUse: 1), pack(2, 60, lastUse: 2), pack(3, 60, lastUse: 3), pack(4, 60, lastUse: 4)],
            need: 100 * mb, expected: [2, 3], reasons: [.closestFit, .closestFit]),
        PlannerCase(
            name: "the big pack when nothing smaller covers the need, keeping what it makes unnecessary",
            candidates: [pack(1, 10, lastUse: 1), pack(2, 512, lastUse: 2)],
            need: 100 * mb, expected: [2], reasons: [.closestFit]),
        PlannerCase(
            name: "the only pack, however large",
            candidates: [pack(1, 512, lastUse: 1)],
            need: 100 * mb, expected: [1], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "an overshoot within the allowance is not avoided",
            candidates: [pack(1, 140, lastUse: 1), pack(2, 100, lastUse: 2)],
            need: 100 * mb, expected: [1], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "a whole low rank, then the least recently used of the next",
            candidates: [pack(1, 100, lastUse: 1, priority: 0.8), pack(2, 100, lastUse: 2, priority: 0.8),
                         pack(3, 50, lastUse: 9, priority: 0.2)],
            need: 120 * mb, expected: [3, 1], reasons: [.lowPreservationPriority, .leastRecentlyUsed]),
        PlannerCase(
            name: "in-use packs are never chosen",
            candidates: [pack(1, 100, lastUse: 1, priority: 0, inUse: true), pack(2, 100, lastUse: 2)],
            need: 100 * mb, expected: [2], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "shortfall when everything not in use is not enough",
            candidates: [pack(1, 100, lastUse: 1), pack(2, 500, lastUse: 2, inUse: true)],
            need: 300 * mb, expected: [1], reasons: [.leastRecentlyUsed], shortfall: 200 * mb),
        PlannerCase(
            name: "nothing when nothing is needed",
            candidates: [pack(1, 100, lastUse: 1)],
            need: 0, expected: [], reasons: []),
        PlannerCase(
            name: "a high-priority pack left unused far longer goes before a recent low-priority one",
            // Weighted idle times at 1000: pack 1 (0.8) 1000 s / 2^13.3 = 0.097, pack 2 (0.4)
            // 1 s / 2^6.7 = 0.0098.
            candidates: [pack(1, 100, lastUse: 0, priority: 0.8), pack(2, 100, lastUse: 999, priority: 0.4)],
            need: 100 * mb, expected: [1], reasons: [.leastRecentlyUsed], now: 1000),
        PlannerCase(
            name: "but not one left unused only a little longer",
            // Pack 1 (0.8): 1000 s / 2^13.3 = 0.097; pack 2 (0.4): 500 s / 2^6.7 = 4.9.
            candidates: [pack(1, 100, lastUse: 0, priority: 0.8), pack(2, 100, lastUse: 500, priority: 0.4)],
            need: 100 * mb, expected: [2], reasons: [.lowPreservationPriority], now: 1000),
        PlannerCase(
            name: "used at the same time, the lower priority goes first",
            candidates: [pack(1, 100, lastUse: 50, priority: 0.6), pack(2, 100, lastUse: 50, priority: 0.5)],
            need: 100 * mb, expected: [2], reasons: [.lowPreservationPriority]),
        PlannerCase(
            name: "an in-use pack is never chosen, however old and low its priority",
            candidates: [pack(1, 500, lastUse: 0, priority: 0, inUse: true), pack(2, 100, lastUse: 99, priority: 1)],
            need: 100 * mb, expected: [2], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "closest fit across priorities: a 120 MB pack rather than an older 512 MB one",
            candidates: [pack(1, 512, lastUse: 1, priority: 0.2), pack(2, 120, lastUse: 2, priority: 0.5)],
            need: 100 * mb, expected: [2], reasons: [.closestFit]),
        PlannerCase(
            name: "a pack used 8 times outlasts one used once that has gone unused less than 8 times as long",
            // Weighted idle times at 100: pack 1 60 s / 8 = 7.5, pack 2 10 s.
            candidates: [pack(1, 100, lastUse: 40, uses: 8), pack(2, 100, lastUse: 90)],
            need: 100 * mb, expected: [2], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "but not one that has gone unused more than 8 times as long",
            // Pack 1 90 s / 8 = 11.25, pack 2 10 s.
            candidates: [pack(1, 100, lastUse: 10, uses: 8), pack(2, 100, lastUse: 90)],
            need: 100 * mb, expected: [1], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "use counts count by powers of two: 7 uses weigh as 4",
            // Pack 1 60 s / 4 = 15, pack 2 (15 uses, as 8) 100 s / 8 = 12.5.
            candidates: [pack(1, 100, lastUse: 40, uses: 7), pack(2, 100, lastUse: 0, uses: 15)],
            need: 100 * mb, expected: [1], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "used at the same time, the fewer uses go first",
            candidates: [pack(1, 100, lastUse: 100, uses: 2), pack(2, 100, lastUse: 100, uses: 1)],
            need: 100 * mb, expected: [2], reasons: [.leastRecentlyUsed]),
        PlannerCase(
            name: "equal times fall back to ids",
            candidates: [pack(7, 100, lastUse: 5), pack(4, 100, lastUse: 5)],
            need: 100 * mb, expected: [4], reasons: [.leastRecentlyUsed]),
    ]

    @Test(arguments: cases)
    func plansTheExpectedDeletions(_ row: PlannerCase) {
        let plan = PurgePlanner().plan(row.candidates, bytesNeeded: row.need, now: row.now)
        #expect(plan.ids == row.expected)
        #expect(plan.deletions.map(\.reason) == row.reasons)
        #expect(plan.shortfall == row.shortfall)
        let bytes = Dictionary(uniqueKeysWithValues: row.candidates.map { ($0.id, $0.bytes) })
        #expect(plan.bytesFreed == row.expected.reduce(0) { $0 + bytes[$1]! })
    }

    @Test func aZeroHalvingStepKeepsPriorityAStrictFirstKey() {
        // Pack 1 (0.8) has gone unused 1000 s, pack 2 (0.4) 1 s: only a strict rank keeps pack 1.
        let candidates = [pack(1, 100, lastUse: 0, priority: 0.8), pack(2, 100, lastUse: 999, priority: 0.4)]
        #expect(PurgePlanner().plan(candidates, bytesNeeded: 100 * mb, now: 1000).ids == [1])
        #expect(PurgePlanner(priorityHalvingStep: 0).plan(candidates, bytesNeeded: 100 * mb, now: 1000).ids == [2])
    }

    @Test func useCountsWeighByPowersOfTwoUnlessTurnedOff() {
        #expect([0, 1, 2, 3, 4, 7, 8, 1023, 1024].map(PurgePlanner.useClass(of:)) == [0, 0, 1, 1, 2, 2, 3, 9, 10])
        #expect(PurgePlanner().agingRate(priority: 0, useCount: 13) == 1.0 / 8)
        // Pack 1, used 8 times, has gone unused 60 s, pack 2, used once, 10 s.
        let candidates = [pack(1, 100, lastUse: 40, uses: 8), pack(2, 100, lastUse: 90)]
        #expect(PurgePlanner().plan(candidates, bytesNeeded: 100 * mb, now: 100).ids == [2])
        #expect(PurgePlanner(weighsUseCount: false).plan(candidates, bytesNeeded: 100 * mb, now: 100).ids == [1])
    }

    @Test func eachHalvingStepOfPriorityHalvesTheAgeing() {
        #expect(PurgePlanner().priorityHalvingStep == 0.06)
        let planner = PurgePlanner(priorityHalvingStep: 0.1)
        #expect(planner.agingRate(priority: 0) == 1)
        #expect(planner.agingRate(priority: 0.1) == 0.5)
        #expect(planner.agingRate(priority: 1) == 1.0 / 1024)
        // A priority-1 pack unused for 1,024 minutes weighs as a priority-0 pack unused for one.
        let old = pack(1, 10, lastUse: 0, priority: 1), recent = pack(2, 10, lastUse: 1024 * 60 - 60, priority: 0)
        #expect(planner.weightedIdleTime(of: old, now: 1024 * 60) == planner.weightedIdleTime(of: recent, now: 1024 * 60))
    }

    @Test func neverFreesFarMoreThanNeededWhenSmallerPacksOfAnyPrioritySuffice() {
        // Three old low-priority 400 MB packs and many recent 60 MB ones of higher priority: for
        // 100 MB the plan takes two 60 MB packs, not 400 MB.
        let candidates = (1 ... 3).map { pack($0, 400, lastUse: Double($0), priority: 0.1) }
            + (4 ... 9).map { pack($0, 60, lastUse: 90 + Double($0), priority: 0.3) }
        let plan = PurgePlanner().plan(candidates, bytesNeeded: 100 * mb, now: 100)
        #expect(plan.bytesFreed == 120 * mb)
        #expect(plan.overPurgedBytes <= PurgePlanner().overPurgeSlack)
    }

    @Test func withoutAClockThePresentIsTheNewestLastUse() {
        let candidates = [pack(1, 100, lastUse: 10, priority: 0.5), pack(2, 100, lastUse: 40, priority: 0.5)]
        #expect(PurgePlanner().plan(candidates, bytesNeeded: 100 * mb) == PurgePlanner().plan(candidates, bytesNeeded: 100 * mb, now: 40))
    }

    @Test func overPurgeIsSmallerThanPlainLRUWouldBe() {
        let candidates = [pack(1, 512, lastUse: 1), pack(2, 120, lastUse: 2)]
        let plan = PurgePlanner().plan(candidates, bytesNeeded: 100 * mb, now: 100)
        #expect(plan.overPurgedBytes == 20 * mb)
    }

    @Test func aStricterToleranceTakesTheClosestFit() {
        // With no tolerance, 140 MB for 100 MB is over-purging and the 100 MB pack goes instead.
        let candidates = [pack(1, 140, lastUse: 1), pack(2, 100, lastUse: 2)]
        let plan = PurgePlanner(overPurgeFraction: 0, overPurgeSlack: 0).plan(candidates, bytesNeeded: 100 * mb)
        #expect(plan.ids == [2])
    }

    @Test func planningInPurgeOrderReadsOnlyWhatItNeeds() {
        let ordered = (1 ... 1000).map { pack($0, 10, lastUse: Double($0)) }
        var read = 0
        let plan = PurgePlanner().plan(bytesNeeded: 25 * mb, topPriority: 0.5) {
            guard read < ordered.count else { return nil }
            defer { read += 1 }
            return ordered[read]
        }
        #expect(plan.ids == [1, 2, 3])
        #expect(read == 3)
    }
}
