#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension ResourceManager {
    /// Starts downloading what `tags` need in the background, at `priority`, without holding them:
    /// what a game calls for the next level while the player is still in this one.
    ///
    /// It returns at once. A request that later begins the same tags joins the download rather than
    /// starting another (an `.urgent` request raises its priority), and once the download has
    /// finished, ``ResourceRequest/conditionallyBeginAccessingResources()`` succeeds without waiting.
    /// Nothing is held: until a request begins them, prefetched packs may be purged like any pack not
    /// in use (the least recently used first), and the metered-network rules of
    /// ``DownloadPolicy`` apply to them as to any download that is not urgent.
    ///
    /// ```swift
    /// try manager.prefetch(tags: ["level2"])    // while level 1 plays
    /// ```
    ///
    /// - Parameters:
    ///   - tags: the tags to download.
    ///   - priority: how it competes with other downloads; the default, `.loading(0.1)`, leaves the
    ///     bandwidth to requests the player waits for.
    /// - Returns: a task that finishes when the download does; it throws the download's error, and
    ///   cancelling it stops waiting (the download goes on while a request needs it). Most callers
    ///   ignore it: a failed prefetch is tried again when a request begins the tags.
    ///   For a split catalog (`odrpack build`'s default), tags not described yet are described
    ///   first, in the task: their download starts once their few kilobytes of metadata are in,
    ///   and the task throws `invalid-tag` for one the catalog does not have.
    /// - Throws: ``ResourceError`` at once: `catalog-unavailable` before ``prepare(online:)`` or
    ///   ``loadCatalog(online:)``, `invalid-tag` for a tag the catalog does not have (for a split
    ///   catalog, of the tags described already).
    @discardableResult
    public func prefetch(tags: Set<String>, priority: TransferPriority = .loading(0.1)) throws(ResourceError) -> Task<Void, any Error> {
        let undescribed = try state.withLock { state throws(ResourceError) in
            let snapshot = try Self.requireSnapshot(state)
            return snapshot.split != nil && !snapshot.describesAll(tags)
        }
        guard undescribed else { return try startPrefetch(tags: tags, priority: priority) }
        return Task { [self] in
            try await describe(tags: tags)
            try await startPrefetch(tags: tags, priority: priority).value
        }
    }

    /// Starts the downloads of `tags`, all described, and returns the task that waits for them.
    private func startPrefetch(tags: Set<String>, priority: TransferPriority) throws(ResourceError) -> Task<Void, any Error> {
        let downloads = try state.withLock { state throws(ResourceError) in
            let snapshot = try Self.requireSnapshot(state)
            let ids = try Self.packIDs(forTags: tags.sorted(), in: snapshot)
            return startDownloads(of: ids, snapshot: snapshot, state: &state)
        }
        let requester = Self.nextRequesterID()
        // The priority is set before this returns, so a request that begins right after joins a
        // download that already has it.
        setPriority(priority, of: downloads, for: requester)
        return Task { [self] in
            try await wait(for: downloads, priority: nil, requester: requester, progress: nil)
        }
    }
}
