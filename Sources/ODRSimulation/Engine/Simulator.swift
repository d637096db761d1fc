import ODRRuntime
import ODRFormat

/// Plays a script on a virtual device under one purge policy, with the runtime's own ``Ledger``
/// deciding what is in use and the policy deciding what to purge.
///
/// The virtual world: a disk of fixed capacity shared with other apps; a store that purges before a
/// download that would exceed the cache budget or leave less free space than the watermark, and when
/// other apps leave less than the watermark free (the low-space check); one network link on which
/// downloads queue. A request is a hit when all its packs are installed and complete when it
/// begins. A download that does not fit even after purging every pack not in use fails the request
/// without purging anything.
///
/// A policy that takes hints (``EvictionPolicy/takesHints``, `hinted`) also sees the script's
/// anticipation hints: candidates carry the likeliest live hint naming them, and hinted packs not
/// installed download in the link's idle time, likeliest hint first, as the runtime prefetches them:
/// only while no request downloads (a request takes the link at once, the prefetch resumes after
/// it, paying the latency again), and only when the pack fits without purging anything in use or
/// named by a hint as likely or likelier. Ending a hint cancels its prefetch; bytes moved count as
/// downloaded either way. Requests' downloads queued on the link follow the runtime's order
/// (``ODRRuntime/TransferOrder``): among downloads of equal priority that have not started, the one
/// whose packs a likelier live hint names goes first, re-ordered whenever a hint begins or ends.
///
/// ```swift
/// let simulator = Simulator(script: script, device: device)
/// let result = simulator.run(PlannerPolicy(PurgePlanner()))
/// print(result.metrics.bytesDownloaded)
/// ```
public struct Simulator: Sendable {
    public var script: SimulationScript
    public var device: DeviceSettings
    /// How many points the timeline has.
    public var sampleCount = 400
    /// Whether the result lists every purge.
    public var logsPurges = false
    /// How a policy that takes hints prefetches hinted packs (the runtime's rule by default).
    public var hintPrefetch = HintPrefetch.makingRoom
    /// When a policy that takes hints holds prefetches back because hinted bytes went unused: the
    /// runtime's rule (``ODRRuntime/PrefetchLearning/Rule/standard``) by default.
    public var prefetchLearning = PrefetchLearning.Rule.standard

    public init(script: SimulationScript, device: DeviceSettings) {
        self.script = script
        self.device = device
    }

    /// Runs the whole script under `policy`; deterministic.
    // Specialized here for the built-in policies: callers in other modules (odrsim, odrbench) would
    // otherwise run the unspecialized generic loop, with a witness-table call and retain/release
    // traffic for every pack of every request.
    @_specialize(exported: true, where Policy == RuntimePolicy)
    @_specialize(exported: true, where Policy == BeladyPolicy)
    @_specialize(exported: true, where Policy == GreedyDualSizePolicy)
    @_specialize(exported: true, where Policy == PlannerPolicy<LRUPolicy>)
    @_specialize(exported: true, where Policy == PlannerPolicy<PriorityLRUPolicy>)
    public func run<Policy: EvictionPolicy>(_ policy: Policy) -> SimulationResult {
        var run = SimulationRun(simulator: self, policy: policy)
        run.play()
        return run.result
    }
}

/// The state of one run; separate from ``Simulator`` so the hot loop works on local storage.
struct SimulationRun<Policy: EvictionPolicy> {
    private let script: SimulationScript
    private let device: DeviceSettings
    private let catalog: LedgerCatalog
    private let downloadBytes: [Int64]
    /// `tagPacks[tagPackStart[t] ..< tagPackStart[t + 1]]` are the packs of tag `t`: one flat array,
    /// so walking a tag's packs retains nothing.
    private let tagPackStart: [Int]
    private let tagPacks: [PackIndex]
    private var policy: Policy
    private var ledger: Ledger
    private var network: NetworkLink

    /// Per pack, by ``PackIndex``: one array so the hot loop touches one buffer.
    private var packs: [PackState]
    /// Installed packs in one recency list per distinct priority and use class (use count rounded
    /// down to a power of two), so the runtime's planner can read candidates in purge order without
    /// sorting: list `rank * PurgeCandidates.useClasses + useClass`.
    private var ranks: RecencyList
    private var rankPriorities: [Double]
    /// By pack, the first of its priority's recency lists (`rank * PurgeCandidates.useClasses`): a
    /// pack's list is read here, not searched for in ``rankPriorities`` at every install and promotion.
    private var packListBase: [Int]
    /// One more than the highest use class of any pack so far: the lists worth reading.
    private var useClassesSeen = 1
    private var tagPriority: [Double]
    private var packPriority: [Double]
    /// `packs[p].visit == visit` when pack `p` was already seen by the current request.
    private var visit: UInt32 = 0
    private var active: [Bool]

    private var now = 0.0
    private var storeBytes: Int64 = 0
    private var otherAppsBytes: Int64
    private var access = 0
    private var missing: [PackIndex] = []

    private var metrics = SimulationMetrics()
    private var samples: [SimulationResult.Sample] = []
    private let sampleInterval: Double
    private var nextSample = 0.0
    private let logsPurges: Bool
    private var purges: [SimulationResult.Purge] = []

    /// Whether the policy takes hints; when not, hints are ignored and the state below stays empty.
    private let takesHints: Bool
    /// By pack, the likelihood of the likeliest live hint naming it (0: none).
    private var packHint: [Double]
    /// The live hints, in the order they began.
    private var liveHints: [Int32] = []
    /// The hinted pack downloading in idle time, and the bytes it still has to move; its installed
    /// size is counted in ``storeBytes`` from the moment it starts.
    private var prefetch: (pack: PackIndex, remaining: Int64)?
    /// When the idle-time prefetch last stopped moving bytes.
    private var prefetchCursor = 0.0
    /// Packs a prefetch found no room for under the current hints: not tried again until the
    /// hints or the store change (a request begins or ends, a hint begins or ends).
    private var prefetchRefused: Set<Int> = []
    /// By pack, whether a hinted prefetch installed it and no request has used it since; empty
    /// for policies that take no hints (kept out of ``PackState``, which the hot loop walks).
    private var prefetchedUnused: [Bool] = []
    private let hintPrefetch: HintPrefetch
    /// The runtime's running measure of how many hinted prefetched bytes requests used.
    private var learning: PrefetchLearning
    /// By pack, whether the learning rule held back its prefetch and it is not judged yet (empty
    /// for policies that take no hints).
    private var heldBack: [Bool] = []

    init(simulator: Simulator, policy: Policy) {
        script = simulator.script
        device = simulator.device
        let catalog = script.catalog.ledgerCatalog
        self.catalog = catalog
        downloadBytes = script.catalog.packs.map(\.downloadBytes)
        var start = [0], flat: [PackIndex] = []
        for tag in 0 ..< catalog.tagCount {
            flat.append(contentsOf: catalog.packs(of: TagIndex(tag)))
            start.append(flat.count)
        }
        tagPackStart = start
        tagPacks = flat
        self.policy = policy
        ledger = Ledger(catalog: catalog, inUseLimit: device.inUseLimit)
        network = NetworkLink(bandwidth: device.bandwidth, latency: device.latency, offline: script.offlineWindows)
        packs = Array(repeating: PackState(), count: catalog.packCount)
        tagPriority = script.catalog.tags.map(\.preservationPriority)
        packPriority = script.catalog.packPriorities(tagPriorities: tagPriority)
        rankPriorities = Array(Set(packPriority)).sorted()
        packListBase = Self.listBases(of: packPriority, ranks: rankPriorities)
        ranks = RecencyList(packCount: catalog.packCount, lists: rankPriorities.count * PurgeCandidates.useClasses)
        active = Array(repeating: false, count: script.requests.count)
        otherAppsBytes = min(script.initialOtherAppsBytes, device.diskCapacity)
        sampleInterval = max(script.duration, 1) / Double(max(simulator.sampleCount, 1))
        logsPurges = simulator.logsPurges
        takesHints = policy.takesHints
        hintPrefetch = simulator.hintPrefetch
        learning = PrefetchLearning(rule: simulator.prefetchLearning)
        packHint = Array(repeating: 0, count: catalog.packCount)
        if takesHints {
            prefetchedUnused = Array(repeating: false, count: catalog.packCount)
            heldBack = Array(repeating: false, count: catalog.packCount)
        }
    }

    var result: SimulationResult {
        var metrics = self.metrics
        if takesHints { metrics.prefetchMeasure = learning.measure }
        return SimulationResult(policy: policy.name, metrics: metrics, samples: samples, purges: purges, downloadRatioToBelady: nil)
    }

    mutating func play() {
        // The tag pool lent to each event as a buffer: the slices of it that requests walk and hand
        // the ledger then retain and release nothing (some 7% of `odrbench sim` as array slices).
        let tagPool = script.tagPool
        tagPool.withUnsafeBufferPointer { play(tagPool: $0) }
        if takesHints {
            advancePrefetch(until: max(now, script.duration))
            for p in packs.indices where packs[p].installed && prefetchedUnused[p] {
                metrics.unusedPrefetchBytes += downloadBytes[p]
            }
            if let current = prefetch { metrics.unusedPrefetchBytes += downloadBytes[current.pack.index] - current.remaining }
        }
        now = max(now, script.duration)
        takeSample()
    }

    /// Plays every event, reading requests' tags in `tagPool` (the script's).
    private mutating func play(tagPool: UnsafeBufferPointer<TagIndex>) {
        if takesHints {
            // Both timelines in time order, hints after other events at equal times.
            var hintPosition = 0
            let hintEvents = script.hintEvents
            for event in script.events {
                while hintPosition < hintEvents.count, hintEvents[hintPosition].time < event.time {
                    play(hintEvents[hintPosition], tagPool: tagPool)
                    hintPosition += 1
                }
                play(event, tagPool: tagPool)
            }
            for event in hintEvents[hintPosition...] { play(event, tagPool: tagPool) }
        } else {
            for event in script.events { play(event, tagPool: tagPool) }
        }
    }

    /// Plays `event`; `tagPool` is the script's.
    private mutating func play(_ event: SimulationScript.Event, tagPool: UnsafeBufferPointer<TagIndex>) {
        if takesHints { advancePrefetch(until: event.time) }
        now = event.time
        while now >= nextSample { takeSample() }
        switch event.action {
        case .begin(let request): begin(Int(request), tagPool: tagPool)
        case .end(let request): end(Int(request), tagPool: tagPool)
        case .otherApps(let bytes): otherAppsChanged(to: bytes)
        case .preservationPriority(let tags, let priority): setPriority(priority, of: script.tagPool[tags])
        case .hint(let hint): beginHint(hint)
        case .endHint(let hint): endHint(hint)
        }
    }

    private mutating func takeSample() {
        samples.append(.init(time: min(nextSample, now), diskBytes: storeBytes, downloadedBytes: metrics.bytesDownloaded))
        nextSample += sampleInterval
    }

    private mutating func begin(_ request: Int, tagPool: UnsafeBufferPointer<TagIndex>) {
        let tags = UnsafeBufferPointer(rebasing: tagPool[script.requests[request].tags])
        metrics.requests += 1
        do {
            try ledger.begin(tags)
        } catch {
            metrics.inUseLimitRefusals += 1
            access += script.accessCount(of: request)
            return
        }
        visit &+= 1
        // Tested first: emptying calls the array's generic replaceSubrange (2% of a run) even
        // when, as on a hit, there is nothing to empty.
        if !missing.isEmpty { missing.removeAll(keepingCapacity: true) }
        var missingBytes: Int64 = 0
        var missingDownload: Int64 = 0
        var ready = now
        for tag in tags {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                let pack = tagPacks[position]
                policy.didAccess(pack, access: access, time: now)
                access += 1
                let p = pack.index
                guard packs[p].visit != visit else { continue }
                packs[p].visit = visit
                packs[p].lastUse = now
                if takesHints, prefetchedUnused[p] || heldBack[p] { judgeUsed(p) }
                packs[p].uses += 1
                let useClass = PurgePlanner.useClass(of: packs[p].uses)
                let promoted = useClass != PurgePlanner.useClass(of: packs[p].uses - 1)
                if promoted, useClass >= useClassesSeen { useClassesSeen = useClass + 1 }
                if packs[p].installed {
                    if takesHints, packs[p].readyAt > now { joinQueuedDownload(of: pack, request: request) }
                    if promoted {
                        ranks.remove(pack)
                        ranks.append(pack, to: list(of: pack))
                    } else {
                        ranks.touch(pack)
                    }
                    ready = max(ready, packs[p].readyAt)
                } else {
                    missing.append(pack)
                    missingBytes += catalog.packBytes[p]
                    if let current = prefetch, current.pack == pack {
                        // The request takes over the prefetch: only what it had left to move.
                        learning.judge(bytes: downloadBytes[p], used: true)
                        missingDownload += current.remaining
                        storeBytes -= catalog.packBytes[p]
                        prefetch = nil
                    } else {
                        missingDownload += downloadBytes[p]
                    }
                }
            }
        }
        if missing.isEmpty, ready <= now {
            metrics.hits += 1
        } else {
            metrics.misses += 1
        }
        if !missing.isEmpty {
            guard makeRoom(for: missingBytes, inUseNotInstalled: missingBytes) else {
                metrics.outOfSpaceFailures += 1
                _ = try? ledger.end(tags)
                return
            }
            let done = takesHints ? queueOrderedDownload(missingDownload, request: request)
                                  : network.download(bytes: missingDownload, at: now)
            for pack in missing {
                packs[pack.index].installed = true
                packs[pack.index].readyAt = done
                ranks.append(pack, to: list(of: pack))
            }
            storeBytes += missingBytes
            metrics.peakDiskBytes = max(metrics.peakDiskBytes, storeBytes)
            metrics.bytesDownloaded += missingDownload
            ready = max(ready, done)
        }
        active[request] = true
        if script.requests[request].isUrgent {
            metrics.stallSeconds += ready - now
            if takesHints, ready > now { network.addWaiter(endingAt: ready, at: now) }
        }
        if !prefetchRefused.isEmpty { prefetchRefused.removeAll(keepingCapacity: true) }
    }

    private mutating func end(_ request: Int, tagPool: UnsafeBufferPointer<TagIndex>) {
        guard active[request] else { return }
        active[request] = false
        let tags = UnsafeBufferPointer(rebasing: tagPool[script.requests[request].tags])
        _ = try? ledger.end(tags)
        for tag in tags {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                let pack = tagPacks[position]
                packs[pack.index].lastUse = now
                if packs[pack.index].installed { ranks.touch(pack) }
            }
        }
        if !prefetchRefused.isEmpty { prefetchRefused.removeAll(keepingCapacity: true) }
    }

    private mutating func otherAppsChanged(to bytes: Int64) {
        otherAppsBytes = min(bytes, device.diskCapacity)
        let free = device.diskCapacity - otherAppsBytes - storeBytes
        if free < device.freeSpaceWatermark { purge(device.freeSpaceWatermark - free) }
        // Other apps cannot take space the store still holds.
        otherAppsBytes = min(otherAppsBytes, device.diskCapacity - storeBytes)
    }

    /// Purges so that `bytes` more fit the disk, the budget and the watermark; false (and nothing
    /// purged) when they cannot fit even with every pack not in use deleted.
    ///
    /// - Parameter inUseNotInstalled: bytes of packs the ledger counts in use that are not installed
    ///   yet (the request's own downloads); every other in-use pack is installed.
    private mutating func makeRoom(for bytes: Int64, inUseNotInstalled: Int64) -> Bool {
        let free = device.diskCapacity - otherAppsBytes - storeBytes
        var need = device.freeSpaceWatermark - (free - bytes)
        if let budget = device.cacheBudget { need = max(need, storeBytes + bytes - budget) }
        guard need > 0 || bytes > free else { return true }
        let prefetching = prefetch.map { catalog.packBytes[$0.pack.index] } ?? 0
        let evictable = storeBytes - prefetching - (ledger.inUseBytes - inUseNotInstalled)
        guard bytes <= free + evictable else { return false }
        if need > 0 { purge(need) }
        return bytes <= device.diskCapacity - otherAppsBytes - storeBytes
    }

    /// Asks the policy to free `need` bytes among the installed packs not in use, and applies its plan.
    private mutating func purge(_ need: Int64) {
        apply(purgePlan(need))
    }

    /// The policy's plan to free `need` bytes among the installed packs not in use.
    private mutating func purgePlan(_ need: Int64) -> PurgePlan {
        policy.plan(
            PurgeCandidates(
                ranks: ranks, rankPriorities: rankPriorities, useClassesSeen: useClassesSeen, inUse: ledger.packReferenceCounts,
                packBytes: catalog.packBytes, packs: packs, packPriority: packPriority, packHint: shieldsHinted ? packHint : [],
                hintedPacks: shieldsHinted ? hintedCandidates() : [], now: now),
            bytesNeeded: need)
    }

    /// Deletes what `plan` chose.
    private mutating func apply(_ plan: PurgePlan) {
        // The plan's freed bytes summed here, as `PurgePlan.bytesFreed` does (clamped): that sum is
        // generic code of another module, which ran unspecialized (metadata lookups, a lazy map)
        // for every purge, some 15% of `odrbench sim`.
        var freed: Int64 = 0
        for deletion in plan.deletions {
            freed = freed.clampedAdding(deletion.bytes)
            let pack = PackIndex(deletion.id)
            precondition(packs[deletion.id].installed && !ledger.isInUse(pack), "\(policy.name) chose a pack that is not a candidate")
            packs[deletion.id].installed = false
            if takesHints, prefetchedUnused[deletion.id] {
                prefetchedUnused[deletion.id] = false
                metrics.unusedPrefetchBytes += downloadBytes[deletion.id]
                learning.judge(bytes: downloadBytes[deletion.id], used: false)
            }
            ranks.remove(pack)
            storeBytes -= deletion.bytes
            metrics.purgedPacks += 1
            metrics.purgedBytes += deletion.bytes
            if logsPurges {
                purges.append(.init(time: now, pack: script.catalog.packs[deletion.id].id, bytes: deletion.bytes, reason: deletion.reason.rawValue))
            }
        }
        metrics.overPurgedBytes += max(0, freed.clampedSubtracting(plan.bytesNeeded))
    }

    /// Whether hints order purging now: for a policy that takes them, unless the learning measure
    /// holds every prefetch back (hints that have not paid lately shield nothing either).
    private var shieldsHinted: Bool { takesHints && learning.allowance != .none }

    /// The installed packs not in use that a live hint names, each once.
    private func hintedCandidates() -> [PackIndex] {
        var seen = Set<Int>(), result: [PackIndex] = []
        for hint in liveHints {
            for tag in script.tags(ofHint: Int(hint)) {
                for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                    let pack = tagPacks[position]
                    if packs[pack.index].installed, !ledger.isInUse(pack), seen.insert(pack.index).inserted { result.append(pack) }
                }
            }
        }
        return result
    }

    private mutating func beginHint(_ hint: Int32) {
        let likelihood = script.hints[Int(hint)].likelihood
        liveHints.append(hint)
        for tag in script.tags(ofHint: Int(hint)) {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                let p = tagPacks[position].index
                packHint[p] = max(packHint[p], likelihood)
            }
        }
        reorderQueuedDownloads()
        prefetchRefused.removeAll(keepingCapacity: true)
    }

    private mutating func endHint(_ hint: Int32) {
        guard let index = liveHints.firstIndex(of: hint) else { return }
        liveHints.remove(at: index)
        for tag in script.tags(ofHint: Int(hint)) {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                packHint[tagPacks[position].index] = 0
            }
        }
        // Packs the ended hint shared with live ones keep the likeliest of those.
        for live in liveHints {
            let likelihood = script.hints[Int(live)].likelihood
            for tag in script.tags(ofHint: Int(live)) {
                for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                    let p = tagPacks[position].index
                    packHint[p] = max(packHint[p], likelihood)
                }
            }
        }
        if let current = prefetch, !(packHint[current.pack.index] > 0) {
            // Withdrawn: the bytes moved are spent, the space held for the pack is given back.
            storeBytes -= catalog.packBytes[current.pack.index]
            metrics.unusedPrefetchBytes += downloadBytes[current.pack.index] - current.remaining
            learning.judge(bytes: downloadBytes[current.pack.index], used: false)
            prefetch = nil
        }
        // Packs held back that no live hint names any more and no request began: the hint was wrong.
        for tag in script.tags(ofHint: Int(hint)) {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                let p = tagPacks[position].index
                if heldBack[p], !(packHint[p] > 0) {
                    heldBack[p] = false
                    learning.judge(bytes: downloadBytes[p], used: false)
                }
            }
        }
        reorderQueuedDownloads()
        prefetchRefused.removeAll(keepingCapacity: true)
    }

    /// Queues the download of `missing` (`bytes`) for `request` on the link in the runtime's order:
    /// among queued downloads of equal priority, the likelier hinted first. Returns when it completes.
    // Out of line: the hot loop of policies without hints only tests `takesHints`.
    @inline(never)
    private mutating func queueOrderedDownload(_ bytes: Int64, request: Int) -> Double {
        let priority: TransferPriority = script.requests[request].isUrgent ? .urgent : .normal
        let queued = network.enqueue(bytes: bytes, at: now, priority: priority, hintLikelihood: 0, packs: missing)
        let hints = packHint
        var end = queued.end
        for change in network.reorder(at: now, hintLikelihood: { packs in packs.reduce(0.0) { max($0, hints[$1.index]) } }) {
            if change.sequence == queued.sequence { end = change.newEnd } else { move(change) }
        }
        return end
    }

    /// An urgent request needs `pack`, whose download is queued or running: a queued one becomes
    /// urgent (the request joins it, as in the runtime).
    @inline(never)
    private mutating func joinQueuedDownload(of pack: PackIndex, request: Int) {
        guard script.requests[request].isUrgent else { return }
        network.makeUrgent(pack, at: now)
    }

    /// Orders the link's queued downloads by the runtime's rule (``ODRRuntime/TransferOrder``: within
    /// equal priority, the likeliest live hint naming one of a download's packs first) after the
    /// hints or the queue changed, and moves the completion times of the packs and of the urgent
    /// waits that depend on them. Running downloads keep their place.
    private mutating func reorderQueuedDownloads() {
        guard network.hasQueued(at: now) else { return }
        let hints = packHint
        let moved = network.reorder(at: now) { packs in packs.reduce(0.0) { max($0, hints[$1.index]) } }
        for change in moved { move(change) }
    }

    /// A queued download's completion moved: its packs are ready then, and the urgent waits that
    /// ended with it end then.
    private mutating func move(_ change: NetworkLink.Moved) {
        metrics.stallSeconds += (change.newEnd - change.oldEnd) * Double(change.waiters)
        for pack in change.packs where packs[pack.index].installed && packs[pack.index].readyAt == change.oldEnd {
            packs[pack.index].readyAt = change.newEnd
        }
    }

    /// Moves hinted prefetches in the link's idle time up to `deadline`, starting the next hinted
    /// pack whenever one completes.
    private mutating func advancePrefetch(until deadline: Double) {
        while true {
            if prefetch == nil {
                prefetchCursor = max(prefetchCursor, network.idleFrom)
                guard prefetchCursor < deadline else { return }
                // A prefetch starts at the cursor, with the store as it is now.
                let saved = now
                now = prefetchCursor
                defer { now = saved }
                guard startNextPrefetch() else {
                    // Nothing can start until the next event changes the hints or the store.
                    prefetchCursor = deadline
                    return
                }
            }
            guard let current = prefetch else { return }
            let start = max(prefetchCursor, network.idleFrom)
            guard start < deadline else { return }
            let bytesPerSecond = device.bandwidth
            var work = device.latency + Double(current.remaining) / bytesPerSecond
            let before = work
            if let done = network.transfer(work: &work, from: start, until: deadline) {
                let p = current.pack.index
                packs[p].installed = true
                packs[p].readyAt = done
                prefetchedUnused[p] = true
                // No request has used it: once no hint names it, it is the first of its list to
                // go (a wrong guess costs its bytes, not the pack it would otherwise push out).
                let list = list(of: current.pack)
                if let head = ranks.first(in: list) { packs[p].lastUse = min(packs[p].lastUse, packs[head.index].lastUse) }
                ranks.prepend(current.pack, to: list)
                metrics.bytesDownloaded += current.remaining
                metrics.prefetchedBytes += current.remaining
                metrics.prefetchedPacks += 1
                metrics.peakDiskBytes = max(metrics.peakDiskBytes, storeBytes)
                prefetch = nil
                prefetchCursor = done
            } else {
                // Paused by the next event: what moved after the latency stays, the latency is paid again.
                let moved = min(current.remaining, Int64(max(0, before - work - device.latency) * bytesPerSecond))
                metrics.bytesDownloaded += moved
                metrics.prefetchedBytes += moved
                prefetch = (current.pack, current.remaining - moved)
                prefetchCursor = deadline
                return
            }
        }
    }

    /// A request began pack `p`, which a hinted prefetch installed or the learning rule held back:
    /// the hint was right.
    @inline(never)
    private mutating func judgeUsed(_ p: Int) {
        prefetchedUnused[p] = false
        heldBack[p] = false
        learning.judge(bytes: downloadBytes[p], used: true)
    }

    /// Starts prefetching the likeliest hinted pack that is missing and fits without purging
    /// anything in use or hinted as likely or likelier, as far as the learning measure allows;
    /// false when there is none.
    private mutating func startNextPrefetch() -> Bool {
        guard hintPrefetch != .off else { return false }
        var allowance = learning.allowance
        if hintPrefetch == .freeSpace { allowance = min(allowance, .freeSpace) }
        let order = liveHints.indices.sorted {
            let (a, b) = (script.hints[Int(liveHints[$0])].likelihood, script.hints[Int(liveHints[$1])].likelihood)
            return a != b ? a > b : $0 < $1
        }
        for index in order {
            let likelihood = script.hints[Int(liveHints[index])].likelihood
            for tag in script.tags(ofHint: Int(liveHints[index])) {
                for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                    let pack = tagPacks[position]
                    guard !packs[pack.index].installed, !prefetchRefused.contains(pack.index) else { continue }
                    guard allowance != .none else {
                        heldBack[pack.index] = true
                        prefetchRefused.insert(pack.index)
                        continue
                    }
                    if makeRoomForPrefetch(catalog.packBytes[pack.index], likelihood: likelihood, allowance: allowance) {
                        storeBytes += catalog.packBytes[pack.index]
                        metrics.peakDiskBytes = max(metrics.peakDiskBytes, storeBytes)
                        prefetch = (pack, downloadBytes[pack.index])
                        return true
                    }
                    // Refused room the rule would otherwise have made: judged as if held back.
                    if allowance != .makeRoom { heldBack[pack.index] = true }
                    prefetchRefused.insert(pack.index)
                }
            }
        }
        return false
    }

    /// Purges so that a prefetch of `bytes` for a hint of `likelihood` fits, when the policy's plan
    /// takes nothing hinted as likely or likelier; false (nothing purged) otherwise.
    private mutating func makeRoomForPrefetch(_ bytes: Int64, likelihood: Double, allowance: PrefetchLearning.Allowance) -> Bool {
        let free = device.diskCapacity - otherAppsBytes - storeBytes
        var need = device.freeSpaceWatermark - (free - bytes)
        if let budget = device.cacheBudget { need = max(need, storeBytes + bytes - budget) }
        guard need > 0 || bytes > free else { return true }
        guard need > 0, allowance == .makeRoom else { return false }
        let plan = purgePlan(need)
        guard plan.shortfall == 0, !plan.deletions.contains(where: { packHint[$0.id] >= likelihood }) else { return false }
        apply(plan)
        return bytes <= device.diskCapacity - otherAppsBytes - storeBytes
    }

    /// The recency list `pack` belongs in: its priority's, for its use class.
    // Inlined: called out of line from a mutating method, it was passed a copy of the run (a
    // memcpy of some 400 bytes per installed or promoted pack).
    @inline(__always)
    private func list(of pack: PackIndex) -> Int {
        packListBase[pack.index] + PurgePlanner.useClass(of: packs[pack.index].uses)
    }

    /// By pack, the first recency list of its priority's rank in `ranks` (no rank: the first).
    private static func listBases(of priorities: [Double], ranks: [Double]) -> [Int] {
        priorities.map { (ranks.firstIndex(of: $0) ?? 0) * PurgeCandidates.useClasses }
    }

    private mutating func setPriority(_ priority: Double, of tags: ArraySlice<TagIndex>) {
        for tag in tags { tagPriority[tag.index] = priority }
        let priorities = tagPriority
        for tag in tags {
            for position in tagPackStart[tag.index] ..< tagPackStart[tag.index + 1] {
                let pack = tagPacks[position]
                packPriority[pack.index] = script.catalog.packs[pack.index].tags.lazy.map { priorities[$0.index] }.max() ?? 0
            }
        }
        // Rare: rebuild the rank lists, appending installed packs in order of last use so each
        // list keeps recency order (ties in the order they were last touched).
        var installedPacks: [(order: Int, pack: PackIndex)] = []
        for list in 0 ..< ranks.lists {
            var cursor = ranks.first(in: list)
            while let pack = cursor {
                cursor = ranks.after(pack)
                installedPacks.append((installedPacks.count, pack))
            }
        }
        installedPacks.sort { (packs[$0.pack.index].lastUse, $0.order) < (packs[$1.pack.index].lastUse, $1.order) }
        rankPriorities = Array(Set(packPriority)).sorted()
        packListBase = Self.listBases(of: packPriority, ranks: rankPriorities)
        ranks = RecencyList(packCount: catalog.packCount, lists: rankPriorities.count * PurgeCandidates.useClasses)
        for (_, pack) in installedPacks { ranks.append(pack, to: list(of: pack)) }
    }
}

/// What the simulator knows about one pack.
struct PackState {
    var installed = false
    /// The number of the last request that looked at the pack (to count shared packs once).
    var visit: UInt32 = 0
    /// When its download completes.
    var readyAt = 0.0
    /// When a request last began or ended using it.
    var lastUse = 0.0
    /// How many requests began using it (kept across purges, as the runtime's store does).
    var uses = 0
}

/// How a policy that takes hints prefetches the hinted packs that are not installed, in the link's
/// idle time (``Simulator/hintPrefetch``).
public enum HintPrefetch: String, CaseIterable, Sendable, Codable {
    /// Purging to make room, but never a pack in use or hinted as likely or likelier: the runtime's
    /// rule (``ODRRuntime/ResourceManager/anticipate(tags:likelihood:)``).
    case makingRoom = "make-room"
    /// Only into room the store has without purging anything.
    case freeSpace = "free-space"
    /// Never: hints only order purging.
    case off
}
