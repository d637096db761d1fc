import Foundation
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
    /// The bytes the deletions free.
    public var bytesFreed: Int64 { deletions.reduce(0) { $0 + $1.bytes } }
    /// What is still missing when every pack not in use is not enough.
    public var shortfall: Int64 { max(0, bytesNeeded - bytesFreed) }
}

extension ResourceManager {
    /// Which packs a purge of `bytes` would delete, without deleting anything (a dry run).
    public func purgePlan(bytes: Int64) throws(ResourceError) -> PurgeProposal {
        lastUse.flush()
        let installed = try store.packs().filter(\.isInstalled)
        let (snapshot, inUse, downloading) = state.withLock { state -> (CatalogSnapshot?, Set<String>, Set<String>) in
            var inUse = Set<String>()
            if let ledger = state.ledger {
                for (i, id) in ledger.catalog.packIDs.enumerated() where ledger.isInUse(PackIndex(i)) { inUse.insert(id) }
            }
            return (state.snapshot, inUse, Set(state.downloads.keys))
        }
        let overrides = snapshot.map { (try? store.preservationPriorityOverrides(catalogURL: $0.catalogURL)) ?? [:] } ?? [:]
        let candidates = installed.enumerated().map { index, pack in
            let record = snapshot?.lookup.pack(id: pack.id)
            let priority = record?.tags.map { snapshot!.preservationPriority(ofTag: $0, overrides: overrides) }.max() ?? 0
            return PurgeCandidate(
                id: index, bytes: pack.installedBytes, lastUse: pack.lastUsedAt, preservationPriority: priority,
                isSuperseded: record == nil, isInUse: inUse.contains(pack.id) || downloading.contains(pack.id),
                useCount: pack.useCount)
        }
        let plan = configuration.purgePlanner.plan(candidates.filter { !$0.isInUse }, bytesNeeded: bytes, now: configuration.clock.now())
        return PurgeProposal(
            bytesNeeded: bytes,
            deletions: plan.deletions.map { .init(packID: installed[$0.id].id, bytes: $0.bytes, reason: $0.reason) })
    }

    /// Deletes packs no request uses until `bytes` are freed (or nothing more can go); each purge
    /// is logged in the store with its reason and announced as an event.
    ///
    /// - Returns: what was deleted; its `shortfall` says how much could not be freed.
    @discardableResult
    public func purge(bytes: Int64) async throws(ResourceError) -> PurgeProposal {
        let proposal = try purgePlan(bytes: bytes)
        var done = PurgeProposal(bytesNeeded: bytes, deletions: [])
        for deletion in proposal.deletions {
            // A request may have begun using the pack since the plan was made.
            let stillFree = state.withLock { state in
                guard let ledger = state.ledger, let index = ledger.catalog.pack(id: deletion.packID) else { return true }
                return !ledger.isInUse(index) && state.downloads[deletion.packID] == nil
            }
            guard stillFree else { continue }
            try await store.removePack(id: deletion.packID, reason: deletion.reason)
            state.withLock { state in
                state.installedIDs.remove(deletion.packID)
                if let index = state.ledger?.catalog.pack(id: deletion.packID) { state.installed[index.index] = false }
            }
            done.deletions.append(deletion)
            hub.emit(.packPurged(id: deletion.packID, bytes: deletion.bytes, reason: deletion.reason), from: self)
        }
        return done
    }

    /// Checks free space against the watermark and purges what it takes to get back above it;
    /// announces `lowDiskSpace` when even that is not enough.
    @discardableResult
    public func checkDiskSpace() async throws(ResourceError) -> PurgeProposal? {
        try await makeRoom(installing: 0, failWhenShort: false)
    }

    /// Purges so that `installing` more installed bytes fit the cache budget, and the free space
    /// stays above the watermark while `staging` more bytes of archive sit beside them. With
    /// `reserve`, the bytes are then promised to the caller (see ``releaseReservation(_:)``), so
    /// that concurrent installs cannot together overrun the budget.
    ///
    /// - Throws: `out-of-space` when purging every pack not in use is not enough.
    @discardableResult
    func makeRoom(installing: Int64, staging: Int64 = 0, reserve: Bool = false, failWhenShort: Bool = true) async throws(ResourceError) -> PurgeProposal? {
        var purged: PurgeProposal?
        for _ in 0..<3 {
            let free = configuration.diskSpace.freeBytes(at: store.directory)
            // Read usage, decide and reserve in one step: an install that finishes meanwhile
            // moves its bytes from reserved to used, and must be counted once, not zero times.
            let need: Int64 = try state.withLock { state throws(ResourceError) in
                var need: Int64 = 0
                if let budget = configuration.cacheBudget {
                    let used = try store.usage().installedBytes
                    need = max(need, used + state.reservedBytes + installing - budget)
                }
                if let free {
                    need = max(need, configuration.freeSpaceWatermark - (free - state.reservedBytes - installing - staging))
                }
                if need <= 0, reserve { state.reservedBytes += installing }
                return need
            }
            guard need > 0 else { return purged }
            let done = try await purge(bytes: need)
            purged = done
            if done.shortfall > 0 {
                if let free { hub.emit(.lowDiskSpace(freeBytes: free + done.bytesFreed), from: self) }
                guard failWhenShort else { return done }
                throw ResourceError(
                    .outOfSpace,
                    "Not enough space for \(installing) more bytes even after purging every pack not in use (\(done.shortfall) bytes short). End requests you no longer need, or free disk space.")
            }
        }
        // Others kept taking the room freed for this install; proceed and let the next check catch up.
        if reserve { state.withLock { $0.reservedBytes += installing } }
        return purged
    }

    /// Returns bytes promised by ``makeRoom(installing:staging:reserve:failWhenShort:)``.
    func releaseReservation(_ bytes: Int64) {
        state.withLock { $0.reservedBytes = max(0, $0.reservedBytes - bytes) }
    }
}
