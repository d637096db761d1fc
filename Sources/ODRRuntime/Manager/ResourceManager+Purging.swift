#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

/// What a purge would delete, or did delete.
public struct PurgeProposal: Sendable, Equatable {
    /// One pack to delete and why.
    public struct Deletion: Sendable, Equatable {
        /// The pack's id (the SHA-256 of its archive).
        public var packID: String
        /// The bytes deleting it frees.
        public var bytes: Int64
        /// Why the planner chose it.
        public var reason: PurgeReason
    }

    /// The bytes asked for.
    public var bytesNeeded: Int64
    /// The packs chosen, in purge order.
    public var deletions: [Deletion]
    /// The bytes the deletions free (clamped to `Int64`'s range rather than overflowing).
    public var bytesFreed: Int64 { deletions.lazy.map(\.bytes).clampedSum() }
    /// What is still missing when every pack not in use is not enough.
    public var shortfall: Int64 { max(0, bytesNeeded.clampedSubtracting(bytesFreed)) }
}

extension ResourceManager {
    /// Which packs a purge of `bytes` would delete, without deleting anything (a dry run).
    ///
    /// Superseded packs go first, and with them packs of variants this manager does not choose
    /// (``PurgeReason/variantNotChosen``: installed by a manager with other ``Configuration/variants``).
    ///
    /// Packs in use are never candidates: those requests of this manager hold, those being
    /// downloaded, and those a request in another process (or another manager) on the same store
    /// holds, which its lease tells (see ``ResourceStore/isPackInUse(id:)``).
    ///
    /// What interrupted downloads left in `staging/` goes before any installed pack, oldest first
    /// (``PurgeReason/staleStaging``), but never a download in progress: not one of this manager's,
    /// and not one whose pack lock another process holds.
    ///
    /// Each pack's likeliest live anticipation hint (``anticipate(tags:likelihood:)``) ranks it:
    /// hinted packs go after unhinted ones, the least likely first.
    public func purgePlan(bytes: Int64) throws(ResourceError) -> PurgeProposal {
        try purgePlan(bytes: bytes, sparingHintsFrom: nil)
    }

    /// ``purgePlan(bytes:)``; with `shield`, packs a live hint at least that likely names are
    /// treated as in use (a hinted prefetch makes room only from less likely packs).
    func purgePlan(bytes: Int64, sparingHintsFrom shield: Double?) throws(ResourceError) -> PurgeProposal {
        lastUse.flush()
        // Packs share files by hard link: each is weighed by what deleting it frees (its own
        // files), read from the inodes, and the plan counts each file once.
        let account = try store.diskAccount()
        let rows = Dictionary(try store.packs().filter(\.isInstalled).map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        let installed = account.packs.map { pack in
            rows[pack.id] ?? InstalledPack(number: 0, id: pack.id, archiveBytes: 0, installedBytes: pack.bytes, installedAt: 0,
                                           lastUsedAt: 0, isInstalled: true, isSuperseded: true)
        }
        let (snapshot, inUse, downloading, hinted) = state.withLock { state -> (CatalogSnapshot?, Set<String>, Set<String>, [String: Double]) in
            var inUse = Set<String>()
            if let ledger = state.ledger {
                for (i, id) in ledger.catalog.packIDs.enumerated() where ledger.isInUse(PackIndex(i)) { inUse.insert(id) }
            }
            var hinted: [String: Double] = [:]
            // Hints that have not paid lately (the learning rule holds every prefetch back) shield nothing.
            if !state.hints.isEmpty, state.learning.allowance != .none {
                for pack in installed {
                    let likelihood = state.hints.likelihood(ofPack: pack.id)
                    if likelihood > 0 { hinted[pack.id] = likelihood }
                }
            }
            return (state.snapshot, inUse, Set(state.downloads.keys), hinted)
        }
        let overrides = snapshot.map { (try? store.preservationPriorityOverrides(catalogURL: $0.catalogURL)) ?? [:] } ?? [:]
        let candidates = installed.enumerated().map { index, pack in
            let record = snapshot?.lookup.pack(id: pack.id)
            let priority = record?.tags.map { snapshot!.preservationPriority(ofTag: $0, overrides: overrides) }.max() ?? 0
            let likelihood = hinted[pack.id] ?? 0
            let shielded = shield.map { likelihood > 0 && likelihood >= $0 } ?? false
            return PurgeCandidate(
                id: index, bytes: account.packs[index].ownBytes, lastUse: pack.lastUsedAt, preservationPriority: priority,
                isSuperseded: record == nil,
                isInUse: shielded || inUse.contains(pack.id) || downloading.contains(pack.id) || store.isPackInUse(id: pack.id),
                useCount: pack.useCount,
                isUnchosenVariant: record != nil && snapshot?.lookup.isChosen(packID: pack.id) == false,
                hintLikelihood: likelihood)
        }
        var staging: [PurgeProposal.Deletion] = [], stagingBytes: Int64 = 0
        for item in staleStaging(downloading: downloading) where stagingBytes < bytes {
            staging.append(.init(packID: item.packID, bytes: item.bytes, reason: .staleStaging))
            stagingBytes = [stagingBytes, item.bytes].clampedSum()
        }
        let rest = bytes > stagingBytes ? bytes - stagingBytes : 0
        let plan = configuration.purgePlanner.plan(candidates, bytesNeeded: rest, now: configuration.clock.now(), account: account.files)
        return PurgeProposal(
            bytesNeeded: bytes,
            deletions: staging + plan.deletions.map { .init(packID: installed[$0.id].id, bytes: $0.bytes, reason: $0.reason) })
    }

    /// What `staging/` holds of packs no download works on, oldest first: not this manager's
    /// downloads, nor packs whose lock another process holds (a download in progress there).
    private func staleStaging(downloading: Set<String>) -> [ResourceStore.StagedPack] {
        store.stagedPacks()
            .filter { staged in
                guard staged.bytes > 0, !downloading.contains(staged.packID), let lock = try? store.lockPath(for: staged.packID) else { return false }
                return !FileLock.isHeld(lock)
            }
            .sorted { ($0.modifiedAt, $0.packID) < ($1.modifiedAt, $1.packID) }
    }

    /// Deletes packs no request uses until `bytes` are freed (or nothing more can go); each purge
    /// is logged in the store with its reason and announced as an event.
    ///
    /// A pack a request in any process on the store holds is skipped, even when it became held
    /// after the plan was made.
    ///
    /// - Returns: what was deleted; its `shortfall` says how much could not be freed.
    @discardableResult
    public func purge(bytes: Int64) async throws(ResourceError) -> PurgeProposal {
        try await purge(bytes: bytes, sparingHintsFrom: nil)
    }

    /// ``purge(bytes:)``, sparing packs as ``purgePlan(bytes:sparingHintsFrom:)`` does.
    func purge(bytes: Int64, sparingHintsFrom shield: Double?) async throws(ResourceError) -> PurgeProposal {
        try await apply(try purgePlan(bytes: bytes, sparingHintsFrom: shield))
    }

    /// Deletes superseded packs of versions older than the ones kept
    /// (``Configuration/keptPreviousVersions``), unless a request in some process holds them
    /// (they go at a later check once none does); the packs of the newest kept earlier versions
    /// stay, for a process still using them or a rollback.
    ///
    /// The manager calls it with every ``checkDiskSpace()``.
    ///
    /// - Returns: what was deleted (``PurgeReason/olderVersion``).
    @discardableResult
    public func reclaimOlderVersions() async throws(ResourceError) -> PurgeProposal {
        let older = try store.supersededPacks(keepingVersions: configuration.keptPreviousVersions).filter { !$0.isKept }
        guard !older.isEmpty else { return PurgeProposal(bytesNeeded: 0, deletions: []) }
        let downloading = state.withLock { Set($0.downloads.keys) }
        let deletions = older.filter { !downloading.contains($0.id) && !store.isPackInUse(id: $0.id) }
            .map { PurgeProposal.Deletion(packID: $0.id, bytes: 0, reason: .olderVersion) }
        return try await apply(PurgeProposal(bytesNeeded: 0, deletions: deletions))
    }

    /// Deletes what `proposal` lists, skipping packs a request began to use or a download began
    /// meanwhile; each deletion carries the bytes it freed.
    private func apply(_ proposal: PurgeProposal) async throws(ResourceError) -> PurgeProposal {
        var done = PurgeProposal(bytesNeeded: proposal.bytesNeeded, deletions: [])
        for deletion in proposal.deletions {
            if deletion.reason == .staleStaging {
                // A download of the pack may have started since the plan was made.
                guard state.withLock({ $0.downloads[deletion.packID] == nil }),
                      let freed = try store.removeStaging(ofPack: deletion.packID) else { continue }
                done.deletions.append(.init(packID: deletion.packID, bytes: freed, reason: deletion.reason))
                let tags = state.withLock { Self.tagCoverage(ofPack: deletion.packID, in: $0.snapshot, installed: []).tags }
                hub.emit(.packPurged(id: deletion.packID, bytes: freed, reason: deletion.reason, tags: tags), from: self)
                continue
            }
            // A request may have begun using the pack since the plan was made.
            let stillFree = state.withLock { state in
                guard let ledger = state.ledger, let index = ledger.catalog.pack(id: deletion.packID) else { return true }
                return !ledger.isInUse(index) && state.downloads[deletion.packID] == nil
            }
            // The log names the tags the pack served, if the current version lists it.
            let tags = state.withLock { $0.snapshot?.lookup.pack(id: deletion.packID)?.tags ?? [] }
            let logged = deletion.reason.rawValue + (tags.isEmpty ? "" : " (tags: \(tags.joined(separator: ", ")))")
            guard stillFree, let freed = try await store.removeInstalledPack(id: deletion.packID, event: .purge, reason: logged) else { continue }
            let coverage = state.withLock { state in
                // Computed before the pack leaves the installed set: the tags it completed were available.
                var installed = state.installedIDs
                installed.insert(deletion.packID)
                state.installedIDs.remove(deletion.packID)
                if let index = state.ledger?.catalog.pack(id: deletion.packID) { state.installed[index.index] = false }
                if let waiting = state.awaitingJudgment.removeValue(forKey: deletion.packID) {
                    // Prefetched for a hint and purged before any request used it.
                    state.judge(bytes: waiting.bytes, used: false)
                }
                return Self.tagCoverage(ofPack: deletion.packID, in: state.snapshot, installed: installed)
            }
            // What the removal freed, read from the inodes as it went: the plan's figure unless
            // another pack was installed or purged beside it meanwhile.
            done.deletions.append(.init(packID: deletion.packID, bytes: freed, reason: deletion.reason))
            hub.emit(.packPurged(id: deletion.packID, bytes: freed, reason: deletion.reason, tags: coverage.tags), from: self)
            for tag in coverage.complete { hub.emit(.tagPurged(tag: tag), from: self) }
        }
        return done
    }

    /// Checks free space against the watermark (and usage against the cache budget), and purges
    /// packs not in use until both are met again; posts ``ResourceManagerEvent/lowDiskSpace(freeBytes:)``
    /// when the file system's free space stays below the watermark even so. An unmet cache budget
    /// alone posts nothing: the disk is not short.
    ///
    /// The manager calls it on its own after every install and, while requests or downloads are
    /// active, every ``Configuration/diskCheckInterval``.
    ///
    /// - Returns: what was purged, or `nil` when nothing had to go.
    @discardableResult
    public func checkDiskSpace() async throws(ResourceError) -> PurgeProposal? {
        let reclaimed = try await reclaimOlderVersions()
        let purged = try await makeRoom(installing: 0, failWhenShort: false)
        guard !reclaimed.deletions.isEmpty else { return purged }
        return PurgeProposal(bytesNeeded: purged?.bytesNeeded ?? 0, deletions: reclaimed.deletions + (purged?.deletions ?? []))
    }

    /// Purges so that `installing` more installed bytes fit the cache budget, and the free space
    /// stays above the watermark while `staging` more bytes of archive sit beside them. With
    /// `reserve`, the bytes are then promised to the caller (see ``releaseReservation(_:)``), so
    /// that concurrent installs cannot together overrun the budget.
    ///
    /// The watermark is a purge target: when purging every pack not in use cannot reach it, the
    /// manager posts `lowDiskSpace` and goes on, as long as the bytes themselves fit the disk.
    ///
    /// - Throws: `out-of-space` when the bytes do not fit the disk even after purging every pack
    ///   not in use; `cache-budget-exceeded` when they do not fit the cache budget.
    @discardableResult
    ///
    /// With `shield` (a hinted prefetch), packs a hint at least that likely names are spared;
    /// without `purging`, nothing is purged: `cache-budget-exceeded` when the bytes need room.
    func makeRoom(installing: Int64, staging: Int64 = 0, reserve: Bool = false, failWhenShort: Bool = true,
                  sparingHintsFrom shield: Double? = nil, purging: Bool = true) async throws(ResourceError) -> PurgeProposal? {
        var purged: PurgeProposal?
        for _ in 0..<3 {
            let free = configuration.diskSpace.freeBytes(at: store.directory)
            // Walked before taking the lock, which requests beginning and ending wait for.
            let staged = configuration.cacheBudget == nil ? [] : store.stagedPacks()
            // The installed bytes too (a walk of every installed file's inode), with the installs
            // this manager had finished then: one that finishes before the lock below is taken
            // moved its bytes out of the reservation but not into this figure, so then it is read again.
            var (used, installedAtWalk): (Int64, Set<String>) = (0, [])
            if configuration.cacheBudget != nil {
                for _ in 0..<3 {
                    installedAtWalk = state.withLock { $0.installedIDs }
                    used = try store.installedUsage().bytes
                    if state.withLock({ $0.installedIDs == installedAtWalk }) { break }
                }
            }
            // Read usage, decide and reserve in one step: an install that finishes meanwhile
            // moves its bytes from reserved to used, and must be counted once, not zero times.
            let (budgetNeed, diskNeed, fitNeed) = try state.withLock { state throws(ResourceError) -> (Int64, Int64, Int64) in
                var budgetNeed: Int64 = 0, diskNeed: Int64 = 0, fitNeed: Int64 = 0
                if let budget = configuration.cacheBudget {
                    // Staging counts: an interrupted download's bytes are on disk all the same. Not
                    // a download of this manager (its reservation counts it), nor a pack installed
                    // since `staged` was walked: its staging became the installed bytes counted in
                    // `used` (counting both failed a fetch under a budget it fitted).
                    let downloading = state.downloads, installed = state.installedIDs
                    let stagedBytes = staged.filter { downloading[$0.packID] == nil && !installed.contains($0.packID) }
                        .map(\.bytes).clampedSum()
                    if state.installedIDs != installedAtWalk {
                        // An install finished since the walk, which no longer counts in the
                        // reservation: walked again, under the lock this once (rare).
                        used = (try? store.installedUsage().bytes) ?? used
                    }
                    budgetNeed = [used, stagedBytes, state.reservedBytes, installing, Int64(0).clampedSubtracting(budget)].clampedSum()
                }
                if let free {
                    let left = free.clampedSubtracting([state.reservedBytes, installing, staging].clampedSum())
                    diskNeed = configuration.freeSpaceWatermark.clampedSubtracting(left)
                    fitNeed = Int64(0).clampedSubtracting(left)
                }
                if max(budgetNeed, diskNeed) <= 0, reserve { state.reservedBytes = [state.reservedBytes, installing].clampedSum() }
                return (budgetNeed, diskNeed, fitNeed)
            }
            let need = max(budgetNeed, diskNeed)
            guard need > 0 else { return purged }
            guard purging else {
                throw ResourceError(
                    .cacheBudgetExceeded,
                    "A hinted prefetch of \(installing) bytes needs \(need) bytes of room, and hinted prefetches make none while recent hints went unused (see prefetchMeasure).")
            }
            let done = try await purge(bytes: need, sparingHintsFrom: shield)
            purged = PurgeProposal(bytesNeeded: need, deletions: (purged?.deletions ?? []) + done.deletions)
            let freed = done.bytesFreed
            guard freed < need else { continue }  // enough went; check again, others may have taken it
            if let free, diskNeed > freed { hub.emit(.lowDiskSpace(freeBytes: [free, freed].clampedSum()), from: self) }
            guard failWhenShort else { return purged }
            if fitNeed > freed {
                throw ResourceError(
                    .outOfSpace,
                    "Not enough disk space for \(installing) more bytes even after purging every pack not in use (\(fitNeed.clampedSubtracting(freed)) bytes short). End requests you no longer need, or free disk space.")
            }
            if budgetNeed > freed {
                throw ResourceError(
                    .cacheBudgetExceeded,
                    "Installing \(installing) more bytes would exceed the cache budget of \(configuration.cacheBudget ?? 0) bytes even after purging every pack not in use (\(budgetNeed.clampedSubtracting(freed)) bytes over); the disk has room. End requests you no longer need, or raise the cache budget.")
            }
            // Below the watermark, but the bytes fit: install them anyway (lowDiskSpace was posted).
            if reserve { state.withLock { $0.reservedBytes = [$0.reservedBytes, installing].clampedSum() } }
            return purged
        }
        // Others kept taking the room freed for this install; proceed and let the next check catch up.
        if reserve { state.withLock { $0.reservedBytes = [$0.reservedBytes, installing].clampedSum() } }
        return purged
    }

    /// Returns bytes promised by ``makeRoom(installing:staging:reserve:failWhenShort:)``.
    func releaseReservation(_ bytes: Int64) {
        state.withLock { $0.reservedBytes = max(0, $0.reservedBytes.clampedSubtracting(bytes)) }
    }
}
