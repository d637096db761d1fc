import ODRFormat

/// The manager's prefetch learning measure (``PrefetchLearning``), kept in the store so that it
/// survives restarts and other processes (`odr status`) can read it: one row, `prefetchLearning`
/// (migration `v12`, docs/STORE.md "Prefetch learning"), written in the background when a judgment
/// changes it and read when a manager opens the store.
extension ResourceStore {
    /// The measure the last manager on this store recorded, under `rule`, or `nil` when none
    /// recorded one. A row that is not a set of finite figures counts as none (written outside
    /// the runtime); figures out of range are clamped (``PrefetchLearning/init(rule:usedBytes:judgedBytes:judgments:)``).
    public func prefetchLearning(rule: PrefetchLearning.Rule = .standard) throws(ResourceError) -> PrefetchLearning? {
        try read("read the prefetch learning measure") { db in
            guard let row = try db.fetchAll(sql: "SELECT usedBytes, judgedBytes, judgments FROM prefetchLearning WHERE id = 1").first,
                  let used = try? StoreRow.number(row, "usedBytes"), let judged = try? StoreRow.number(row, "judgedBytes"),
                  let judgments = try? StoreRow.integer(row, "judgments", in: 0...StoreRow.maximumCount) else { return nil }
            return PrefetchLearning(rule: rule, usedBytes: used, judgedBytes: judged, judgments: Int(judgments))
        }
    }

    /// Records `learning`'s figures (not its rule: that is the app's configuration).
    func recordPrefetchLearning(_ learning: PrefetchLearning) throws(ResourceError) {
        try write("record the prefetch learning measure") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO prefetchLearning (id, usedBytes, judgedBytes, judgments) VALUES (1, ?, ?, ?)",
                           arguments: [learning.usedBytes, learning.judgedBytes, Int64(learning.judgments)])
        }
    }
}

/// Writes a manager's prefetch learning measure to its store off the caller's path: each judgment
/// notes the new figures, and one background write stores the latest (a burst of judgments is one
/// write). ``flush()`` writes what is pending at once.
final class PrefetchLearningRecorder: Sendable {
    private let store: ResourceStore
    private let pending = Locked<(learning: PrefetchLearning?, scheduled: Bool)>((nil, false))
    /// Held while a flush takes and writes the pending figures, so that when ``flush()`` returns
    /// the figures noted before it are stored.
    private let flushing = Locked(())

    init(store: ResourceStore) { self.store = store }

    func note(_ learning: PrefetchLearning) {
        let schedule: Bool = pending.withLock { pending in
            pending.learning = learning
            guard !pending.scheduled else { return false }
            pending.scheduled = true
            return true
        }
        if schedule { Task.detached { [self] in flush() } }
    }

    func flush() {
        flushing.withLock { _ in
            let learning = pending.withLock { pending in
                defer { pending = (nil, false) }
                return pending.learning
            }
            // A read-only store (full disk, no permission) keeps the measure in the process only.
            if let learning { try? store.recordPrefetchLearning(learning) }
        }
    }
}
