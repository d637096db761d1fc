import Foundation
import ODRFormat

/// The packs this process is using, told to every process on the store by a lease that dies with
/// its holder.
///
/// A lease is a shared `flock` on `locks/<id>.lease`, taken when a request of this process starts
/// holding the pack and dropped when the last one lets go. A purge, in any process, takes the same
/// file exclusively without waiting, and leaves the pack alone when it cannot (see
/// ``ResourceStore/removePack(id:reason:)``). The kernel drops the lock when its process exits or
/// is killed, so a crashed game never pins its packs.
///
/// Leases are counted per pack: any number of requests (and managers sharing this store value)
/// hold one descriptor between them.
final class PackLeases: Sendable {
    private let locks: URL
    private let state = Locked(State())

    private struct State {
        /// Per leased pack: how many holders, and the descriptor with the shared lock.
        var held: [String: (count: Int, lock: UncheckedLock)] = [:]
        /// Descriptors of lease files no holder uses now, unlocked but kept open, so leasing the
        /// pack again (a level replayed, a request begun and ended each frame) costs a `flock`
        /// instead of creating and opening the file. Oldest first; at most ``idleLimit``.
        var idle: [String: UncheckedLock] = [:]
        var idleOrder: [String] = []
    }

    /// How many unlocked lease descriptors stay open for reuse.
    static let idleLimit = 64

    /// A ``FileLock`` moved between threads: safe because it is created, locked, unlocked and
    /// closed only under ``state``'s lock, and nothing else reaches it.
    private struct UncheckedLock: @unchecked Sendable { let lock: FileLock }

    /// `locks/` as a path ending in `/`: a lease's path is built on every begin, and appending to a
    /// `URL` costs more than the lock itself.
    private let locksPrefix: String

    init(locks: URL) {
        self.locks = locks
        locksPrefix = locks.path.hasSuffix("/") ? locks.path : locks.path + "/"
    }

    /// The lease file of pack `id`.
    func path(for id: String) -> String { locksPrefix + id + ".lease" }

    /// Takes a lease on each pack of `ids` (or counts one more holder of a lease this process has).
    ///
    /// Blocks only while another process's purge is removing one of them, which takes no longer
    /// than a rename and one database write.
    ///
    /// - Returns: the packs leased just now (no holder before), whose files the caller should check
    ///   still exist: another process may have purged them while nobody here held them.
    @discardableResult
    func acquire(_ ids: some Sequence<String>) throws(ResourceError) -> [String] {
        try state.withLock { state throws(ResourceError) -> [String] in
            var fresh: [String] = [], taken: [String] = []
            for id in ids {
                if let lease = state.held[id] {
                    state.held[id] = (lease.count + 1, lease.lock)
                    taken.append(id)
                    continue
                }
                if let idle = state.idle.removeValue(forKey: id) {
                    state.idleOrder.removeAll { $0 == id }
                    if idle.lock.relockShared() {
                        state.held[id] = (1, idle)
                        fresh.append(id)
                        taken.append(id)
                        continue
                    }
                    idle.lock.unlock()  // the file was removed by a purge: open the path anew
                }
                do throws(ResourceError) {
                    state.held[id] = (1, UncheckedLock(lock: try FileLock.lockShared(path(for: id))))
                    fresh.append(id)
                    taken.append(id)
                } catch {
                    // Undo what this call took, so a failure holds nothing.
                    for id in taken { Self.drop(id, from: &state) }
                    throw error
                }
            }
            return fresh
        }
    }

    /// Lets go of one hold on each pack of `ids`; a pack's lease goes with its last holder.
    func release(_ ids: some Sequence<String>) {
        state.withLock { state in
            for id in ids { Self.drop(id, from: &state) }
        }
    }

    /// Whether this process holds a lease on pack `id`.
    func holds(_ id: String) -> Bool { state.withLock { $0.held[id] != nil } }

    /// Whether any process, this one included, holds a lease on pack `id`.
    func isLeasedAnywhere(_ id: String) -> Bool {
        holds(id) || FileLock.isHeld(path(for: id))
    }

    /// Releases one hold; the last one unlocks the file (other processes may purge the pack from
    /// then on) and keeps its descriptor for reuse.
    private static func drop(_ id: String, from state: inout State) {
        guard let lease = state.held[id] else { return }
        if lease.count > 1 {
            state.held[id] = (lease.count - 1, lease.lock)
            return
        }
        state.held[id] = nil
        lease.lock.lock.releaseKeepingOpen()
        state.idle[id] = lease.lock
        state.idleOrder.append(id)
        if state.idleOrder.count > idleLimit {
            let oldest = state.idleOrder.removeFirst()
            state.idle.removeValue(forKey: oldest)?.lock.unlock()
        }
    }
}
