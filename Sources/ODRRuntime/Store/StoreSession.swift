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

/// Whether everyone who had a store open closed it, so the next open can skip checking every
/// installed file: a file system's clean-unmount flag, for a store.
///
/// Each open ``ResourceStore`` holds a shared `flock` on `locks/session.lock` until it is
/// deinitialized. The one that finds itself alone when it closes writes `locks/closed-cleanly`;
/// opening deletes that file. So the marker is present only when the last process closed the store
/// and nobody has opened it since: then no crash can have happened in between, and repair checks
/// only that each installed pack's folder exists. Without the marker (a process was killed, the
/// machine lost power, or another process has the store open) repair checks every entry's size.
///
/// Only stores that flush their writes (``ResourceStore/synchronousWrites``) write the marker:
/// with unflushed files, a power loss after a clean close could still lose bytes.
final class StoreSession: Sendable {
    private let lockDescriptor: Int32
    private let locks: URL
    private let writesMarker: Bool

    /// Whether the store was closed cleanly by its last user (the marker was there).
    let openedAfterCleanClose: Bool

    /// Starts a session; call while holding the store lock, which serializes opening and closing.
    init(locks: URL, writesMarker: Bool) throws(ResourceError) {
        self.locks = locks
        self.writesMarker = writesMarker
        let path = locks.appending(path: "session.lock").path
        lockDescriptor = StoreFiles.openFile(path, O_RDWR | O_CREAT)
        guard lockDescriptor >= 0 else { throw StoreFailure.posix("open the lock file '\(path)'") }
        guard Self.flockRetrying(lockDescriptor, LOCK_SH) == 0 else {
            close(lockDescriptor)
            throw StoreFailure.posix("lock '\(path)'")
        }
        let marker = Self.markerPath(in: locks)
        openedAfterCleanClose = StoreFiles.status(marker).map { $0.st_mode & S_IFMT == S_IFREG } ?? false
        if openedAfterCleanClose, unlink(marker) != 0, errno != ENOENT {
            close(lockDescriptor)
            throw StoreFailure.posix("remove '\(marker)'")
        }
    }

    deinit {
        defer { close(lockDescriptor) }
        guard writesMarker, let storeLock = Self.storeLockBriefly(in: locks) else { return }
        defer { storeLock.unlock() }
        // Alone when no other descriptor holds a shared lock: then this is the last user. A child
        // this process is spawning holds a copy of every descriptor until it execs, so a copy of a
        // closed store's may linger for a moment: retry briefly before deciding someone else is open.
        var alone = false
        for attempt in 0..<5 {
            if attempt > 0 { usleep(10_000) }
            if Self.flockRetrying(lockDescriptor, LOCK_EX | LOCK_NB) == 0 { alone = true; break }
        }
        guard alone else { return }
        let marker = StoreFiles.openFile(Self.markerPath(in: locks), O_WRONLY | O_CREAT | O_TRUNC)
        if marker >= 0 { close(marker) }
    }

    static func markerPath(in locks: URL) -> String { locks.appending(path: "closed-cleanly").path }

    /// The store lock if it comes within about a second, else `nil`: then no marker is written,
    /// which only costs the next open a full check. Never blocks for good (a store whose opening
    /// failed is deinitialized while its opener still holds the lock).
    private static func storeLockBriefly(in locks: URL) -> FileLock? {
        for _ in 0..<50 {
            if let lock = try? FileLock.tryLock(ResourceStore.storeLockPath(in: locks)) { return lock }
            usleep(20_000)
        }
        return nil
    }

    private static func flockRetrying(_ descriptor: Int32, _ operation: Int32) -> Int32 {
        var result: Int32
        repeat { result = flock(descriptor, operation) } while result != 0 && errno == EINTR
        return result
    }
}
