#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An anticipation hint: the game's word that the tags it names will probably be requested soon
/// (see ``ResourceManager/anticipate(tags:likelihood:)``).
///
/// While it lives, the missing packs of its tags download at the lowest priority (paused while any
/// request waits for a download), among downloads of equal priority that have not started the
/// likeliest hinted start first, and purging keeps its packs after every
/// unhinted one. It holds nothing in use: it never counts toward the in-use limit and never makes a
/// request fail. ``end()`` withdraws it at once (so does releasing the last reference to it): its
/// prefetches that no request shares are cancelled; bytes already verified stay installed.
///
/// ```swift
/// let next = try manager.anticipate(tags: ["region-12", "region-13"], likelihood: 0.8)
/// // ... the player turns around:
/// try next.end()
/// ```
public final class ResourceHint: Sendable {
    /// The tags the hint names.
    public let tags: Set<String>
    /// How likely the game thinks a request for them is soon, in 0...1.
    public let likelihood: Double
    let id: UInt64
    private let manager: ResourceManager
    private let ended = Locked(false)
    /// The hint's line in the trace being recorded when it began, for its `hint-end`.
    private let trace: TraceTicket?

    init(id: UInt64, tags: Set<String>, likelihood: Double, manager: ResourceManager, trace: TraceTicket?) {
        self.id = id
        self.tags = tags
        self.likelihood = likelihood
        self.manager = manager
        self.trace = trace
    }

    deinit {
        if !ended.withLock({ $0 }) {
            manager.endHint(id)
            trace?.end()
        }
    }

    /// Whether ``end()`` was called.
    public var isEnded: Bool { ended.withLock { $0 } }

    /// Withdraws the hint at once: its packs lose the hint's protection from purging, and the
    /// prefetches only it wanted are cancelled (verified bytes stay installed; a download a request
    /// or another hint shares goes on).
    ///
    /// - Throws: ``ResourceError`` `end-before-begin` when the hint has already ended, as a request
    ///   ended twice does; nothing changes then.
    public func end() throws(ResourceError) {
        let first = ended.withLock { ended in
            defer { ended = true }
            return !ended
        }
        guard first else {
            throw ResourceError(.endBeforeBegin, "The hint has already ended; end each hint once (anticipate again to hint the tags anew).")
        }
        manager.endHint(id)
        trace?.end()
    }
}

/// The hint that started a download: what the store's log says of its prefetch.
struct HintedPrefetch: Sendable {
    var likelihood: Double
    /// The hint's tags, sorted.
    var tags: [String]
}

/// The live anticipation hints of a manager: per hint its packs and downloads, per pack the
/// likelihoods of the hints naming it. Adding and removing a hint cost O(its packs); a pack's
/// likeliest hint costs O(hints naming that pack).
struct HintTable {
    struct Live {
        var packs: [String]
        var likelihood: Double
        var downloads: [PackDownload]
    }

    private(set) var live: [UInt64: Live] = [:]
    private var byPack: [String: [UInt64: Double]] = [:]

    var isEmpty: Bool { live.isEmpty }

    mutating func add(_ id: UInt64, _ hint: Live) {
        live[id] = hint
        for pack in hint.packs { byPack[pack, default: [:]][id] = hint.likelihood }
    }

    mutating func remove(_ id: UInt64) -> Live? {
        guard let hint = live.removeValue(forKey: id) else { return nil }
        for pack in hint.packs {
            byPack[pack]?.removeValue(forKey: id)
            if byPack[pack]?.isEmpty == true { byPack[pack] = nil }
        }
        return hint
    }

    /// The likelihood of the likeliest live hint naming `pack`; 0 when none does.
    func likelihood(ofPack pack: String) -> Double {
        byPack[pack]?.values.max() ?? 0
    }

    /// Whether `requester` is a live hint.
    func isHint(_ requester: UInt64) -> Bool { live[requester] != nil }
}

extension ResourceManager {
    /// The priority of hinted prefetches: the lowest there is, so any request's download runs first.
    static let hintPriority = TransferPriority.loading(0)

    /// Tells the manager that `tags` will probably be requested soon, with `likelihood` in 0...1.
    ///
    /// The missing packs of the tags download in the background at the lowest priority, only where
    /// the ``DownloadPolicy`` lets non-urgent downloads run (metered networks, the daily budget),
    /// and only when they fit the cache budget without purging a pack a request holds or a hint at
    /// least as likely names. They pause while any request (or prefetch, or fetch) waits for a
    /// download, and resume when none does; a request that needs one of them joins it and it runs
    /// on at the request's priority. Among queued downloads of equal priority (the requests' own,
    /// say the game's prefetches of every neighbour region), those whose packs a likelier live hint
    /// names start first, then arrival order; a hint never moves a download ahead of one of higher
    /// priority, and never stops one that runs. Purging keeps hinted packs after every
    /// unhinted one, the least likely first (``PurgeReason/leastLikelyHint``).
    ///
    /// A hint holds nothing in use: it never counts toward the in-use limit, and a request for the
    /// same tags never waits for or fails because of it (it joins the prefetch, at its own priority).
    /// Several hints may name the same tags; a pack counts its likeliest live hint. The hint lives
    /// until ``ResourceHint/end()`` or until its last reference goes.
    ///
    /// ```swift
    /// let hint = try manager.anticipate(tags: ["level2"], likelihood: 0.9)
    /// // ... the player picks another level:
    /// try hint.end()
    /// ```
    ///
    /// While a trace is recorded (``startRecordingTrace(to:)``), the hint and its end are written to
    /// it as `hint` and `hint-end` lines, so `odrsim` replays the session with its hints. Each
    /// prefetch a hint starts logs its steps in the store (``StoreEvent/Kind/hint``: started,
    /// cancelled, failed, installed, as `odr log` lists them), and a pack purged for being the
    /// least likely hinted is logged with ``PurgeReason/leastLikelyHint``.
    ///
    /// Cost: O(packs of `tags`) under the manager's lock, plus starting the downloads of missing
    /// packs. Thousands of live hints cost memory for each hint's pack list, and a purge looks up
    /// each installed pack's likeliest hint, O(hints naming it).
    ///
    /// - Throws: ``ResourceError`` at once, with nothing hinted: `invalid-argument` for a likelihood
    ///   outside 0...1 or NaN; `catalog-unavailable` before ``prepare(online:)`` or
    ///   ``loadCatalog(online:)``; `invalid-tag` for a tag the catalog does not have; for a split
    ///   catalog, `catalog-unavailable` for a tag not described yet (call ``describe(tags:)`` first).
    public func anticipate(tags: Set<String>, likelihood: Double) throws(ResourceError) -> ResourceHint {
        guard likelihood.isFinite, (0...1).contains(likelihood) else {
            throw ResourceError(.invalidArgument, "A hint's likelihood must be in 0...1; \(likelihood) is not. Pass 0 (unlikely) to 1 (certain).")
        }
        let id = Self.nextRequesterID()
        let (downloads, started) = try state.withLock { state throws(ResourceError) -> ([PackDownload], [PackDownload]) in
            let snapshot = try Self.requireSnapshot(state)
            let sorted = tags.sorted()
            let ids = try Self.packIDs(forTags: sorted, in: snapshot)
            var running: [ObjectIdentifier] = []
            var prefetched = ids
            for pack in ids where !state.installedIDs.contains(pack) {
                if let download = state.downloads[pack] { running.append(ObjectIdentifier(download)) }
            }
            if state.learning.allowance == .none {
                // Hints have not paid lately: join what downloads anyway, start nothing, and
                // judge the held-back packs when a request begins them or the hint ends.
                prefetched = ids.filter { state.installedIDs.contains($0) || state.downloads[$0] != nil }
                for pack in ids where !state.installedIDs.contains(pack) && state.downloads[pack] == nil && state.awaitingJudgment[pack] == nil {
                    state.awaitingJudgment[pack] = (snapshot.lookup.pack(id: pack)?.archiveBytes ?? 0, true)
                }
            }
            let downloads = startDownloads(of: prefetched, snapshot: snapshot, state: &state,
                                           hint: HintedPrefetch(likelihood: likelihood, tags: sorted))
            state.hints.add(id, .init(packs: ids, likelihood: likelihood, downloads: downloads))
            orderTransfers(ofPacks: ids, snapshot: snapshot, state: state)
            return (downloads, downloads.filter { !running.contains(ObjectIdentifier($0)) })
        }
        if !downloads.isEmpty { setPriority(Self.hintPriority, of: downloads, for: id) }
        if !started.isEmpty {
            // Started while someone waits for a download: paused until no one does.
            let yielding = state.withLock { state -> [PackDownload] in
                guard state.downloadWaits > 0 else { return [] }
                let hintOnly = started.filter { Self.isHintOnly($0, state) }
                state.yieldingToWaits.formUnion(hintOnly.map(\.pack))
                return hintOnly
            }
            setPaused(true, downloads: yielding)
        }
        for download in started {
            hub.emit(.hintedPrefetchStarted(packID: download.pack, bytes: download.bytes, likelihood: likelihood), from: self)
        }
        return ResourceHint(id: id, tags: tags, likelihood: likelihood, manager: self, trace: traceHint(tags, likelihood: likelihood))
    }

    /// Withdraws hint `id`: its priority, and its share of its downloads (the last party out cancels one).
    func endHint(_ id: UInt64) {
        let removed = state.withLock { state -> HintTable.Live? in
            guard let hint = state.hints.remove(id) else { return nil }
            if let snapshot = state.snapshot { orderTransfers(ofPacks: hint.packs, snapshot: snapshot, state: state) }
            if !state.awaitingJudgment.isEmpty {
                // Held back, no longer hinted, and no request began it: the hint was wrong.
                for pack in hint.packs where state.awaitingJudgment[pack]?.heldBack == true && state.hints.likelihood(ofPack: pack) == 0 {
                    if let waiting = state.awaitingJudgment.removeValue(forKey: pack) { state.judge(bytes: waiting.bytes, used: false) }
                }
            }
            return hint
        }
        guard let hint = removed else { return }
        guard !hint.downloads.isEmpty else { return }
        withdrawPriority(of: hint.downloads, for: id)
        for download in hint.downloads {
            download.release()
            if download.isAbandoned {
                // Cancelled before any request wanted it: a wrong guess.
                state.withLock { $0.judge(bytes: download.bytes, used: false) }
                hub.emit(.hintedPrefetchCancelled(packID: download.pack), from: self)
            }
        }
    }

    /// The share of recent hinted prefetched bytes that a request later used, in 0...1 (1 until
    /// the first judgment): the measure by which hinted prefetches stop making room, then stop,
    /// while hints go unused, and resume once they prove right (``PrefetchLearning``,
    /// ``Configuration/prefetchLearning``).
    ///
    /// ```swift
    /// if manager.prefetchMeasure < 0.5 { print("hints have not paid lately") }
    /// ```
    public var prefetchMeasure: Double { state.withLock { $0.learning.measure } }

    /// The running measure behind ``prefetchMeasure``: its rule, allowance and judged bytes.
    public var prefetchLearning: PrefetchLearning { state.withLock { $0.learning } }

    /// Requests began `ids`: those a hinted prefetch installed or the learning rule held back were
    /// rightly hinted. Call with the lock held.
    static func judgeUsed<Packs: Sequence<String>>(_ ids: Packs, state: inout State) {
        for id in ids {
            if let waiting = state.awaitingJudgment.removeValue(forKey: id) { state.judge(bytes: waiting.bytes, used: true) }
        }
    }

    /// Gives the transfers of those of `packs` that are downloading the likelihood of the likeliest
    /// live hint naming each (0: none) as their tie-break among queued transfers of equal priority
    /// (``TransferOrder``): queued ones move, running ones go on. A download that starts later gets
    /// it in ``startDownloads(of:snapshot:state:)``. Call with the lock held, after the hints
    /// changed, so two hints changing at once cannot leave a stale likelihood.
    func orderTransfers(ofPacks packs: [String], snapshot: CatalogSnapshot, state: State) {
        for pack in packs where state.downloads[pack] != nil {
            transport.setHintLikelihood(state.hints.likelihood(ofPack: pack), for: snapshot.packURL(id: pack))
        }
    }

    /// Whether only live hints want `download` (and it has not finished). Call with the lock held.
    static func isHintOnly(_ download: PackDownload, _ state: State) -> Bool {
        guard !download.isFinished else { return false }
        let requesters = download.requesters
        return !requesters.isEmpty && requesters.allSatisfy { state.hints.isHint($0) }
    }

    /// A wait on `downloads` starts (or, with `nil`, one ends). When the first wait starts, every
    /// download only hints want pauses; `downloads` themselves resume if they were so paused (a
    /// request joined a hinted prefetch); when the last wait ends, the paused prefetches resume.
    func hintedPrefetchesYield(to downloads: [PackDownload]?) {
        let (pause, resume) = state.withLock { state -> ([PackDownload], [PackDownload]) in
            if let downloads {
                state.downloadWaits += 1
                var pause: [PackDownload] = []
                if state.downloadWaits == 1, !state.hints.isEmpty {
                    var seen = Set<String>()
                    for hint in state.hints.live.values {
                        for download in hint.downloads where !seen.contains(download.pack) && Self.isHintOnly(download, state) {
                            seen.insert(download.pack)
                            pause.append(download)
                        }
                    }
                    state.yieldingToWaits.formUnion(seen)
                }
                let joined = downloads.filter { state.yieldingToWaits.remove($0.pack) != nil }
                return (pause, joined)
            }
            state.downloadWaits -= 1
            guard state.downloadWaits == 0, !state.yieldingToWaits.isEmpty else { return ([], []) }
            let paused = Set(state.yieldingToWaits)
            state.yieldingToWaits = []
            return ([], paused.compactMap { state.downloads[$0] })
        }
        setPaused(true, downloads: pause)
        setPaused(false, downloads: resume)
    }

    /// For a download that only live hints want: the likelihood of the likeliest of them, which the
    /// room it makes must not purge; `nil` when a request (or a prefetch, or a fetch) wants it too.
    func hintShield(for download: PackDownload) -> Double? {
        let requesters = download.requesters
        return state.withLock { state -> Double? in
            guard !requesters.isEmpty, requesters.allSatisfy({ state.hints.isHint($0) }) else { return nil }
            return requesters.compactMap { state.hints.live[$0]?.likelihood }.max()
        }
    }
}
