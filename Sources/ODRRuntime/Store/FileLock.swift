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

/// An advisory lock (`flock`) on a file, held until ``unlock()`` or deinitialization.
///
/// Exclusive by default; a shared lock (``lockShared(_:)``) is what a ``PackLeases`` lease holds:
/// any number of processes may share it, and an exclusive taker is refused while one does.
///
/// Processes sharing a store take one around everything that changes a pack's files (install,
/// purge, repair), so two of them never write the same `staging/` or `packs/` paths at once.
/// The kernel drops the lock when the process dies, so a crash never leaves it held.
///
/// A lock file may be deleted by whoever holds it; a waiter that then wakes up on the unlinked file
/// notices (its descriptor no longer matches the path) and locks the new file instead.
final class FileLock {
    let path: String
    private var descriptor: Int32

    private init(path: String, descriptor: Int32) {
        self.path = path
        self.descriptor = descriptor
    }

    deinit { unlock() }

    /// Takes the lock, or returns `nil` at once when another process or descriptor holds it.
    static func tryLock(_ path: String) throws(ResourceError) -> FileLock? {
        try acquire(path, blocking: false)
    }

    /// Takes a shared lock, or returns `nil` at once when another descriptor holds the file exclusively.
    static func tryLockShared(_ path: String) throws(ResourceError) -> FileLock? {
        try acquire(path, blocking: false, shared: true)
    }

    /// Takes a shared lock, blocking the calling thread while another descriptor holds the file
    /// exclusively (a purge does so only while it renames a pack away and records that).
    static func lockShared(_ path: String) throws(ResourceError) -> FileLock {
        guard let lock = try acquire(path, blocking: true, shared: true) else {
            throw ResourceError(.storageFailure, "Could not lock '\(path)' shared.")
        }
        return lock
    }

    /// Whether another descriptor holds a lock on `path` now; a missing file is not held. Takes
    /// nothing: the probe's own exclusive attempt is released at once.
    static func isHeld(_ path: String) -> Bool {
        let descriptor = StoreFiles.openFile(path, O_RDWR)
        guard descriptor >= 0 else { return false }
        defer { close(descriptor) }
        var result: Int32
        repeat {
            result = flock(descriptor, LOCK_EX | LOCK_NB)
        } while result != 0 && errno == EINTR
        return result != 0 && errno == EWOULDBLOCK
    }

    /// Takes the lock, polling without blocking a thread of the cooperative pool.
    static func lock(_ path: String) async throws(ResourceError) -> FileLock {
        while true {
            if let lock = try acquire(path, blocking: false) { return lock }
            do { try await Task.sleep(for: .milliseconds(20)) } catch {
                throw ResourceError(.cancelled, "Waiting for another process to finish with '\(path)' was cancelled.")
            }
        }
    }

    /// Takes the lock, blocking the calling thread; for short synchronous sections such as repair.
    static func lockBlocking(_ path: String) throws(ResourceError) -> FileLock {
        guard let lock = try acquire(path, blocking: true) else {
            throw ResourceError(.storageFailure, "Could not lock '\(path)'.")
        }
        return lock
    }

    /// Releases the lock but keeps the file open, so that ``relockShared()`` can take it again
    /// without opening the file.
    func releaseKeepingOpen() {
        guard descriptor >= 0 else { return }
        flock(descriptor, LOCK_UN)
    }

    /// Takes the lock again, shared, on the file kept open by ``releaseKeepingOpen()``, blocking
    /// like ``lockShared(_:)``.
    ///
    /// - Returns: `false` (and holds nothing) when the file was deleted or replaced meanwhile;
    ///   then ``unlock()`` this one and lock the path anew.
    func relockShared() -> Bool {
        guard descriptor >= 0 else { return false }
        var result: Int32
        repeat {
            result = flock(descriptor, LOCK_SH)
        } while result != 0 && errno == EINTR
        guard result == 0 else { return false }
        if Self.isFile(descriptor, at: path) { return true }
        flock(descriptor, LOCK_UN)
        return false
    }

    /// Whether the file this lock holds is still the one at ``path``: `false` once it was deleted
    /// or replaced (whoever locks the path now does not contend with this lock).
    var isStillOnDisk: Bool { descriptor >= 0 && Self.isFile(descriptor, at: path) }

    /// Whether the open `descriptor` is the file at `path` (same device and inode).
    private static func isFile(_ descriptor: Int32, at path: String) -> Bool {
        var held = stat(), current = stat()
        return fstat(descriptor, &held) == 0 && lstat(path, &current) == 0
            && held.st_ino == current.st_ino && held.st_dev == current.st_dev
    }

    /// Releases the lock; later calls do nothing.
    func unlock() {
        guard descriptor >= 0 else { return }
        close(descriptor)  // closing the descriptor releases the flock
        descriptor = -1
    }

    /// Releases the lock after deleting the lock file, so it does not accumulate.
    func unlockAndRemove() {
        guard descriptor >= 0 else { return }
        unlink(path)
        unlock()
    }

    private static func acquire(_ path: String, blocking: Bool, shared: Bool = false) throws(ResourceError) -> FileLock? {
        while true {
            let descriptor = StoreFiles.openFile(path, O_RDWR | O_CREAT)
            guard descriptor >= 0 else { throw StoreFailure.posix("open the lock file '\(path)'") }
            var result: Int32
            repeat {
                result = flock(descriptor, (shared ? LOCK_SH : LOCK_EX) | (blocking ? 0 : LOCK_NB))
            } while result != 0 && errno == EINTR
            if result != 0 {
                let code = errno
                close(descriptor)
                if code == EWOULDBLOCK { return nil }
                errno = code
                throw StoreFailure.posix("lock '\(path)'")
            }
            // The holder before us may have deleted the file: then we locked an orphan; start over.
            if isFile(descriptor, at: path) { return FileLock(path: path, descriptor: descriptor) }
            close(descriptor)
        }
    }
}
