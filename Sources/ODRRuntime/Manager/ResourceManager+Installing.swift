#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

extension ResourceManager {
    /// Installs what `tags` need without marking them in use (initial install, prefetch, `odr fetch`).
    func install(tags: [String], priority: TransferPriority, progress: (@Sendable (Int64, Int64) -> Void)?) async throws(ResourceError) {
        let downloads = try state.withLock { state throws(ResourceError) in
            let snapshot = try Self.requireSnapshot(state)
            let ids = try Self.packIDs(forTags: tags, in: snapshot)
            return startDownloads(of: ids, snapshot: snapshot, state: &state)
        }
        try await wait(for: downloads, priority: priority, requester: Self.nextRequesterID(), progress: progress)
    }

    private static let requesterCounter = Locked<UInt64>(0)

    /// A number that tells one waiter on downloads (a request, a prefetch) from the others.
    static func nextRequesterID() -> UInt64 {
        requesterCounter.withLock { counter in
            counter += 1
            return counter
        }
    }

    /// Joins or starts a download for every pack of `ids` that is not installed. Call with the lock held.
    ///
    /// - Parameter hint: the hint asking, when one does: the downloads it starts log their steps.
    func startDownloads(of ids: [String], snapshot: CatalogSnapshot, state: inout State, hint: HintedPrefetch? = nil) -> [PackDownload] {
        var downloads: [PackDownload] = []
        for id in ids where !state.installedIDs.contains(id) {
            guard let pack = snapshot.lookup.pack(id: id) else { continue }
            let previous = state.downloads[id]
            if let existing = previous, existing.retainUnlessAbandoned() {
                downloads.append(existing)
                continue
            }
            let download = PackDownload(pack: id, bytes: pack.archiveBytes, startedByHint: hint)
            download.retain()
            state.downloads[id] = download
            if !state.hints.isEmpty {
                // Its place among queued transfers of equal priority (a hint named it earlier).
                let likelihood = state.hints.likelihood(ofPack: id)
                if likelihood > 0 { transport.setHintLikelihood(likelihood, for: snapshot.packURL(id: id)) }
            }
            download.start { [self] () throws(ResourceError) in
                do throws(ResourceError) {
                    // An abandoned install of the same pack winds down first (they would share
                    // its staging folder), and may have finished the pack after all.
                    if let previous {
                        await previous.finished()
                        if self.state.withLock({ $0.installedIDs.contains(id) }) {
                            self.state.withLock { if $0.downloads[id] === download { $0.downloads[id] = nil } }
                            return
                        }
                    }
                    try await installPack(pack, snapshot: snapshot, download: download)
                } catch {
                    self.state.withLock { if $0.downloads[id] === download { $0.downloads[id] = nil } }
                    throw error
                }
            }
            downloads.append(download)
        }
        if !downloads.isEmpty {
            watchDiskWhileActive(&state)
            watchNetworkWhileActive(&state)
        }
        return downloads
    }

    /// Waits for `downloads`, reporting bytes received of bytes to download; releases them after,
    /// and withdraws `requester`'s priority from them.
    ///
    /// - Parameters:
    ///   - priority: `requester`'s priority, applied first; `nil` when the caller applied it.
    ///   - yielded: whether the caller already made hinted prefetches yield to `downloads`
    ///     (``hintedPrefetchesYield(to:)``, when `downloads` is not empty); the wait ends the yield.
    func wait(for downloads: [PackDownload], priority: TransferPriority?, requester: UInt64,
              progress: (@Sendable (Int64, Int64) -> Void)?, yielded: Bool = false) async throws(ResourceError) {
        defer {
            withdrawPriority(of: downloads, for: requester)
            for download in downloads { download.release() }
        }
        guard !downloads.isEmpty else { return }
        if let priority { setPriority(priority, of: downloads, for: requester) }
        // Hinted prefetches yield the bandwidth while anyone waits for a download.
        if !yielded { hintedPrefetchesYield(to: downloads) }
        defer { hintedPrefetchesYield(to: nil) }
        var tokens: [(PackDownload, UInt64)] = []
        if let progress {
            // The total is read each time: a download's size becomes its plan's once known.
            let report: @Sendable (Int64) -> Void = { _ in
                progress(downloads.reduce(Int64(0)) { $0 + $1.received }, downloads.reduce(Int64(0)) { $0 + $1.bytes })
            }
            tokens = downloads.map { ($0, $0.addObserver(report)) }
            report(0)
        }
        defer { for (download, token) in tokens { download.removeObserver(token) } }
        for download in downloads { try await download.wait() }
    }

    /// Sets `requester`'s priority on downloads. Each download's transfers run at the highest
    /// priority among the requests waiting on it, so a later, lower request never demotes an urgent one.
    func setPriority(_ priority: TransferPriority, of downloads: [PackDownload], for requester: UInt64) {
        guard let snapshot = state.withLock({ $0.snapshot }) else { return }
        for download in downloads {
            transport.setPriority(download.setPriority(priority, for: requester), for: snapshot.packURL(id: download.pack))
        }
        downloadGate.changed()
    }

    /// `requester` stops waiting: each download drops to the highest priority of those still waiting.
    func withdrawPriority(of downloads: [PackDownload], for requester: UInt64) {
        guard let snapshot = state.withLock({ $0.snapshot }) else { return }
        for download in downloads {
            guard let rest = download.withdrawPriority(of: requester) else { continue }
            transport.setPriority(rest, for: snapshot.packURL(id: download.pack))
        }
        downloadGate.changed()
    }

    /// Pauses or resumes the transfers of `downloads`.
    func setPaused(_ paused: Bool, downloads: [PackDownload]) {
        guard let snapshot = state.withLock({ $0.snapshot }) else { return }
        for download in downloads { transport.setPaused(paused, for: snapshot.packURL(id: download.pack)) }
    }

    /// The installer with the manager's settings.
    /// `discovered`: peers found on the local network, asked after ``Configuration/peers``.
    func makeInstaller(discovered: [URL] = []) -> PackInstaller {
        var installer = PackInstaller(store: store, transport: transport, bundledCatalog: configuration.bundledCatalog)
        installer.rangePolicy = configuration.rangePolicy
        let peers = configuration.peers + discovered
        if !peers.isEmpty {
            installer.peers = PeerSet(peers, firstByteSeconds: configuration.peerFirstByteTimeout)
            installer.peerRequestGate = peerRequestGate
        }
        if origins.origins.count > 1 {
            installer.origins = origins
            installer.originSwitched = { [originLog] in originLog.record($0, $1) }
        }
        return installer
    }

    /// What installing each of `ids` would download now (see ``PackInstaller/downloadBytes(of:in:)``);
    /// the catalog's archive sizes when the store cannot be read.
    func plannedDownloadBytes(of ids: some Sequence<String>, in snapshot: CatalogSnapshot) -> [String: Int64] {
        let packs = ids.compactMap { snapshot.lookup.pack(id: $0) }
        if let planned = try? makeInstaller().downloadBytes(of: packs, in: snapshot) { return planned }
        return Dictionary(packs.map { ($0.id, $0.archiveBytes) }, uniquingKeysWith: { first, _ in first })
    }

    /// Makes room, then downloads, verifies and installs one pack; logs the steps of a hinted
    /// prefetch in the store (``StoreEvent/Kind/hint``).
    private func installPack(_ pack: PackRecord, snapshot: CatalogSnapshot, download: PackDownload) async throws(ResourceError) {
        guard let hint = download.startedByHint else {
            return try await installUnlogged(pack, snapshot: snapshot, download: download)
        }
        // The log is a record, not a condition of the download: a failed write loses only the line.
        func log(_ bytes: Int64, _ reason: String) {
            try? store.log(.hint, pack.id, bytes: bytes, reason: reason, doing: "log a hinted prefetch")
        }
        log(download.bytes, "prefetch started: hinted at likelihood \(hint.likelihood) (tags: \(hint.tags.joined(separator: ", ")))")
        do throws(ResourceError) {
            try await installUnlogged(pack, snapshot: snapshot, download: download)
        } catch {
            if error.code == .cancelled, download.isAbandoned {
                log(download.received, "prefetch cancelled: every hint naming it ended")
            } else {
                log(download.received, "prefetch failed: \(error.code)")
            }
            throw error
        }
        let requesters = download.requesters
        let joined = state.withLock { state in
            let joined = requesters.contains { !state.hints.isHint($0) }
            // Used already, or awaiting a request (judged then, or unused when purged first).
            if joined { state.judge(bytes: download.bytes, used: true) } else { state.awaitingJudgment[pack.id] = (download.bytes, false) }
            return joined
        }
        log(pack.installedBytes, joined ? "prefetch installed: a request (or prefetch, fetch) joined it first"
                                         : "prefetch installed: before any request asked for it")
    }

    private func installUnlogged(_ pack: PackRecord, snapshot: CatalogSnapshot, download: PackDownload) async throws(ResourceError) {
        try snapshot.requireUnexpired()
        let ticket = try await admitDownload(of: pack, snapshot: snapshot, download: download)
        defer { ticket?.finish() }
        // Entries are assembled where the pack will live (staging is renamed into packs/), so
        // the pack's installed size is all the room it takes; no archive copy is kept. Files the
        // store holds become hard links and take none: only the rest is reserved.
        let room = (try? makeInstaller().newDiskBytes(of: pack, in: snapshot)) ?? pack.installedBytes
        if let shield = hintShield(for: download) {
            // Only hints want the pack: it may take room only from what is less likely wanted,
            // and none at all while hinted bytes go unused (the learning rule). A request that
            // joined meanwhile makes room as any request does.
            let mayPurge = state.withLock { $0.learning.allowance == .makeRoom }
            do throws(ResourceError) {
                try await makeRoom(installing: room, reserve: true, sparingHintsFrom: shield, purging: mayPurge)
            } catch where hintShield(for: download) == nil && [.cacheBudgetExceeded, .outOfSpace].contains(error.code) {
                try await makeRoom(installing: room, reserve: true)
            } catch {
                if !mayPurge, error.code == .cacheBudgetExceeded || error.code == .outOfSpace {
                    // Held back by the rule: judged when a request begins it or its hints end.
                    state.withLock { state in
                        if state.awaitingJudgment[pack.id] == nil { state.awaitingJudgment[pack.id] = (download.bytes, true) }
                    }
                }
                throw error
            }
        } else {
            try await makeRoom(installing: room, reserve: true)
        }
        var installer = makeInstaller(discovered: await discoveredPeers(catalogID: snapshot.index.id))
        installer.maximumConcurrentInstalls = 1
        do throws(ResourceError) {
            download.summary = try await installer.install([pack], from: snapshot) { [hub] progress in
                let newRetry = download.update(progress)
                ticket?.progress(progress.completedBytes)
                if newRetry, let retry = progress.retry {
                    hub.emit(.downloadRetrying(packID: pack.id, reason: retry.code, attempt: retry.failedAttempt,
                                               nextAttempt: retry.nextAttempt), from: self)
                }
            }
        } catch {
            releaseReservation(room)
            if error.code != .cancelled {
                recheckNetworkAfterFailure()
                let sentence = error.message.prefix { $0 != "." }.prefix(200)
                try? store.log(.failure, pack.id, bytes: download.received, reason: "install failed: error[\(error.code.rawValue)] \(sentence)",
                               doing: "log a failed install")
            }
            throw error
        }
        // The bytes are installed now, so counted as used: no longer promised (in one step with
        // the install's state, so the disk check below counts them once).
        let coverage = state.withLock { state in
            state.reservedBytes = max(0, state.reservedBytes - room)
            state.installedIDs.insert(pack.id)
            if let index = state.ledger?.catalog.pack(id: pack.id), state.snapshot?.version == snapshot.version {
                state.installed[index.index] = true
            }
            if state.downloads[pack.id] === download { state.downloads[pack.id] = nil }
            return Self.tagCoverage(ofPack: pack.id, in: state.snapshot ?? snapshot, installed: state.installedIDs)
        }
        transport.forget(snapshot.packURL(id: pack.id))
        hub.emit(.packInstalled(id: pack.id, bytes: pack.installedBytes, tags: coverage.tags), from: self)
        for tag in coverage.complete { hub.emit(.tagAvailable(tag: tag), from: self) }
        // The install took space: purge packs not in use if free space fell below the watermark.
        _ = try? await checkDiskSpace()
    }
}

/// What ``ResourceManager/fetch(tags:priority:progress:)`` did: the install, and the packs purged
/// to make room for it.
public struct FetchReport: Sendable, Equatable {
    /// What the install downloaded, reused and resumed, per pack.
    public var install: InstallSummary
    /// The packs purged while the fetch ran, with the reason for each, in purge order.
    public var purged: [PurgeProposal.Deletion]
}

extension ResourceManager {
    /// Installs what `tags` need without holding them for a request, as `odr fetch` does: with the
    /// manager's cache budget, watermark and purging, so packs no request uses make room.
    ///
    /// The fetch leases its packs while it runs, so its own installs never purge each other;
    /// afterwards they are ordinary installed packs, purged when room is needed.
    ///
    /// ```swift
    /// let report = try await manager.fetch(tags: ["level1", "level2"]) { print($0.fraction) }
    /// print(report.install.downloadedBytes, report.purged.count)
    /// ```
    ///
    /// - Parameters:
    ///   - priority: the transfers' priority (default urgent: someone is waiting).
    ///   - maximumConcurrentPacks: how many packs install at once (default 2, as ``PackInstaller``).
    ///   - progress: called as bytes arrive, with bytes and packs done of those to fetch.
    /// - Throws: ``ResourceError``: `catalog-unavailable` before a catalog is loaded, `invalid-tag`,
    ///   `out-of-space`, `cache-budget-exceeded`, and transfer and `integrity` errors. Packs
    ///   installed before a failure stay installed.
    public func fetch(tags: [String], priority: TransferPriority = .urgent, maximumConcurrentPacks: Int = 2,
                      progress: (@Sendable (InstallProgress) -> Void)? = nil) async throws(ResourceError) -> FetchReport {
        let purged = Locked<[PurgeProposal.Deletion]>([])
        let token = hub.observe { event in
            if case let .packPurged(id, bytes, reason, _) = event {
                purged.withLock { $0.append(.init(packID: id, bytes: bytes, reason: reason)) }
            }
        }
        defer { hub.removeObserver(token) }
        // A split catalog describes a tag no request used yet only now.
        try await describe(tags: Set(tags))
        let ids = try state.withLock { state throws(ResourceError) in
            try Self.packIDs(forTags: tags, in: try Self.requireSnapshot(state))
        }
        let fresh = try store.leases.acquire(ids)
        defer { store.leases.release(ids) }
        let (snapshot, already, missing) = try state.withLock { state throws(ResourceError) in
            forgetPacksPurgedElsewhere(fresh, state: &state)
            return (try Self.requireSnapshot(state), ids.filter { state.installedIDs.contains($0) },
                    ids.filter { !state.installedIDs.contains($0) })
        }
        // Per missing pack, bytes received and to receive: the plan's figure until its download
        // reports its own.
        let planned = progress == nil ? [:] : plannedDownloadBytes(of: missing, in: snapshot)
        let counts = Locked((bytes: Dictionary(uniqueKeysWithValues: missing.map { ($0, (received: Int64(0), total: planned[$0] ?? 0)) }),
                             finished: 0))
        let report: @Sendable (String?, Int64, Int64, Bool) -> Void = { id, received, total, finished in
            guard let progress else { return }
            let snapshot = counts.withLock { counts in
                if let id { counts.bytes[id] = (received, total) }
                if finished { counts.finished += 1 }
                return InstallProgress(completedBytes: counts.bytes.values.reduce(0) { $0 + $1.received },
                                       totalBytes: counts.bytes.values.reduce(0) { $0 + $1.total },
                                       completedPacks: counts.finished, totalPacks: missing.count)
            }
            progress(snapshot)
        }
        report(nil, 0, 0, false)
        // At most `maximumConcurrentPacks` at once, as PackInstaller does: more only competes for
        // the same cores and disk (and memory), and finishes no pack sooner.
        let requester = Self.nextRequesterID()
        var downloads: [PackDownload] = []
        do {
            try await withThrowingTaskGroup(of: [PackDownload].self) { group in
                var queue = missing[...]
                func startNext() {
                    guard let id = queue.popFirst() else { return }
                    group.addTask { [self] in
                        let started = state.withLock { startDownloads(of: [id], snapshot: snapshot, state: &$0) }
                        var observe: (@Sendable (Int64, Int64) -> Void)?
                        if progress != nil { observe = { received, total in report(id, received, total, false) } }
                        try await wait(for: started, priority: priority, requester: requester, progress: observe)
                        report(nil, 0, 0, true)
                        return started
                    }
                }
                for _ in 0..<max(1, maximumConcurrentPacks) { startNext() }
                while let finished = try await group.next() {
                    downloads += finished
                    startNext()
                }
            }
        } catch let error as ResourceError {
            if error.code == .outOfSpace { await discardStaging(of: missing) }
            throw error
        } catch {
            throw ResourceError(.cancelled, "The fetch was cancelled before its packs were installed.")
        }
        var summary = InstallSummary()
        summary.alreadyInstalled = already
        for download in downloads {
            if let done = download.summary {
                summary.add(done)
            } else {
                summary.alreadyInstalled.append(download.pack)
            }
        }
        return FetchReport(install: summary, purged: purged.withLock { $0 })
    }

    /// After a fetch ran out of space: deletes what `staging/` holds of its packs that are not
    /// installed, not only of the one that failed, since the disk is full. A pack another request
    /// of this manager still waits for, or another process is downloading (its lock is held),
    /// keeps its staging; this fetch's own abandoned downloads are waited for first.
    private func discardStaging(of ids: [String]) async {
        for id in ids {
            let download = state.withLock { state -> PackDownload?? in
                if state.installedIDs.contains(id) { return .none }
                return .some(state.downloads[id])
            }
            guard case let .some(running) = download else { continue }
            if let running {
                guard running.isAbandoned || running.isFinished else { continue }
                await running.finished()
            }
            _ = try? store.removeStaging(ofPack: id)
        }
    }
}
