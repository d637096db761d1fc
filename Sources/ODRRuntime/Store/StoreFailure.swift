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
import CSQLite

/// The lower-level cause of a store or installer failure: a system call or database error, as text.
///
/// Kept as text so that the cause is `Sendable` whatever raised it.
struct StoreFailure: Error, CustomStringConvertible, Sendable {
    var description: String

    /// A `ResourceError` for the failed system call `operation`, reading `errno`.
    ///
    /// A full disk becomes `out-of-space`; anything else `storage-failure`.
    static func posix(_ operation: String, errno code: Int32 = errno) -> ResourceError {
        let cause = StoreFailure(description: "\(operation): \(String(cString: strerror(code)))")
        if code == ENOSPC || code == EDQUOT {
            return ResourceError(.outOfSpace, "The disk is full. Free some space, then try again.", cause: cause)
        }
        return ResourceError(.storageFailure, "Could not \(operation). Check the store directory's permissions and free space.", cause: cause)
    }

    /// A `ResourceError` for a database failure while doing `operation`.
    ///
    /// SQLite's "database or disk is full" (`SQLITE_FULL`), and an I/O error of the database's files
    /// on a file system with (almost) no space left, become `out-of-space`; anything else
    /// `storage-failure`, whose message names the cause (read-only, locked, corrupt, an I/O error)
    /// and the way out that fits it, and quotes SQLite's own words.
    static func database(_ operation: String, _ error: any Error, directory: URL? = nil) -> ResourceError {
        if let error = error as? ResourceError { return error }
        let cause = StoreFailure(description: "\(error)")
        guard let error = error as? SQLiteError else {
            return ResourceError(.storageFailure, "The store's database could not \(operation): \(error). Run `odr verify`.", cause: cause)
        }
        if isDiskFull(error, directory: directory) {
            return ResourceError(
                .outOfSpace,
                "The store's database could not \(operation): the disk is full. Free some space (`odr purge --bytes N` deletes packs no request uses), then try again.",
                cause: cause)
        }
        let sqlite = error.message.map { "SQLite: \($0)" } ?? "SQLite code \(error.extendedResultCode)"
        return ResourceError(.storageFailure, "The store's database could not \(operation): \(kind(of: error, directory: directory).explanation) (\(sqlite)).", cause: cause)
    }

    /// What went wrong with the database, as far as a user can act on it.
    enum DatabaseTrouble: Equatable {
        case readOnly(path: String), locked, corrupt(path: String), ioError, other

        var explanation: String {
            switch self {
            case .readOnly(let path):
                "it is read-only. Make '\(path)' (and its -wal and -shm files and its folder) writable by this user, then try again; installed packs can still be used meanwhile"
            case .locked:
                "another process has kept it locked for over 30 seconds. Wait for that process to finish (or stop it), then try again"
            case .corrupt(let path):
                "the database file is damaged. Move '\(path)' (and its -wal and -shm files) aside, then fetch again: the store starts afresh and installs what the game needs"
            case .ioError:
                "the system reported an I/O error. Check the disk (`dmesg`), then run `odr verify`"
            case .other:
                "run `odr verify`, and report the message below if it persists"
            }
        }
    }

    /// Classifies a database error by SQLite's primary result code (so every extended code, such
    /// as `SQLITE_IOERR_SHORT_READ` or `SQLITE_BUSY_SNAPSHOT`, counts as its primary one); a file
    /// that cannot be opened is read-only when this process may not write it or its folder.
    static func kind(of error: SQLiteError, directory: URL?) -> DatabaseTrouble {
        let path = directory?.appending(path: ResourceStore.databaseName).path ?? ResourceStore.databaseName
        switch error.resultCode {
        case SQLITE_READONLY, SQLITE_PERM, SQLITE_AUTH: return .readOnly(path: path)
        case SQLITE_BUSY, SQLITE_LOCKED: return .locked
        case SQLITE_CORRUPT, SQLITE_NOTADB: return .corrupt(path: path)
        case SQLITE_CANTOPEN, SQLITE_IOERR:
            if let directory, !isWritable(directory) { return .readOnly(path: path) }
            return error.resultCode == SQLITE_IOERR ? .ioError : .other
        default: return .other
        }
    }

    /// Whether this process may write the database of the store in `directory`, its `-wal` and
    /// `-shm` files (those that exist) and the folder.
    static func isWritable(_ directory: URL) -> Bool {
        let database = directory.appending(path: ResourceStore.databaseName).path
        for path in [database, database + "-wal", database + "-shm"] where access(path, F_OK) == 0 {
            guard access(path, W_OK) == 0 else { return false }
        }
        return access(directory.path, W_OK) == 0
    }

    /// Whether a database error means the disk is full: `SQLITE_FULL`, or an I/O error (SQLite
    /// reports a shared-memory index it cannot allocate as one) while `directory`'s file system has
    /// less than ``nearlyFullBytes`` free.
    private static func isDiskFull(_ error: SQLiteError, directory: URL?) -> Bool {
        if error.resultCode == SQLITE_FULL { return true }
        guard error.resultCode == SQLITE_IOERR || error.resultCode == SQLITE_CANTOPEN, let directory else { return false }
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return false }
        // Checked: an overflowing product (no real file system) does not count as full.
        let (free, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return !overflow && free < nearlyFullBytes
    }

    /// Free space below which an I/O error of the database counts as a full disk: SQLite's
    /// shared-memory index alone takes 32 KiB.
    static let nearlyFullBytes: UInt64 = 256 << 10
}
