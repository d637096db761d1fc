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

/// A failure SQLite reported, with its result codes and its own words.
///
/// ``StoreFailure/database(_:_:directory:)`` turns it into a ``ResourceError`` by
/// ``resultCode`` (`SQLITE_FULL` is `out-of-space`, `SQLITE_CORRUPT` a damaged file, ...).
/// A value read of another type than asked is `SQLITE_MISMATCH`, raised by this layer.
struct SQLiteError: Error, CustomStringConvertible, Sendable, Equatable {
    /// SQLite's extended result code (`SQLITE_IOERR_SHORT_READ`, `SQLITE_BUSY_SNAPSHOT`, ...);
    /// a primary code when that is all there is.
    var extendedResultCode: Int32
    /// SQLite's message (`sqlite3_errmsg`), or this layer's.
    var message: String?
    /// The statement that failed, if one did.
    var sql: String?

    /// The primary result code (`SQLITE_BUSY`, `SQLITE_FULL`, ...): the low byte of the extended one.
    var resultCode: Int32 { extendedResultCode & 0xff }

    init(extendedResultCode: Int32, message: String? = nil, sql: String? = nil) {
        self.extendedResultCode = extendedResultCode
        self.message = message
        self.sql = sql
    }

    /// The error connection `handle` holds now (its last failed call), for `sql`.
    init(connection handle: OpaquePointer?, code: Int32, sql: String? = nil) {
        let extended = handle.map { sqlite3_extended_errcode($0) } ?? code
        // The connection's code is the failing call's only when their primary codes agree.
        self.init(extendedResultCode: extended & 0xff == code & 0xff ? extended : code,
                  message: handle.flatMap { sqlite3_errmsg($0) }.map { String(cString: $0) } ?? String(cString: sqlite3_errstr(code)),
                  sql: sql)
    }

    var description: String {
        var text = "SQLite error \(resultCode)"
        if extendedResultCode != resultCode { text += " (extended \(extendedResultCode))" }
        if let message { text += ": \(message)" }
        if let sql { text += " - while executing `\(sql.prefix(200))`" }
        return text
    }
}
