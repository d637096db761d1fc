#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif
import Dispatch
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
/// Leases are counted per pack: any number of requests, managers and store values of one store
/// folder in this process hold one descriptor between them (``shared(locks:)``).
///
/// When the last holder lets go, the lease *lingers* for ``lingerInterval`` before it is unlocked:
/// a game that begins and ends a tag every frame, or holds a level's packs again right after
/// ending them, then takes no lock at all (a conditional begin + end with three packs made six
/// `flock` calls and six `stat`s). Meanwhile a purge in another process skips the pack as in use;
/// a purge or an "in use?" question in this process drops the linger first (``unlinger(_:)``),
/// so it sees only real holders.
///
/// A lease file deleted outside the runtime while held (`rm locks/*`) would leave its holders
/// locking a file no other process can see: a purge would create the path anew, lock it and remove
/// the pack. So, while this process holds or lingers on any lease, it checks every
/// ``fileCheckInterval`` that each lease's file is still the one at its path, and locks the path
/// anew (creating it) when it is not. The install of a pack creates its lease file
/// (``touch(_:)``), so a purge that finds the file of an installed pack missing knows it was
/// deleted: it re-creates it with a note inside (``recreateIfMissing(_:)``) and counts the pack as
/// in use until that file is ``recreatedTrustSeconds`` old, time for every holder to have locked it.
final class PackLeases: Sendable {
    private let locks: URL
    private let state = Locked(State())

    /// How long a lease stays locked after its last holder lets go.
    static let lingerInterval: Duration = .seconds(1)

    /// How often held and lingering leases are checked to still be the file at their path.
    static let fileCheckInterval: Duration = .milliseconds(200)

    /// How long a lease file a purge re-created (see ``recreateIfMissing(_:)``) counts as held:
    /// five of ``fileCheckInterval``, so every holder of the deleted file has locked the new one.
    static let recreatedTrustSeconds: Double = 1

    /// What a purge writes into a lease file it re-creates; lease files are otherwise empty.
    static let recreatedNote = "re-created by a purge: this lease file was deleted while its pack was installed\n"

    /// The most leases that linger at once, each an open descriptor: a quarter of the process's
    /// descriptor limit, at most 4,096. Beyond it a lease is unlocked when its last holder lets go.
    static let lingerLimit: Int = {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 256 }
        return min(4096, Int(clamping: limit.rlim_cur / 4))
    }()

    private struct State {
        /// Per leased pack: how many holders, and the descriptor with the shared lock.
        var held: [String: (count: Int, lock: UncheckedLock)] = [:]
        /// Leases no holder uses, still locked shared, by pack: when the last holder let go
        /// (`DispatchTime` nanoseconds). Unlocked by ``sweep()`` after ``lingerInterval``.
        var lingering: [String: (lock: UncheckedLock, since: UInt64)] = [:]
        /// Whether a ``sweep()`` is scheduled.
        var sweepScheduled = false
        /// Whether a ``checkFiles()`` is scheduled.
        var fileCheckScheduled = false
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

    private init(locks: URL) {
        self.locks = locks
        locksPrefix = locks.path.hasSuffix("/") ? locks.path : locks.path + "/"
    }

    /// The leases of the store whose lock folder is `locks`: one object per folder in this process,
    /// so that every store value and manager on it counts holders together (two descriptors of
    /// one process would otherwise refuse each other's purges).
    static func shared(locks: URL) -> PackLeases {
        let key = locks.standardizedFileURL.path
        return registry.withLock { registry in
            if let existing = registry[key]?.leases { return existing }
            let leases = PackLeases(locks: locks)
            registry = registry.filter { $0.value.leases != nil }
            registry[key] = WeakLeases(leases: leases)
            return leases
        }
    }

    private struct WeakLeases { weak var leases: PackLeases? }
    private static let registry = Locked<[String: WeakLeases]>([:])

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
                if let lingering = state.lingering.removeValue(forKey: id) {
                    // Locked all along, so no process purged it: not fresh, nothing to check.
                    state.held[id] = (1, lingering.lock)
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
                    for id in taken { drop(id, now: DispatchTime.now().uptimeNanoseconds, from: &state) }
                    throw error
                }
            }
            if !state.held.isEmpty, !state.fileCheckScheduled {
                state.fileCheckScheduled = true
                scheduleFileCheck()
            }
            return fresh
        }
    }

    private func scheduleFileCheck() {
        let milliseconds = Int(Self.fileCheckInterval.components.attoseconds / 1_000_000_000_000_000)
            + Int(Self.fileCheckInterval.components.seconds) * 1000
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(milliseconds)) { [weak self] in
            self?.checkFiles()
        }
    }

    /// Locks anew, shared, the path of every held or lingering lease whose file is no longer the
    /// one there (deleted or replaced outside the runtime); schedules itself again while any is.
    private func checkFiles() {
        state.withLock { state in
            for (id, lease) in state.held where !lease.lock.lock.isStillOnDisk {
                // Refused only while a purge holds the new file: then it is removing the pack already.
                guard let renewed = try? FileLock.tryLockShared(path(for: id)) else { continue }
                lease.lock.lock.unlock()
                state.held[id] = (lease.count, UncheckedLock(lock: renewed))
            }
            for (id, entry) in state.lingering where !entry.lock.lock.isStillOnDisk {
                guard let renewed = try? FileLock.tryLockShared(path(for: id)) else { continue }
                entry.lock.lock.unlock()
                state.lingering[id] = (UncheckedLock(lock: renewed), entry.since)
            }
            if state.held.isEmpty && state.lingering.isEmpty {
                state.fileCheckScheduled = false
            } else {
                scheduleFileCheck()
            }
        }
    }

    /// Creates pack `id`'s lease file unless it exists (an install does, so that a missing one
    /// later means it was deleted outside the runtime); best effort.
    func touch(_ id: String) {
        let descriptor = StoreFiles.openFile(path(for: id), O_WRONLY | O_CREAT)
        if descriptor >= 0 { close(descriptor) }
    }

    /// For a purge of installed pack `id`: when its lease file is missing (deleted outside the
    /// runtime, perhaps while a process held it), creates it with ``recreatedNote`` inside.
    ///
    /// - Returns: whether the file was missing.
    func recreateIfMissing(_ id: String) -> Bool {
        let path = path(for: id)
        // A link planted in its place is no lease file: removed, it counts as missing.
        StoreFiles.removeLink(path)
        guard !StoreFiles.exists(path) else { return false }
        let descriptor = StoreFiles.openFile(path, O_WRONLY | O_CREAT | O_EXCL)
        guard descriptor >= 0 else { return true }
        defer { close(descriptor) }
        let note = Array(Self.recreatedNote.utf8)
        _ = write(descriptor, note, note.count)
        return true
    }

    /// Whether pack `id`'s lease file is one a purge re-created (``recreateIfMissing(_:)``) less
    /// than ``recreatedTrustSeconds`` ago: until then, a holder of the deleted file may not have
    /// locked it yet, so the pack counts as in use.
    func wasRecreatedRecently(_ id: String) -> Bool {
        guard let info = StoreFiles.status(path(for: id)), info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else { return false }
        let modified = Double(info.st_mtim.tv_sec) + Double(info.st_mtim.tv_nsec) / 1e9
        return Date().timeIntervalSince1970 - modified < Self.recreatedTrustSeconds
    }

    /// Lets go of one hold on each pack of `ids`; a pack's lease lingers after its last holder
    /// for ``lingerInterval``.
    func release(_ ids: some Sequence<String>) {
        state.withLock { state in
            let now = DispatchTime.now().uptimeNanoseconds
            for id in ids { drop(id, now: now, from: &state) }
        }
    }

    /// Whether this process holds a lease on pack `id`.
    func holds(_ id: String) -> Bool { state.withLock { $0.held[id] != nil } }

    /// Whether any process, this one included, holds a lease on pack `id`; a lease lingering here
    /// without a holder is unlocked first, so it does not count.
    func isLeasedAnywhere(_ id: String) -> Bool {
        let heldHere = state.withLock { state -> Bool in
            if state.held[id] != nil { return true }
            Self.retireLingering(id, from: &state)
            return false
        }
        return heldHere || FileLock.isHeld(path(for: id)) || wasRecreatedRecently(id)
    }

    /// Unlocks pack `id`'s lease now if it only lingers (no holder), so that this process can take
    /// it exclusively to purge the pack.
    func unlinger(_ id: String) {
        state.withLock { Self.retireLingering(id, from: &$0) }
    }

    /// Releases one hold; the last one leaves the lease lingering and makes sure a sweep will
    /// unlock it.
    private func drop(_ id: String, now: UInt64, from state: inout State) {
        guard let lease = state.held[id] else { return }
        if lease.count > 1 {
            state.held[id] = (lease.count - 1, lease.lock)
            return
        }
        state.held[id] = nil
        state.lingering[id] = (lease.lock, now)
        guard state.lingering.count <= Self.lingerLimit else {
            Self.retireLingering(id, from: &state)
            return
        }
        if !state.sweepScheduled {
            state.sweepScheduled = true
            scheduleSweep(after: Self.lingerInterval)
        }
    }

    private func scheduleSweep(after delay: Duration) {
        let nanoseconds = Int(delay.components.seconds) * 1_000_000_000 + Int(delay.components.attoseconds / 1_000_000_000)
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .nanoseconds(nanoseconds)) { [weak self] in
            self?.sweep()
        }
    }

    /// Unlocks every lease that has lingered for ``lingerInterval``; schedules itself again while
    /// others linger.
    private func sweep() {
        state.withLock { state in
            let now = DispatchTime.now().uptimeNanoseconds
            let interval = UInt64(Self.lingerInterval.components.seconds) * 1_000_000_000
                + UInt64(Self.lingerInterval.components.attoseconds / 1_000_000_000)
            var soonest: UInt64?
            for (id, entry) in state.lingering {
                let age = now &- entry.since
                if age >= interval {
                    Self.retireLingering(id, from: &state)
                } else {
                    soonest = min(soonest ?? .max, interval - age)
                }
            }
            if let soonest {
                scheduleSweep(after: .nanoseconds(Int64(soonest)))
            } else {
                state.sweepScheduled = false
            }
        }
    }

    /// Unlocks a lingering lease (other processes may purge the pack from then on) and keeps its
    /// descriptor for reuse.
    private static func retireLingering(_ id: String, from state: inout State) {
        guard let entry = state.lingering.removeValue(forKey: id) else { return }
        entry.lock.lock.releaseKeepingOpen()
        state.idle[id] = entry.lock
        state.idleOrder.append(id)
        if state.idleOrder.count > idleLimit {
            let oldest = state.idleOrder.removeFirst()
            state.idle.removeValue(forKey: oldest)?.lock.unlock()
        }
    }
}
