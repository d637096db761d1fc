#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceManager {
    /// Starts the disk watcher unless it runs already: while a request holds packs or a download
    /// runs, it checks free space every ``Configuration/diskCheckInterval`` on the configured
    /// clock (``checkDiskSpace()``: purge packs not in use when the file system's free space is
    /// below the watermark, post ``ResourceManagerEvent/lowDiskSpace(freeBytes:)`` when even that
    /// is not enough), and stops by itself once nothing is active. Call with the lock held.
    func watchDiskWhileActive(_ state: inout State) {
        guard state.watcher == nil, let interval = configuration.diskCheckInterval else { return }
        state.watcher = periodicTask(every: interval) { state in
            let active = !state.downloads.isEmpty
                || state.ledger?.packReferenceCounts.contains(where: { $0 > 0 }) == true
            if !active { state.watcher = nil }
            return active
        } check: { manager in
            _ = try? await manager.checkDiskSpace()
        }
    }

    /// A watcher's loop: sleeps `interval` on the configured clock, then runs `check` if
    /// `stillActive` (called with the lock held; it clears the watcher's slot when it says no) says
    /// so, until it does not or the manager goes away.
    func periodicTask(every interval: Duration, stillActive: @escaping @Sendable (inout State) -> Bool,
                      check: @escaping @Sendable (ResourceManager) async -> Void) -> Task<Void, Never> {
        let clock = configuration.clock
        return Task { [weak self] in
            while true {
                do { try await clock.sleep(for: max(interval, .milliseconds(1))) } catch { return }
                guard !Task.isCancelled, let self else { return }
                guard self.state.withLock(stillActive) else { return }
                await check(self)
            }
        }
    }

    /// Whether the disk watcher is running (while requests or downloads are active).
    var isWatchingDisk: Bool { state.withLock { $0.watcher != nil } }
}
