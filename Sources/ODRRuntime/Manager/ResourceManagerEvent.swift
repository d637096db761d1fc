import Foundation
import Synchronization
import ODRFormat

/// Something that happened in a ``ResourceManager`` that an app may want to react to.
public enum ResourceManagerEvent: Sendable, Equatable {
    /// A pack was downloaded, verified and installed.
    case packInstalled(id: String, bytes: Int64)
    /// A pack was deleted to make room (or by ``ResourceManager/purge(bytes:)``), with the reason.
    case packPurged(id: String, bytes: Int64, reason: PurgeReason)
    /// Free space is below the watermark even after purging: end requests you no longer need.
    case lowDiskSpace(freeBytes: Int64)
    /// The catalog moved to another version.
    case catalogUpdated(version: Int)
}

extension ResourceManager {
    /// Posted with `object` the manager and `userInfo["event"]` the ``ResourceManagerEvent``.
    public static let packInstalledNotification = Notification.Name("ODRResourceManagerPackInstalled")
    /// See ``packInstalledNotification``.
    public static let packPurgedNotification = Notification.Name("ODRResourceManagerPackPurged")
    /// See ``packInstalledNotification``.
    public static let lowDiskSpaceNotification = Notification.Name("ODRResourceManagerLowDiskSpace")
    /// See ``packInstalledNotification``.
    public static let catalogUpdatedNotification = Notification.Name("ODRResourceManagerCatalogUpdated")
}

/// Fans events out to every subscribed stream and to `NotificationCenter`.
final class EventHub: Sendable {
    private let subscribers = Locked<[UInt64: AsyncStream<ResourceManagerEvent>.Continuation]>([:])
    private let nextID = Atomic<UInt64>(0)

    func subscribe() -> AsyncStream<ResourceManagerEvent> {
        let (stream, continuation) = AsyncStream<ResourceManagerEvent>.makeStream(bufferingPolicy: .bufferingNewest(256))
        let id = nextID.add(1, ordering: .relaxed).newValue
        continuation.onTermination = { [weak self] _ in _ = self?.subscribers.withLock { $0.removeValue(forKey: id) } }
        subscribers.withLock { $0[id] = continuation }
        return stream
    }

    func emit(_ event: ResourceManagerEvent, from manager: ResourceManager) {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.yield(event) }
        let name: Notification.Name = switch event {
        case .packInstalled: ResourceManager.packInstalledNotification
        case .packPurged: ResourceManager.packPurgedNotification
        case .lowDiskSpace: ResourceManager.lowDiskSpaceNotification
        case .catalogUpdated: ResourceManager.catalogUpdatedNotification
        }
        NotificationCenter.default.post(name: name, object: manager, userInfo: ["event": event])
    }

    func finish() {
        for continuation in subscribers.withLock({ Array($0.values) }) { continuation.finish() }
    }
}
