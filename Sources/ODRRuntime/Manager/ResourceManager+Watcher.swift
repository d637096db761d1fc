import Foundation
import ODRFormat

extension ResourceManager {
    /// Starts the disk watcher unless it runs already: while a request holds packs or a download
    /// runs, it checks free space every ``Configuration/diskCheckInterval`` on the configured
    /// clock (``checkDiskSpace()``: purge packs not in use when the file system's free space is
    /// below the watermark, post ``ResourceManagerEvent/lowDiskSpace(freeBytes:)`` when even that
    /// is not enough), and stops by itself once nothing is active. Call with the lock held.
    func watchDiskWhileActive(_ state: inout State) {
        guard state.watcher == nil, let interval = configuration.diskCheckInterval else { return }
        let clock = configuration.clock
        state.watcher = Task { [weak self] in
            while true {
                do { try await clock.sleep(for: max(interval, .milliseconds(1))) } catch { return }
                guard !Task.isCancelled, let self else { return }
                let active = self.state.withLock { state -> Bool in
                    let active = !state.downloads.isEmpty
                        || state.ledger?.packReferenceCounts.contains(where: { $0 > 0 }) == true
                    if !active { state.watcher = nil }
                    return active
                }
                guard active else { return }
                _ = try? await self.checkDiskSpace()
            }
        }
    }

    /// Whether the disk watcher is running (while requests or downloads are active).
    var isWatchingDisk: Bool { state.withLock { $0.watcher != nil } }
}
