#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import GRDB

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
    /// on a file system with (almost) no space left, become `out-of-space`; anything else `storage-failure`.
    static func database(_ operation: String, _ error: any Error, directory: URL? = nil) -> ResourceError {
        if let error = error as? ResourceError { return error }
        let cause = StoreFailure(description: "\(error)")
        if let error = error as? DatabaseError, isDiskFull(error, directory: directory) {
            return ResourceError(
                .outOfSpace,
                "The store's database could not \(operation): the disk is full. Free some space (`odr purge --bytes N` deletes packs no request uses), then try again.",
                cause: cause)
        }
        return ResourceError(
            .storageFailure,
            "The store's database could not \(operation). If another program is using the store, wait for it; otherwise run `odr verify`.",
            cause: cause)
    }

    /// Whether a database error means the disk is full: `SQLITE_FULL`, or an I/O error (SQLite
    /// reports a shared-memory index it cannot allocate as one) while `directory`'s file system has
    /// less than ``nearlyFullBytes`` free.
    private static func isDiskFull(_ error: DatabaseError, directory: URL?) -> Bool {
        if error.resultCode == .SQLITE_FULL { return true }
        guard error.resultCode == .SQLITE_IOERR || error.resultCode == .SQLITE_CANTOPEN, let directory else { return false }
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
