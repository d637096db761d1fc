#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Reports a manager's origin switches: a ``ResourceManagerEvent/originSwitched(from:to:reason:)``
/// for the app, and an ``StoreEvent/Kind/origin`` line in the store's log for `odr log`.
///
/// Made before the manager it reports for (the catalog client needs it), so it holds the manager
/// weakly once ``attach(_:)`` told it which one.
final class OriginLog: Sendable {
    private let hub: EventHub
    private let store: ResourceStore
    private let manager = Locked(WeakManager())

    private struct WeakManager { weak var value: ResourceManager? }

    init(hub: EventHub, store: ResourceStore) {
        self.hub = hub
        self.store = store
    }

    func attach(_ manager: ResourceManager) {
        self.manager.withLock { $0.value = manager }
    }

    /// A download of `subject` (a pack id, `catalog.json`, a manifest's path) switched origins.
    func record(_ subject: String, _ change: TransferOriginSwitch) {
        // The log is a record, not a condition of the download: a failed write loses only the line.
        try? store.logOriginSwitch(of: subject, change)
        guard let manager = manager.withLock({ $0.value }) else { return }
        hub.emit(.originSwitched(from: change.from, to: change.to, reason: change.reason), from: manager)
    }
}
