#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

/// One tag as the manager sees it now: the gauge Xcode shows for on-demand resources.
public struct TagGauge: Sendable, Equatable {
    /// Where a tag stands.
    public enum State: String, Sendable {
        /// Some of its packs are missing and none of those is downloading.
        case notDownloaded = "not downloaded"
        /// Some of its packs are missing and at least one of them is downloading.
        case downloading
        /// Every pack it needs is installed.
        case downloaded
        /// Every pack it needs is installed, and a request of this manager holds the tag, or
        /// requests in any process on the store hold every one of its packs (their leases).
        case inUse = "in use"
    }

    /// The tag's name.
    public var name: String
    /// Whether its packs are missing, downloading, installed or held by a request.
    public var state: State
    /// The bytes its packs take once installed.
    public var installedBytes: Int64
    /// The bytes a request for it would download now.
    public var downloadBytes: Int64
    /// Its preservation priority (the app's setting or the catalog's default).
    public var preservationPriority: Double
}

extension ResourceManager {
    /// Every tag of the current version with its state and sizes, counting only the packs this
    /// device downloads (common ones and those of its chosen variants).
    public func gauge() -> [TagGauge] {
        let current = state.withLock { state in (state.snapshot, state.installedIDs) }
        let overrides = current.0.flatMap { try? store.preservationPriorityOverrides(catalogURL: $0.catalogURL) } ?? [:]
        // Planned outside the lock: it reads the store and the staging folder.
        let planned = current.0.map { snapshot in
            plannedDownloadBytes(of: Set(snapshot.lookup.tags.flatMap(\.packs)).subtracting(current.1), in: snapshot)
        } ?? [:]
        // Packs requests in any process hold; probed outside the lock (a lock file each).
        let leased = Set(current.1.filter { store.isPackInUse(id: $0) })
        return state.withLock { state -> [TagGauge] in
            guard let snapshot = state.snapshot, let ledger = state.ledger else { return [] }
            // The device's view: each tag with the packs of its chosen variants and their sizes.
            return snapshot.lookup.tags.map { tag in
                let missing = tag.packs.filter { !state.installedIDs.contains($0) }
                let gaugeState: TagGauge.State
                if missing.isEmpty, ledger.catalog.tag(named: tag.name).map(ledger.isInUse) == true || tag.packs.allSatisfy(leased.contains) {
                    gaugeState = .inUse
                } else if missing.isEmpty {
                    gaugeState = .downloaded
                } else if missing.contains(where: { state.downloads[$0] != nil }) {
                    gaugeState = .downloading
                } else {
                    gaugeState = .notDownloaded
                }
                var left: [Int64] = []
                for id in missing { left.append(Self.leftToMove(planned[id] ?? snapshot.lookup.pack(id: id)?.archiveBytes ?? 0, pack: id, state)) }
                let download = left.clampedSum()
                return TagGauge(
                    name: tag.name, state: gaugeState, installedBytes: tag.installedBytes, downloadBytes: download,
                    preservationPriority: snapshot.preservationPriority(ofTag: tag.name, overrides: overrides))
            }
        }
    }
}
