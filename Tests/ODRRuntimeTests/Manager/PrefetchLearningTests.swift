import ODRRuntime
import Testing

/// The running measure of hinted bytes requests used, and the allowance it gives prefetches.
struct PrefetchLearningTests {
    @Test func startsTrustingTheGame() {
        let learning = PrefetchLearning()
        #expect(learning.measure == 1)
        #expect(learning.allowance == .makeRoom)
        #expect(learning.judgments == 0)
    }

    @Test func fallsWithWrongHintsAndRecoversWithRightOnes() {
        var learning = PrefetchLearning(rule: .init(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0.9))
        var allowances: [PrefetchLearning.Allowance] = []
        for _ in 0 ..< 10 {
            learning.judge(bytes: 1_000, used: false)
            allowances.append(learning.allowance)
        }
        #expect(learning.measure == 0)
        #expect(allowances.last == PrefetchLearning.Allowance.none)
        for _ in 0 ..< 30 {
            learning.judge(bytes: 1_000, used: true)
            allowances.append(learning.allowance)
        }
        // The way back passes through free space only, then making room again.
        #expect(learning.measure > 0.95)
        #expect(learning.allowance == .makeRoom)
        let back = allowances[10...]
        #expect(back.contains(.none) && back.contains(.freeSpace) && back.contains(.makeRoom))
        #expect(back.elementsEqual(back.sorted()))
    }

    @Test func weighsBytesAndForgetsOldJudgments() {
        var learning = PrefetchLearning(rule: .init(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0.5))
        learning.judge(bytes: 3_000, used: true)
        learning.judge(bytes: 1_000, used: false)
        // (3000 * 0.5) / (3000 * 0.5 + 1000)
        #expect(abs(learning.measure - 0.6) < 1e-12)
        #expect(learning.allowance == .makeRoom)
        learning.judge(bytes: 1_000, used: false)
        #expect(abs(learning.measure - 750.0 / 2250.0) < 1e-12)
        #expect(learning.allowance == .none)
    }

    @Test(arguments: [Double.nan, -1, 2, .infinity])
    func aRuleOutOfRangeIsClamped(_ memory: Double) {
        let rule = PrefetchLearning.Rule(makeRoomFrom: 0.3, prefetchFrom: 0.9, memory: memory)
        #expect(rule.prefetchFrom == 0.3)
        #expect((0 ..< 1).contains(rule.memory))
        var learning = PrefetchLearning(rule: rule)
        for _ in 0 ..< 1_000 { learning.judge(bytes: .max, used: true) }
        #expect(learning.measure <= 1)
        #expect(learning.measure.isFinite)
    }

    /// A measure read back from the store: figures out of range are clamped, so a stored row can
    /// lower the measure but never lift it above 1 (no prefetch perfect hints would not make).
    @Test func aRecordedMeasureIsRestoredAndClamped() {
        var learned = PrefetchLearning(rule: .init(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0.5))
        learned.judge(bytes: 3_000, used: true)
        learned.judge(bytes: 1_000, used: false)
        let restored = PrefetchLearning(rule: learned.rule, usedBytes: learned.usedBytes, judgedBytes: learned.judgedBytes,
                                        judgments: learned.judgments)
        #expect(restored == learned)
        let tooMuchUsed = PrefetchLearning(usedBytes: 5_000, judgedBytes: 2_000, judgments: 3)
        #expect(tooMuchUsed.measure == 1 && tooMuchUsed.usedBytes == 2_000)
        for (used, judged) in [(Double.nan, 1.0), (1, .nan), (-1, 10), (1, -10), (.infinity, .infinity)] {
            let learning = PrefetchLearning(usedBytes: used, judgedBytes: judged, judgments: -4)
            #expect((0...1).contains(learning.measure) && learning.usedBytes >= 0 && learning.judgments >= 0)
        }
        #expect(PrefetchLearning(usedBytes: 1, judgedBytes: .nan, judgments: 7) == PrefetchLearning())
    }

    @Test func neverHoldsNothingBack() {
        var learning = PrefetchLearning(rule: .never)
        for _ in 0 ..< 10 { learning.judge(bytes: 1, used: false) }
        #expect(learning.measure == 0)
        #expect(learning.allowance == .makeRoom)
    }
}
