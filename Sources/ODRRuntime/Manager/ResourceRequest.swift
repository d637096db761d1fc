#if FoundationAPI
import Foundation
#elseif canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// A request for the resources of some tags, as a game asks for a level.
///
/// Begin it to download (if needed) and hold its tags' packs; while it is accessing, its files are
/// ordinary files that ``url(forResource:withExtension:subdirectory:)`` finds. End it (or let it
/// go) when the level is over: its packs may then be purged when space is needed.
///
/// ```swift
/// let level = ResourceRequest(tags: ["level3"], manager: manager)
/// level.loadingPriority = .urgent
/// if await !level.conditionallyBeginAccessingResources() {
///     try await level.beginAccessingResources()      // downloads what is missing
/// }
/// let map = try Data(contentsOf: level.url(forResource: "map", withExtension: "json",
///                                          subdirectory: "Levels/Level3")!)
/// try level.endAccessingResources()
/// ```
///
/// States: `initial` --begin--> `requested` --(installed)--> `accessing` --end--> `ended`;
/// a failed begin returns to `initial` with nothing held, so it may be begun again.
public final class ResourceRequest: Sendable {
    /// Where a request stands.
    public enum State: String, Sendable {
        /// `initial` until begun, `requested` while downloading, `accessing` while holding its packs, then `ended`.
        case initial, requested, accessing, ended
    }

    /// The tags this request asks for.
    public let tags: Set<String>
    /// The manager that serves it.
    public let manager: ResourceManager
    #if FoundationAPI
    /// Archive bytes of the packs to install, plus one unit for the install; `completedUnitCount`
    /// reaches `totalUnitCount` only once the resources are usable (see ``ProgressSnapshot`` for
    /// what counts). Its `cancel()`, `pause()` and `resume()` act on the downloads.
    ///
    /// Only with the package trait `FoundationAPI` (on by default), since `Progress` is in
    /// Foundation, not FoundationEssentials; ``progressUpdates``, ``progressSnapshot`` and
    /// ``setDownloadsPaused(_:)`` tell the same without it.
    public let progress: Progress
    /// Serializes the progress's pausing and resuming handlers.
    private let pauseOrder = Locked(())
    #endif

    private let box: Locked<Inner>
    /// Tells this request's priority apart from other requests' on downloads they share.
    private let requesterID = ResourceManager.nextRequesterID()
    private let reporter: RequestProgress

    private struct Inner {
        var state: State = .initial
        var priority: TransferPriority = .normal
        var heldTags: [TagIndex] = []
        var packIDs: Set<String> = []
        var downloads: [PackDownload] = []
        var waiter: Task<Void, any Error>?
        /// This request's begin in the trace being recorded, if any; ended with the request.
        var trace: TraceTicket?
    }

    /// A point-in-time view of a request's progress, for platforms without key-value observing.
    ///
    /// Counts archive bytes of the packs the request waits for. Entries an install already holds
    /// (kept by an earlier, interrupted attempt, or reused from installed packs) count as done as
    /// soon as its plan is made, so a resumed download starts where it stopped; then bytes count as
    /// they arrive: a new value at least every 16 KiB or 100 ms while they do. Values never go back,
    /// and ``totalBytes`` stays what it was at the begin.
    public struct ProgressSnapshot: Sendable, Equatable {
        /// Bytes the downloads the request waits for held or received so far; reaches
        /// ``totalBytes`` only when the resources are usable.
        public var completedBytes: Int64
        /// The archive size of the packs the request waits for; 0 when everything was installed.
        public var totalBytes: Int64
        /// 0...1; 1 only when the resources are usable.
        public var fractionCompleted: Double
        /// While ``isStalled``: the latest failed attempt, and when the next one starts (see
        /// ``ResourceManagerEvent/downloadRetrying(packID:reason:attempt:nextAttempt:)``).
        public var retry: TransferRetry?

        /// Whether a download waits to try again after a failed attempt (the connection failed or
        /// broke off, say): no bytes arrive until the next attempt. `false` again once it gets an answer.
        public var isStalled: Bool { retry != nil }
    }

    /// Creates a request; nothing happens until it begins.
    public init(tags: Set<String>, manager: ResourceManager) {
        self.tags = tags
        self.manager = manager
        box = Locked(Inner())
        #if FoundationAPI
        progress = Progress(totalUnitCount: 1)
        reporter = RequestProgress(progress: progress)
        progress.isCancellable = true
        progress.isPausable = true
        progress.cancellationHandler = { [weak self] in self?.cancel() }
        // Foundation on Linux runs these handlers asynchronously on a global queue, so a pause
        // followed at once by a resume can reach us in either order. Each handler therefore applies
        // the progress's state as it is now, not the call that scheduled it: the last to run sees
        // the final state, and a quick pause + resume never leaves the downloads paused.
        progress.pausingHandler = { [weak self] in self?.applyProgressPauseState() }
        progress.resumingHandler = { [weak self] in self?.applyProgressPauseState() }
        #else
        reporter = RequestProgress()
        #endif
    }

    deinit {
        let inner = box.withLock { $0 }
        inner.waiter?.cancel()
        if inner.state == .accessing || inner.state == .requested {
            manager.release(tags: inner.heldTags, packIDs: inner.packIDs)
            inner.trace?.end()
        }
        reporter.ended()
    }

    /// The request's state.
    public var state: State { box.withLock { $0.state } }

    /// Progress snapshots as bytes arrive, each new value once. Every read returns a new stream: it
    /// yields the current value (once the request has begun), then each new one, and finishes when
    /// the request becomes usable (after yielding the final value), its begin fails, or it ends.
    /// Read after a failed begin, it follows the next begin.
    ///
    /// ```swift
    /// let updates = level.progressUpdates
    /// async let ready: Void = level.beginAccessingResources()
    /// for await update in updates { loadingBar.show(update.fractionCompleted, stalled: update.isStalled) }
    /// try await ready
    /// ```
    public var progressUpdates: AsyncStream<ProgressSnapshot> { reporter.subscribe() }

    /// The latest progress value, for a frame loop that polls.
    public var progressSnapshot: ProgressSnapshot { reporter.snapshot }

    /// Calls `observer` with each new progress value until ``removeProgressObserver(_:)``; for the
    /// C API. It runs under the progress lock on a library thread: it must return at once.
    package func observeProgress(_ observer: @escaping @Sendable (ProgressSnapshot) -> Void) -> UInt64 {
        reporter.observe(observer)
    }

    /// Stops calling an observer of ``observeProgress(_:)``.
    package func removeProgressObserver(_ token: UInt64) {
        reporter.removeObserver(token)
    }

    /// How urgently to download: `.urgent` takes the bandwidth; `.loading(0...1)` orders the rest.
    /// Changing it while downloading reorders the transfers.
    public var loadingPriority: TransferPriority {
        get { box.withLock { $0.priority } }
        set {
            let downloads = box.withLock { inner in
                inner.priority = newValue
                return inner.downloads
            }
            manager.setPriority(newValue, of: downloads, for: requesterID)
        }
    }

    // MARK: - Beginning and ending

    /// Downloads what the tags need (joining downloads already running) and holds their packs.
    ///
    /// - Throws: ``ResourceError``: `begin-twice` while requested or accessing, `begin-after-end`,
    ///   `invalid-tag`, `exceeded-maximum-in-use-size`, `out-of-space`, `cancelled`, and transfer or
    ///   `integrity` errors. After an error nothing is held and the request can begin again.
    ///
    /// For a split catalog, tags the device has not described yet are described first
    /// (``ResourceManager/describe(tags:)``), which fetches their metadata.
    public func beginAccessingResources() async throws(ResourceError) {
        if manager.needsDescription(of: tags) {
            try box.withLock { inner throws(ResourceError) in try Self.checkCanBegin(inner.state) }
            try await describeTags()
        }
        try await finishBegin(try startBegin())
    }

    /// Begins at once and waits for the resources in a task: when this returns, the request is
    /// `requested` (a second begin throws `begin-twice` at once), and `completion` is called once,
    /// on a task, with the outcome of ``beginAccessingResources()``.
    ///
    /// - Returns: the task that waits; cancelling it cancels the begin (`cancelled`, and the request
    ///   is back in `initial`).
    /// - Throws: ``ResourceError`` found before anything starts (`begin-twice`, `begin-after-end`,
    ///   `invalid-tag`, `catalog-unavailable`, `exceeded-maximum-in-use-size`); `completion` is then
    ///   never called and nothing changed.
    ///
    /// For a split catalog whose tags the device has not described yet, the task describes them
    /// first (``ResourceManager/describe(tags:)``): the request is `requested` once they are, and
    /// an error in describing them (`invalid-tag` for a tag the version does not define, transfer
    /// errors) reaches `completion`.
    @discardableResult
    public func startAccessingResources(
        completion: @escaping @Sendable (Result<Void, ResourceError>) -> Void
    ) throws(ResourceError) -> Task<Void, Never> {
        if manager.needsDescription(of: tags) {
            try box.withLock { inner throws(ResourceError) in try Self.checkCanBegin(inner.state) }
            return Task {
                do throws(ResourceError) {
                    try await describeTags()
                    try await finishBegin(try startBegin())
                    completion(.success(()))
                } catch {
                    completion(.failure(error))
                }
            }
        }
        let started = try startBegin()
        return Task {
            do throws(ResourceError) {
                try await finishBegin(started)
                completion(.success(()))
            } catch {
                completion(.failure(error))
            }
        }
    }

    /// What ``startBegin()`` started and ``finishBegin(_:)`` waits for.
    private struct StartedBegin: Sendable {
        let held: [TagIndex]
        let ids: Set<String>
        let waiter: Task<Void, any Error>
    }

    /// The synchronous half of a begin: checks the state, holds the tags and starts the downloads;
    /// the request is `requested` when it returns.
    private func startBegin() throws(ResourceError) -> StartedBegin {
        let (held, ids, downloads) = try box.withLock { inner throws(ResourceError) in
            try Self.checkCanBegin(inner.state)
            let (held, ids, downloads) = try reporter.failing { () throws(ResourceError) in try manager.beginTags(tags) }
            inner.state = .requested
            inner.heldTags = held
            inner.packIDs = ids
            inner.downloads = downloads
            inner.trace = manager.traceBegin(tags, priority: inner.priority)
            // Under the lock `loadingPriority`'s setter takes, so a priority set right after this
            // begin is applied after this one, never overwritten by it.
            manager.setPriority(inner.priority, of: downloads, for: requesterID)
            return (held, ids, downloads)
        }
        reporter.began(downloads)
        // Hinted prefetches pause now, before the begin returns, rather than when the waiting task
        // first runs: once a request has begun, a prefetch takes at most the chunk in flight.
        if !downloads.isEmpty { manager.hintedPrefetchesYield(to: downloads) }
        let waiter = Task { [manager, requesterID] in
            try await manager.wait(for: downloads, priority: nil, requester: requesterID, progress: nil, yielded: true)
        }
        box.withLock { $0.waiter = waiter }
        return StartedBegin(held: held, ids: ids, waiter: waiter)
    }

    /// The asynchronous half of a begin: waits for the downloads, then makes the request accessing
    /// (or, on an error or cancellation, releases what ``startBegin()`` held).
    private func finishBegin(_ started: StartedBegin) async throws(ResourceError) {
        let (held, ids, waiter) = (started.held, started.ids, started.waiter)
        do {
            try await withTaskCancellationHandler {
                try await waiter.value
            } onCancel: {
                waiter.cancel()
            }
        } catch {
            let stillMine = box.withLock { inner -> (Bool, trace: TraceTicket?) in
                guard inner.state == .requested else { return (false, nil) }
                let trace = inner.trace
                inner.state = .initial
                inner.heldTags = []
                inner.packIDs = []
                inner.downloads = []
                inner.waiter = nil
                inner.trace = nil
                return (true, trace)
            }
            if stillMine.0 {
                manager.release(tags: held, packIDs: ids)
                stillMine.trace?.end()
            }
            reporter.failed()
            throw (error as? ResourceError) ?? ResourceError(.cancelled, "The request was cancelled before its resources were ready.")
        }
        let accessing = box.withLock { inner -> Bool in
            guard inner.state == .requested else { return false }
            inner.state = .accessing
            inner.downloads = []
            inner.waiter = nil
            return true
        }
        guard accessing else {
            throw ResourceError(.cancelled, "The request was ended before its resources were ready.")
        }
        manager.noteUse(ids, began: true)
        reporter.usable()
    }

    /// ``beginAccessingResources()`` with a completion handler, called with `nil` on success and
    /// with the ``ResourceError`` the async form throws otherwise.
    ///
    /// The request is `requested` when this returns (see ``startAccessingResources(completion:)``);
    /// an error found at once (`begin-twice`, ...) still reaches `completionHandler`, from a task.
    public func beginAccessingResources(completionHandler: @escaping @Sendable (ResourceError?) -> Void) {
        do {
            try startAccessingResources { result in
                switch result {
                case .success: completionHandler(nil)
                case .failure(let error): completionHandler(error)
                }
            }
        } catch {
            Task { completionHandler(error) }
        }
    }

    /// Begins accessing only if every pack the tags need is already installed; never downloads.
    ///
    /// - Returns: `true` when the request is now accessing; `false` (and nothing changed) when
    ///   something would have to be downloaded, a tag is unknown, the in-use limit would be
    ///   exceeded, or the request is not in its initial state.
    public func conditionallyBeginAccessingResources() async -> Bool {
        beginAccessingResourcesIfInstalled()
    }

    /// ``conditionallyBeginAccessingResources()`` for callers that cannot `await`: a frame loop, or
    /// the C API. It never downloads and never blocks on the network, so it needs no suspension.
    ///
    /// - Returns: `true` when the request is now accessing; `false` (and nothing changed) otherwise.
    public func beginAccessingResourcesIfInstalled() -> Bool {
        let ids: Set<String>? = box.withLock { inner in
            guard inner.state == .initial, let (held, ids) = manager.beginTagsIfInstalled(tags) else { return nil }
            inner.state = .accessing
            inner.heldTags = held
            inner.packIDs = ids
            inner.trace = manager.traceBegin(tags, priority: inner.priority)
            return ids
        }
        guard let ids else { return false }
        manager.noteUse(ids, began: true)
        reporter.usable()
        return true
    }

    /// Stops accessing: the tags' packs may be purged once no other request holds them.
    ///
    /// Ending a request that is still downloading cancels its wait (downloads other requests
    /// need go on).
    ///
    /// - Throws: ``ResourceError`` `end-before-begin` if the request never began, or already ended.
    public func endAccessingResources() throws(ResourceError) {
        let inner = try box.withLock { inner throws(ResourceError) -> Inner in
            guard inner.state == .requested || inner.state == .accessing else {
                throw ResourceError(
                    .endBeforeBegin,
                    inner.state == .ended ? "The request has already ended; end each request once."
                                          : "The request was never begun; call beginAccessingResources() first.")
            }
            let copy = inner
            inner.state = .ended
            inner.heldTags = []
            inner.downloads = []
            inner.waiter = nil
            inner.trace = nil
            return copy
        }
        inner.waiter?.cancel()
        manager.release(tags: inner.heldTags, packIDs: inner.packIDs)
        inner.trace?.end()
        reporter.ended()
    }

    // MARK: - Resources

    /// The installed file of a resource this request holds, or `nil` when the request is not
    /// accessing or the resource belongs to a tag it does not hold.
    ///
    /// - Parameters:
    ///   - name: the file name, with or without extension.
    ///   - ext: an extension to append (`json` for `map` -> `map.json`).
    ///   - subdirectory: the folder inside the asset tree (`Levels/Level3`).
    public func url(forResource name: String, withExtension ext: String? = nil, subdirectory: String? = nil) -> URL? {
        var path = name
        if let ext, !ext.isEmpty { path += ext.hasPrefix(".") ? ext : "." + ext }
        if let subdirectory, !subdirectory.isEmpty {
            path = subdirectory.hasSuffix("/") ? subdirectory + path : subdirectory + "/" + path
        }
        let packs = box.withLock { $0.state == .accessing ? $0.packIDs : [] }
        guard !packs.isEmpty else { return nil }
        return manager.installedURL(forResource: path, amongPacks: packs)
    }

    /// The path of a resource this request holds (a logical path such as `Levels/Level3/map.json`).
    public func path(forResource path: String) -> String? {
        url(forResource: path)?.path
    }

    /// Pauses (`true`) or resumes this request's downloads at once, as `progress.pause()` and
    /// `progress.resume()` do through their handlers; for callers without a `Progress` (the C API).
    public func setDownloadsPaused(_ paused: Bool) {
        setPaused(paused)
    }

    // MARK: - Private

    /// Describes the tags of a split catalog before a begin; a failure ends the progress streams,
    /// as a begin that fails does.
    private func describeTags() async throws(ResourceError) {
        do {
            try await manager.describe(tags: tags)
        } catch {
            reporter.failed()
            throw error
        }
    }

    private static func checkCanBegin(_ state: State) throws(ResourceError) {
        switch state {
        case .initial: return
        case .requested, .accessing:
            throw ResourceError(.beginTwice, "The request has already begun; create another request to hold the tags twice.")
        case .ended:
            throw ResourceError(.beginAfterEnd, "The request has ended; create a new request to access the tags again.")
        }
    }

    #if FoundationAPI
    private func cancel() {
        box.withLock { $0.waiter }?.cancel()
    }

    /// Applies `progress.isPaused` to the downloads, one handler at a time (see `init`).
    private func applyProgressPauseState() {
        pauseOrder.withLock { _ in setPaused(progress.isPaused) }
    }
    #endif

    private func setPaused(_ paused: Bool) {
        manager.setPaused(paused, downloads: box.withLock { $0.downloads })
    }
}
