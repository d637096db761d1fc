/// How well a manager's anticipation hints have paid: a running measure of how many hinted
/// prefetched bytes a request later used, and the prefetch allowance it gives.
///
/// Each hinted pack the prefetcher handled is judged once, weighing its download bytes: **used**
/// when a request begins it, **unused** when it is purged, or its prefetch cancelled, before any
/// request began it. A pack the rule held back (no prefetch, or no room made for it) is judged too:
/// used when a request begins it, unused when the last hint naming it ends first; so the measure
/// keeps learning while nothing is prefetched, and recovers as soon as hints prove right. Older
/// judgments fade by ``Rule/memory`` per judgment. The runtime (``ResourceManager``) and
/// `odrsim`'s `hinted` policy both keep one and ask it the same question before every prefetch.
///
/// The measure starts at 1 (no evidence yet: trust the game) and never exceeds it, so it can never
/// make a prefetch happen that perfect hints would not.
///
/// ```swift
/// var learning = PrefetchLearning()
/// learning.judge(bytes: 40_000_000, used: false)
/// if learning.allowance == .makeRoom { /* purge for the prefetch as before */ }
/// ```
public struct PrefetchLearning: Sendable, Equatable {
    /// What the measure allows a hinted prefetch to do.
    public enum Allowance: Sendable, Equatable, Comparable {
        /// Nothing: no prefetch starts, and hints no longer keep their packs from purging; they only
        /// order queued downloads.
        case none
        /// Download into room the store has, purging nothing.
        case freeSpace
        /// Purge packs less likely wanted to make room (the rule with hints that pay).
        case makeRoom
    }

    /// The thresholds the measure is compared with.
    public struct Rule: Sendable, Equatable, Hashable {
        /// Below this measure prefetches stop making room (free space only).
        public var makeRoomFrom: Double
        /// Below this measure no prefetch starts.
        public var prefetchFrom: Double
        /// The weight every earlier judgment keeps when a new one comes, in 0..<1: about
        /// `1 / (1 - memory)` judgments count.
        public var memory: Double

        public init(makeRoomFrom: Double, prefetchFrom: Double, memory: Double) {
            self.makeRoomFrom = makeRoomFrom
            self.prefetchFrom = min(prefetchFrom, makeRoomFrom)
            self.memory = min(max(memory.isNaN ? 0 : memory, 0), 0.999)
        }

        /// The rule chosen from the measurements in ODRSIM.md ("Prefetch that learns").
        public static let standard = Rule(makeRoomFrom: 0.5, prefetchFrom: 0.4, memory: 0.99)
        /// Never holds back: every prefetch makes room (the rule before the measure existed).
        public static let never = Rule(makeRoomFrom: 0, prefetchFrom: 0, memory: 0.9)
    }

    public var rule: Rule
    /// Decayed bytes judged used.
    public private(set) var usedBytes = 0.0
    /// Decayed bytes judged, used or not.
    public private(set) var judgedBytes = 0.0
    /// How many judgments were made.
    public private(set) var judgments = 0

    public init(rule: Rule = .standard) {
        self.rule = rule
    }

    /// A measure as recorded earlier (the store keeps the manager's, docs/STORE.md "Prefetch
    /// learning"), under `rule`. Figures that are not finite or below 0 count as no evidence, and
    /// used bytes above the judged ones count as the judged: a stored row can lower the measure
    /// but never lift it above 1, so it cannot make a prefetch happen that perfect hints would not.
    public init(rule: Rule = .standard, usedBytes: Double, judgedBytes: Double, judgments: Int) {
        self.rule = rule
        let judged = judgedBytes.isFinite ? max(judgedBytes, 0) : 0
        let used = usedBytes.isFinite ? min(max(usedBytes, 0), judged) : 0
        self.judgedBytes = judged
        self.usedBytes = judged > 0 ? used : 0
        self.judgments = judged > 0 ? max(judgments, 0) : 0
    }

    /// The share of judged hinted bytes a request used, in 0...1; 1 before any judgment.
    public var measure: Double {
        judgedBytes > 0 ? min(1, usedBytes / judgedBytes) : 1
    }

    /// Records that a hinted pack of `bytes` was used by a request (`used`) or not.
    public mutating func judge(bytes: Int64, used: Bool) {
        let weight = Double(max(bytes, 1))
        usedBytes = usedBytes * rule.memory + (used ? weight : 0)
        judgedBytes = judgedBytes * rule.memory + weight
        judgments += 1
    }

    /// What a hinted prefetch may do now.
    public var allowance: Allowance {
        let measure = self.measure
        if measure >= rule.makeRoomFrom { return .makeRoom }
        if measure >= rule.prefetchFrom { return .freeSpace }
        return .none
    }
}
