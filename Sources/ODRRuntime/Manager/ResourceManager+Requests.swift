#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

extension ResourceManager {
    /// Holds `tags` in the ledger, leases their packs (so no process purges them), and starts or
    /// joins the downloads of their missing packs.
    ///
    /// - Throws: `invalid-tag` or `exceeded-maximum-in-use-size`; nothing is held then.
    func beginTags(_ tags: Set<String>) throws(ResourceError) -> ([TagIndex], Set<String>, [PackDownload]) {
        try state.withLock { state throws(ResourceError) in
            let snapshot = try Self.requireSnapshot(state)
            guard let catalog = state.ledger?.catalog else { throw ResourceError(.catalogUnavailable, "The manager has no catalog yet. Call prepare() first.") }
            let ids = try Self.packIDs(forTags: tags, in: snapshot)
            let held = try catalog.tags(named: tags.sorted())
            // The ledger is changed in place (`state.ledger!`): a copy taken out and put back
            // would copy its per-pack counts on every begin, O(packs in the catalog).
            try state.ledger!.begin(held)
            let fresh: [String]
            do throws(ResourceError) {
                fresh = try store.leases.acquire(ids)
            } catch {
                _ = try? state.ledger!.end(held)
                throw error
            }
            forgetPacksPurgedElsewhere(fresh, state: &state)
            if !state.awaitingJudgment.isEmpty { Self.judgeUsed(ids, state: &state) }
            let downloads = startDownloads(of: ids, snapshot: snapshot, state: &state)
            watchDiskWhileActive(&state)
            return (held, Set(ids), downloads)
        }
    }

    /// Marks not installed the packs of `ids` whose folder is gone: another process purged them
    /// while no request here held them. Call with the lock held, after leasing `ids`.
    ///
    /// - Returns: whether any was gone.
    @discardableResult
    func forgetPacksPurgedElsewhere(_ ids: [String], state: inout State) -> Bool {
        var gone = false
        for id in ids where state.installedIDs.contains(id) && !store.packFolderExists(id: id) {
            state.installedIDs.remove(id)
            if let index = state.ledger?.catalog.pack(id: id) { state.installed[index.index] = false }
            gone = true
        }
        return gone
    }

    /// Holds `tags` only when every pack they need is installed and the limit allows; never downloads.
    func beginTagsIfInstalled(_ tags: Set<String>) -> ([TagIndex], Set<String>)? {
        state.withLock { state -> ([TagIndex], Set<String>)? in
            guard let catalog = state.ledger?.catalog else { return nil }
            var held: [TagIndex] = []
            held.reserveCapacity(tags.count)
            var ids = Set<String>()
            for name in tags {
                guard let tag = catalog.tag(named: name) else { return nil }
                for pack in catalog.packs(of: tag) {
                    guard state.installed[pack.index] else { return nil }
                    ids.insert(catalog.packIDs[pack.index])
                }
                held.append(tag)
            }
            // In place, as in beginTags: no copy of the ledger's counts per call.
            guard (try? state.ledger!.begin(held)) != nil else { return nil }
            guard let fresh = try? store.leases.acquire(ids) else {
                _ = try? state.ledger!.end(held)
                return nil
            }
            if forgetPacksPurgedElsewhere(fresh, state: &state) {
                store.leases.release(ids)
                _ = try? state.ledger!.end(held)
                return nil
            }
            if !state.awaitingJudgment.isEmpty { Self.judgeUsed(ids, state: &state) }
            watchDiskWhileActive(&state)
            return (held, ids)
        }
    }

    /// Releases tags a request held; adopts a pending catalog version once nothing is in use.
    func release(tags: [TagIndex], packIDs: Set<String>) {
        guard !tags.isEmpty else { return }
        state.withLock { state in
            _ = try? state.ledger?.end(tags)
        }
        store.leases.release(packIDs)
        noteUse(packIDs, began: false)
        adoptPendingIfIdle()
    }

    /// Records that packs were used now, by a request that `began` using them or ended (batched
    /// off the caller's path).
    func noteUse(_ ids: Set<String>, began: Bool) { lastUse.note(ids, began: began) }

    /// The installed file of logical path `path`, if one of `packs` holds it and is installed.
    func installedURL(forResource path: String, amongPacks packs: Set<String>) -> URL? {
        guard let snapshot = state.withLock({ $0.snapshot }), let file = snapshot.lookup.file(atPath: path),
              packs.contains(file.pack) else { return nil }
        // Never a folder, nor a name that holds another entry's content.
        return (try? store.installedFile(file)) ?? nil
    }
}
