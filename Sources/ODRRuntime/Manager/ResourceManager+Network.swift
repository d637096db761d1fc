#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceManager {
    /// Asks the ``Configuration/networkProbe`` now and lets downloads waiting for the
    /// ``DownloadPolicy`` start if the answer allows them. The manager also asks by itself: before
    /// the first download, every ``DownloadPolicy/networkCheckInterval`` while downloads run or
    /// wait, and after a transfer fails. Call it when your app learns that the network changed.
    ///
    /// ```swift
    /// // after the player switched from the phone's hotspot to home Wi-Fi
    /// _ = await manager.checkNetworkCondition()   // waiting prefetches start
    /// ```
    ///
    /// - Returns: the condition the probe reported.
    @discardableResult
    public func checkNetworkCondition() async -> NetworkCondition {
        await downloadGate.refreshOffPool()
    }

    /// The network condition the probe reported last; `nil` before the first check.
    public var networkCondition: NetworkCondition? { downloadGate.lastCondition }

    /// Bytes downloaded over metered networks today (UTC), counted against
    /// ``DownloadPolicy/dailyMeteredByteBudget``.
    public var meteredBytesToday: Int64 { downloadGate.meteredBytesToday }

    /// Waits until the download policy lets `pack` download; `nil` when it comes from disk (a
    /// bundled or `file://` catalog), where the network plays no part.
    func admitDownload(of pack: PackRecord, snapshot: CatalogSnapshot, download: PackDownload) async throws(ResourceError) -> DownloadGate.Ticket? {
        if snapshot.packURL(id: pack.id).isFileURL { return nil }
        if let bundled = configuration.bundledCatalog?.appending(path: pack.archivePath),
           FileManager.default.fileExists(atPath: bundled.path) { return nil }
        let id = pack.id
        return try await downloadGate.admit(
            bytes: { plannedDownloadBytes(of: [id], in: snapshot)[id] ?? pack.archiveBytes }, priority: { download.priority },
            onHold: { reason in hub.emit(.downloadWaiting(packID: id, reason: reason), from: self) },
            onResume: { hub.emit(.downloadResumed(packID: id), from: self) })
    }

    /// A transfer failed: the network may have changed, so ask the probe again (in the background).
    func recheckNetworkAfterFailure() {
        Task.detached { [weak self] in _ = await self?.checkNetworkCondition() }
    }

    /// Starts the network watcher unless it runs already: while downloads run or wait, it asks the
    /// probe every ``DownloadPolicy/networkCheckInterval`` on the configured clock (so a waiting
    /// download starts when the network becomes unmetered, and the daily budget starts afresh at
    /// midnight UTC), and stops by itself once no download is active. Call with the lock held.
    func watchNetworkWhileActive(_ state: inout State) {
        guard state.networkWatcher == nil, let interval = configuration.downloadPolicy.networkCheckInterval else { return }
        state.networkWatcher = periodicTask(every: interval) { state in
            let active = !state.downloads.isEmpty
            if !active { state.networkWatcher = nil }
            return active
        } check: { manager in
            await manager.checkNetworkCondition()
        }
    }

    /// Whether the network watcher is running (while downloads are active).
    var isWatchingNetwork: Bool { state.withLock { $0.networkWatcher != nil } }
}
