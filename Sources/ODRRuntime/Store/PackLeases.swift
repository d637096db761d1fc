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
    /// Per leased pack: how many holders, and the descriptor with the shared lock.
    private let held = Locked<[String: (count: Int, lock: UncheckedLock)]>([:])

    /// A ``FileLock`` moved between threads: safe because it is created, unlocked and dropped only
    /// under ``held``'s lock, and nothing else reaches it.
    private struct UncheckedLock: @unchecked Sendable { let lock: FileLock }

    init(locks: URL) { self.locks = locks }

    /// The lease file of pack `id`.
    func path(for id: String) -> String { locks.appending(path: "\(id).lease").path }

    /// Takes a lease on each pack of `ids` (or counts one more holder of a lease this process has).
    ///
    /// Blocks only while another process's purge is removing one of them, which takes no longer
    /// than a rename and one database write.
    ///
    /// - Returns: the packs leased just now (no holder before), whose files the caller should check
    ///   still exist: another process may have purged them while nobody here held them.
    @discardableResult
    func acquire(_ ids: some Sequence<String>) throws(ResourceError) -> [String] {
        try held.withLock { held throws(ResourceError) -> [String] in
            var fresh: [String] = [], taken: [String] = []
            for id in ids {
                if let lease = held[id] {
                    held[id] = (lease.count + 1, lease.lock)
                    taken.append(id)
                    continue
                }
                do throws(ResourceError) {
                    held[id] = (1, UncheckedLock(lock: try FileLock.lockShared(path(for: id))))
                    fresh.append(id)
                    taken.append(id)
                } catch {
                    // Undo what this call took, so a failure holds nothing.
                    for id in taken { Self.drop(id, from: &held) }
                    throw error
                }
            }
            return fresh
        }
    }

    /// Lets go of one hold on each pack of `ids`; a pack's lease goes with its last holder.
    func release(_ ids: some Sequence<String>) {
        held.withLock { held in
            for id in ids { Self.drop(id, from: &held) }
        }
    }

    /// Whether this process holds a lease on pack `id`.
    func holds(_ id: String) -> Bool { held.withLock { $0[id] != nil } }

    /// Whether any process, this one included, holds a lease on pack `id`.
    func isLeasedAnywhere(_ id: String) -> Bool {
        holds(id) || FileLock.isHeld(path(for: id))
    }

    private static func drop(_ id: String, from held: inout [String: (count: Int, lock: UncheckedLock)]) {
        guard let lease = held[id] else { return }
        if lease.count > 1 {
            held[id] = (lease.count - 1, lease.lock)
        } else {
            lease.lock.lock.unlock()
            held[id] = nil
        }
    }
}
