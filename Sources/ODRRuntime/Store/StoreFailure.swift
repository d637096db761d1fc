#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation

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
    static func database(_ operation: String, _ error: any Error) -> ResourceError {
        if let error = error as? ResourceError { return error }
        return ResourceError(
            .storageFailure,
            "The store's database could not \(operation). If another program is using the store, wait for it; otherwise run `odr verify`.",
            cause: StoreFailure(description: "\(error)"))
    }
}
