#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Downloads, installs, tracks and purges the packs of one catalog for the requests of an app.
///
/// Not a singleton: create as many managers as you have catalogs or stores. A manager follows one
/// distribution of one catalog, keeps its packs in one store directory, ref-counts tags across all
/// of its ``ResourceRequest``s, and purges least-recently-used packs that no request uses when the
/// cache budget or the disk's free space requires it.
///
/// ```swift
/// let manager = try ResourceManager(configuration: .init(catalogURL: catalogURL, storeDirectory: storeURL))
/// try await manager.prepare()                       // catalog + initial-install tags
/// let level = ResourceRequest(tags: ["level3"], manager: manager)
/// try await level.beginAccessingResources()
/// let map = level.url(forResource: "map", withExtension: "json", subdirectory: "Levels/Level3")
/// ```
public final class ResourceManager: Sendable {
    /// The settings this manager was created with.
    public let configuration: Configuration
    /// The store that holds installed packs.
    public let store: ResourceStore
    let transport: ManagedTransport
    let client: CatalogClient
    let hub = EventHub()
    /// The catalog's origins, primary first, with the back-off of those that failed.
    let origins: OriginSet
    /// Turns origin switches into events and log lines.
    let originLog: OriginLog
    let state: Locked<State>
    let lastUse: LastUseRecorder
    /// The trace being recorded, if any (see ``startRecordingTrace(to:)``).
    let traceRecorder = Locked<TraceRecorder?>(nil)
    /// At most 2 requests at once to each peer over all of this manager's installs (a share's
    /// default per-address limit; see ``PeerRequestGate``).
    let peerRequestGate = PeerRequestGate()
    /// The latest DNS-SD discovery of peers per catalog id (``discoveredPeers(catalogID:)``).
    let peerDiscoveries = Locked<[String: PeerDiscoveryRun]>([:])
    /// Applies the download policy before each pack download (see ``DownloadPolicy``).
    let downloadGate: DownloadGate

    /// What the manager knows right now; guarded by ``state``.
    struct State {
        var snapshot: CatalogSnapshot?
        var ledger: Ledger?
        /// Per pack of the ledger's catalog: installed or not (dense, for the fast paths).
        var installed: [Bool] = []
        /// Installed pack ids, including ones the current version does not list.
        var installedIDs: Set<String> = []
        var downloads: [String: PackDownload] = [:]
        /// Installed bytes promised to installs in progress, so concurrent installs cannot
        /// together overrun the cache budget.
        var reservedBytes: Int64 = 0
        /// A newer version waiting for the requests of the current one to end.
        var pendingSnapshot: CatalogSnapshot?
        var prefetch: Task<Void, Never>?
        /// The background loop of ``ResourceManager/checkForUpdates(every:)``, while one runs.
        var updateChecks: Task<Void, Never>?
        /// The disk watcher (see ``ResourceManager/watchDiskWhileActive(_:)``), while requests or
        /// downloads are active.
        var watcher: Task<Void, Never>?
        /// The network watcher (see ``ResourceManager/watchNetworkWhileActive(_:)``), while
        /// downloads are active.
        var networkWatcher: Task<Void, Never>?
        /// The live anticipation hints (see ``ResourceManager/anticipate(tags:likelihood:)``).
        var hints = HintTable()
        /// How many waits on downloads (requests, prefetches, fetches) run: while any does, the
        /// downloads only hints want are paused.
        var downloadWaits = 0
        /// The packs whose downloads are paused because only hints want them while a wait runs.
        var yieldingToWaits: Set<String> = []
        /// The running measure of how many hinted prefetched bytes requests used, and the
        /// allowance it gives hinted prefetches (``ResourceManager/prefetchMeasure``).
        var learning = PrefetchLearning()
        /// Hinted packs not judged yet, with their download bytes: installed by a prefetch no
        /// request has used since (`heldBack` false), or held back by the learning rule (true).
        var awaitingJudgment: [String: (bytes: Int64, heldBack: Bool)] = [:]
        /// Stores ``learning`` after each judgment, so the next launch and `odr status` see it.
        var learningRecorder: PrefetchLearningRecorder?

        /// Judges a hinted pack of `bytes` (``PrefetchLearning/judge(bytes:used:)``) and records
        /// the new measure in the store, in the background.
        mutating func judge(bytes: Int64, used: Bool) {
            learning.judge(bytes: bytes, used: used)
            learningRecorder?.note(learning)
        }
    }

    /// Opens the store (repairing what a crash left) and, when it holds a copy of the catalog,
    /// makes it usable at once, even with no network.
    ///
    /// - Throws: ``ResourceError`` `storage-failure` when the store cannot be opened;
    ///   `invalid-argument` for a signature threshold outside 1...trusted keys, or a mirror that is not
    ///   an `http`, `https` or `file` URL.
    public init(configuration: Configuration) throws(ResourceError) {
        if configuration.trust.requiresSignatures { _ = try configuration.trust.configuredKeySet() }
        for mirror in configuration.mirrors where !["http", "https", "file"].contains(mirror.scheme ?? "") {
            throw ResourceError(.invalidArgument, "The mirror \(mirror.absoluteString) is not an http://, https:// or file:// URL; give the URL of the catalog's folder on the other origin.",
                                url: mirror)
        }
        self.configuration = configuration
        let clock = configuration.clock
        store = try ResourceStore(directory: configuration.storeDirectory, synchronousWrites: configuration.synchronousWrites,
                                  clock: { clock.now() })
        let base: any Transport
        if let injected = configuration.transport {
            base = injected
        } else {
            var engine = TransferEngine.Configuration()
            engine.maximumConcurrentTransfers = max(1, configuration.maximumConcurrentTransfers)
            engine.nonUrgentBandwidthWhileUrgent = configuration.downloadPolicy.nonUrgentBandwidthWhileUrgent
            engine.connectTimeout = configuration.connectTimeout
            engine.firstByteTimeout = configuration.firstByteTimeout
            engine.failoverStallTimeout = configuration.failoverStallTimeout
            base = try TransferEngine(configuration: engine)
        }
        transport = ManagedTransport(base: base, headers: configuration.extraHeaders)
        downloadGate = DownloadGate(policy: configuration.downloadPolicy, probe: configuration.networkProbe, clock: clock,
                                    storeDirectory: configuration.storeDirectory)
        let origins = OriginSet(configuration.origins, backOff: configuration.mirrorBackOff, clock: clock, store: store)
        let originLog = OriginLog(hub: hub, store: store)
        self.origins = origins
        self.originLog = originLog
        var client = CatalogClient(
            catalogURL: configuration.catalogURL, distribution: configuration.distribution, store: store,
            transport: transport, bundledCatalog: configuration.bundledCatalog, trust: configuration.trust,
            variants: configuration.variants)
        client.catalogID = configuration.catalogID
        if origins.origins.count > 1 {
            client.origins = origins
            client.allowsUnsignedCatalogFromMirrors = configuration.allowsUnsignedCatalogFromMirrors
            client.originSwitched = { [originLog] in originLog.record($0, $1) }
        }
        self.client = client
        lastUse = LastUseRecorder(store: store)
        // The measure the last manager on this store learned (1 on a new store): hints that went
        // unused before a restart are still held back after it.
        let learning = (try? store.prefetchLearning(rule: configuration.prefetchLearning)) ?? nil
        state = Locked(State(installedIDs: try store.installedPackIDs(),
                             learning: learning ?? PrefetchLearning(rule: configuration.prefetchLearning),
                             learningRecorder: PrefetchLearningRecorder(store: store)))
        originLog.attach(self)
        do {
            if let stored = try client.storedSnapshot() {
                try adopt(stored)
            }
        } catch where error.code == .untrustedCatalog {
            // A copy stored before the app trusted keys: start without one; prepare() fetches a signed one.
        }
    }

    deinit {
        let recorder = state.withLock { state in
            state.prefetch?.cancel()
            state.updateChecks?.cancel()
            state.watcher?.cancel()
            state.networkWatcher?.cancel()
            return state.learningRecorder
        }
        // The last judgments reach the store before the manager goes (a game quitting).
        recorder?.flush()
        try? traceRecorder.withLock { $0 }?.finish()
        hub.finish()
    }

    /// Events as they happen: installs, purges with their reasons, low disk space, catalog updates.
    public func events() -> AsyncStream<ResourceManagerEvent> { hub.subscribe() }

    /// Calls `observer` synchronously with each event, on the thread that emits it, until
    /// ``removeEventObserver(_:)``; for the C API's event queue (which has no NotificationCenter
    /// without the `FoundationAPI` trait). It must return at once.
    package func observeEvents(_ observer: @escaping @Sendable (ResourceManagerEvent) -> Void) -> UInt64 {
        hub.observe(observer)
    }

    /// Stops the observer ``observeEvents(_:)`` returned `token` for.
    package func removeEventObserver(_ token: UInt64) { hub.removeObserver(token) }

    /// The catalog version requests currently use, if the manager has one.
    public var currentVersion: Int? { state.withLock { $0.snapshot?.version } }

    /// Whether the catalog in use is a stored, signed copy past its `expires` time (only with
    /// trusted keys): installed packs keep serving, but nothing new installs (`catalog-expired`)
    /// until a fresh catalog is fetched online.
    public var isCatalogExpired: Bool { state.withLock { $0.snapshot?.isExpired ?? false } }

    /// Every tag of the current version, listing the packs this device downloads for it (common
    /// ones and those of its chosen variants) and their sizes.
    public var tags: [TagRecord] { state.withLock { $0.snapshot?.lookup.tags ?? [] } }

    // MARK: - Preparing

    /// Fetches the catalog (or uses the stored copy when offline), installs the initial-install
    /// tags, then starts fetching the prefetch tags in order, in the background, at low priority.
    ///
    /// The app is ready when it returns.
    ///
    /// When the server cannot be reached, or sends a stale `catalog.json` (older than the stored
    /// one, or expired: a cache or CDN edge behind a publish), it goes on with the stored catalog:
    /// the returned snapshot's ``CatalogSnapshot/fallback`` says why and since when, and
    /// ``ResourceManagerEvent/catalogCheckFailed(code:message:storedCheckedAt:)`` is posted.
    ///
    /// - Parameter online: `false` uses only the stored catalog and installs nothing new.
    /// - Returns: the catalog in use: from the network, or the stored copy (then with a `fallback`).
    /// - Throws: ``ResourceError``: `catalog-unavailable` when there is neither network nor a stored
    ///   catalog, `catalog-rollback` and `catalog-expired` only when nothing is stored,
    ///   `invalid-catalog`, with trusted keys `untrusted-catalog` (the catalog in use stays as it
    ///   was), and any install error of the initial tags.
    @discardableResult
    public func prepare(online: Bool = true) async throws(ResourceError) -> CatalogSnapshot {
        let snapshot = try await loadCatalog(online: online)
        let current = state.withLock { $0.snapshot } ?? snapshot
        let initial = current.manifest.initialInstallTags
        if !initial.isEmpty, online {
            try await install(tags: initial, priority: .urgent, progress: nil)
        }
        let prefetch = current.manifest.prefetchOrder
        guard online, !prefetch.isEmpty else { return snapshot }
        let task = Task { [weak self] in
            for tag in prefetch {
                guard let self, !Task.isCancelled else { return }
                try? await self.install(tags: [tag], priority: .loading(0), progress: nil)
            }
        }
        state.withLock { state in
            state.prefetch?.cancel()
            state.prefetch = task
        }
        return snapshot
    }

    /// Fetches the catalog (or uses the stored copy when offline or when the server cannot be
    /// reached) and makes it current, without installing anything; ``prepare(online:)`` without
    /// the initial-install and prefetch tags.
    ///
    /// - Returns: the snapshot fetched; its `fallback` says when it is the stored copy because the
    ///   server could not be reached or sent a stale `catalog.json` (and
    ///   ``ResourceManagerEvent/catalogCheckFailed(code:message:storedCheckedAt:)`` is posted).
    /// - Throws: ``ResourceError``: `catalog-unavailable` when there is neither network nor a
    ///   stored catalog, `catalog-rollback` or `catalog-expired` when nothing is stored, `invalid-catalog`.
    @discardableResult
    public func loadCatalog(online: Bool = true) async throws(ResourceError) -> CatalogSnapshot {
        let snapshot = try await client.snapshot(online: online)
        try adopt(snapshot)
        if let fallback = snapshot.fallback {
            hub.emit(.catalogCheckFailed(code: fallback.reason.code, message: fallback.reason.message, storedCheckedAt: fallback.checkedAt), from: self)
        }
        return snapshot
    }

    /// Waits until the background prefetch started by ``prepare(online:)`` has finished.
    public func waitForPrefetch() async {
        await state.withLock { $0.prefetch }?.value
    }

    // MARK: - Updates

    /// Checks the catalog for a new version now, and returns the newest version the manager knows.
    ///
    /// A new version takes effect at once when no request holds packs of the current one;
    /// otherwise requests keep using the version they began with, and the new one takes effect when
    /// the last of them ends (``currentVersion`` then changes and ``ResourceManagerEvent/catalogUpdated(version:)``
    /// is emitted). Nothing is downloaded: packs of the new version install when requests need them,
    /// moving only the files that changed.
    ///
    /// ```swift
    /// if try await manager.checkForUpdates() != manager.currentVersion { showUpdateBadge() }
    /// ```
    ///
    /// - Throws: ``ResourceError``: transfer errors (unreachable server, 404), `catalog-rollback`,
    ///   `invalid-catalog`. The current version stays as it was.
    @discardableResult
    public func checkForUpdates() async throws(ResourceError) -> Int {
        let snapshot = try await client.refresh()
        try adopt(snapshot)
        return snapshot.version
    }

    /// Checks for updates every `interval` in the background (``checkForUpdates()``), until called
    /// again with `nil` or the manager goes away. A failed check (no network, say) posts
    /// ``ResourceManagerEvent/catalogCheckFailed(code:message:storedCheckedAt:)``; the next one tries again. Intervals under one second are raised to one second, so
    /// a zero or negative value cannot turn into a loop that hammers the server.
    ///
    /// ```swift
    /// manager.checkForUpdates(every: .seconds(15 * 60))
    /// ```
    public func checkForUpdates(every interval: Duration?) {
        let task = interval.map { requested in
            let interval = max(requested, .seconds(1))
            return Task { [weak self] in
                while !Task.isCancelled {
                    try? await Task.sleep(for: interval)
                    guard !Task.isCancelled, let self else { return }
                    do throws(ResourceError) {
                        try await self.checkForUpdates()
                    } catch where error.code != .cancelled {
                        let checkedAt = (try? self.store.followedCatalog(url: self.client.catalogURL))??.checkedAt
                        self.hub.emit(.catalogCheckFailed(code: error.code, message: error.message, storedCheckedAt: checkedAt), from: self)
                    } catch {}
                }
            }
        }
        let previous = state.withLock { state in
            defer { state.updateChecks = task }
            return state.updateChecks
        }
        previous?.cancel()
    }

    /// Makes `snapshot` the current version, or keeps it pending while requests use the current one.
    func adopt(_ snapshot: CatalogSnapshot) throws(ResourceError) {
        let catalog = try LedgerCatalog(manifest: snapshot.lookup)
        // Storing a version marks packs installed with other contents than it lists not installed.
        let stored = try? store.installedPackIDs()
        let changed: Bool = state.withLock { state in
            // A catalog is its id: a start offline from a store's only catalog may meet another one online.
            if let current = state.snapshot, current.version == snapshot.version, current.catalogURL == snapshot.catalogURL,
               current.index.id == snapshot.index.id {
                return false
            }
            if let ledger = state.ledger, ledger.inUseBytes > 0 || ledger.packReferenceCounts.contains(where: { $0 > 0 }) {
                state.pendingSnapshot = snapshot
                return false
            }
            var ledger = Ledger(catalog: catalog, inUseLimit: configuration.inUseLimit)
            ledger.inUseLimit = configuration.inUseLimit
            state.snapshot = snapshot
            state.ledger = ledger
            if let stored { state.installedIDs = stored }
            state.installed = catalog.packIDs.map { state.installedIDs.contains($0) }
            return true
        }
        if changed { hub.emit(.catalogUpdated(version: snapshot.version), from: self) }
    }

    /// Adopts a pending version once no request uses the current one.
    func adoptPendingIfIdle() {
        let pending: CatalogSnapshot? = state.withLock { state in
            guard let pending = state.pendingSnapshot, let ledger = state.ledger,
                  !ledger.packReferenceCounts.contains(where: { $0 > 0 }) else { return nil }
            state.pendingSnapshot = nil
            return pending
        }
        if let pending { try? adopt(pending) }
    }

    // MARK: - Queries

    /// The bytes a request for `tags` would download now: packs already installed, or shared with
    /// installed tags, cost nothing, and neither do entries whose content an installed pack of any
    /// version holds (an update fetches only the files that changed) or that an interrupted install
    /// already verified. A pack being downloaded (for a request, a prefetch or a hint) costs at
    /// most what its download has left to move, which a request would join.
    ///
    /// So the figure only falls while a download runs: 0 means nothing is left to move, not that
    /// the tags are installed (verified entries still become an installed pack in a moment; wait
    /// for ``ResourceManagerEvent/tagAvailable(tag:)`` for that).
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` for a tag the catalog does not define; for a split
    ///   catalog, `catalog-unavailable` for a tag not described yet (call ``describe(tags:)`` first).
    public func downloadSize(forTags tags: Set<String>) throws(ResourceError) -> Int64 {
        let (snapshot, missing) = try state.withLock { state throws(ResourceError) in
            let snapshot = try Self.requireSnapshot(state)
            let ids = try Self.packIDs(forTags: tags, in: snapshot)
            return (snapshot, ids.filter { !state.installedIDs.contains($0) })
        }
        guard !missing.isEmpty else { return 0 }
        let planned = plannedDownloadBytes(of: missing, in: snapshot)
        return state.withLock { state in
            var left: [Int64] = []
            for id in missing where !state.installedIDs.contains(id) { left.append(Self.leftToMove(planned[id] ?? 0, pack: id, state)) }
            return left.clampedSum()
        }
    }

    /// What a missing pack costs a request now, given `planned`, what installing it would download
    /// (``plannedDownloadBytes(of:in:)``, read before this call): at most what a running download
    /// of it, which the request would join, has left to move. The plan alone reads the store, which
    /// an install changes in steps: between moving the verified entries out of staging and recording
    /// the pack installed it is the whole archive again. Call with the lock held, after planning.
    static func leftToMove(_ planned: Int64, pack: String, _ state: State) -> Int64 {
        guard let remaining = state.downloads[pack]?.remainingUnlessAbandoned else { return planned }
        return min(planned, remaining)
    }

    /// Sets the preservation priority (0...1) of tags; it persists across launches. Packs whose
    /// tags have higher priority are purged later: each 0.06 of priority halves how fast a pack
    /// ages, so of two packs used as often at the same time the lower priority goes first
    /// (``PurgePlanner``; how often a pack is used weighs too).
    ///
    /// - Throws: ``ResourceError`` `invalid-argument` for a priority outside 0...1, `invalid-tag`
    ///   for unknown tags; nothing changes then.
    public func setPreservationPriority(_ priority: Double, forTags tags: Set<String>) throws(ResourceError) {
        guard (0...1).contains(priority) else {
            throw ResourceError(.invalidArgument, "A preservation priority must be in 0...1; \(priority) is not. Pass a value from 0 (purged first) to 1 (kept longest).")
        }
        let snapshot = try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }
        _ = try Self.packIDs(forTags: tags, in: snapshot)
        let recorder = traceRecorder.withLock { $0 }
        recorder?.resolveCatalog()
        for tag in tags.sorted() {
            try store.setPreservationPriority(priority, forTag: tag, catalogURL: snapshot.catalogURL)
        }
        recorder?.preservationPriority(priority, tags: tags)
    }

    /// The preservation priority of a tag: the app's setting, or the catalog's default.
    public func preservationPriority(forTag tag: String) throws(ResourceError) -> Double {
        let snapshot = try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }
        _ = try Self.packIDs(forTags: [tag], in: snapshot)
        return snapshot.preservationPriority(ofTag: tag, overrides: try store.preservationPriorityOverrides(catalogURL: snapshot.catalogURL))
    }

    static func requireSnapshot(_ state: State) throws(ResourceError) -> CatalogSnapshot {
        guard let snapshot = state.snapshot else {
            throw ResourceError(.catalogUnavailable, "The manager has no catalog yet. Call prepare() first (with the network on the first time).")
        }
        return snapshot
    }

    /// The ids of the packs `tags` need, sorted.
    static func packIDs(forTags tags: some Collection<String>, in snapshot: CatalogSnapshot) throws(ResourceError) -> [String] {
        for tag in tags where snapshot.lookup.tag(named: tag) == nil {
            guard snapshot.split == nil else { throw snapshot.undescribed(tag) }
            throw ResourceError(.invalidTag, "The catalog (version \(snapshot.version)) has no tag '\(tag)'. Check the spelling, or rebuild the catalog with a rule for it.")
        }
        return snapshot.lookup.packs(forTags: tags)
    }
}

/// Records last-use times and use counts off the hot path: begin and end note the packs (a begin
/// also counts a use), and one background write stores them (purging flushes first, so its order
/// is always current).
final class LastUseRecorder: Sendable {
    private let store: ResourceStore
    private let pending = Locked<(ids: Set<String>, beginnings: [String: Int], scheduled: Bool)>(([], [:], false))
    /// Held while a flush takes and writes the pending uses, so that when ``flush()`` returns every
    /// use noted before it is stored, even if a background flush had already taken them.
    private let flushing = Locked(())

    init(store: ResourceStore) { self.store = store }

    func note(_ ids: some Sequence<String>, began: Bool) {
        let schedule: Bool = pending.withLock { pending in
            for id in ids {
                pending.ids.insert(id)
                if began { pending.beginnings[id, default: 0] += 1 }
            }
            guard !pending.scheduled, !pending.ids.isEmpty else { return false }
            pending.scheduled = true
            return true
        }
        if schedule { Task.detached { [self] in flush() } }
    }

    func flush() {
        flushing.withLock { _ in
            let (ids, beginnings) = pending.withLock { pending in
                defer { pending = ([], [:], false) }
                return (pending.ids, pending.beginnings)
            }
            if !ids.isEmpty { try? store.markUsed(ids, beginnings: beginnings) }
        }
    }
}
