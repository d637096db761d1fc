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
import ODRFormat

/// The store's connections to one database in WAL mode: one writer, which callers take in turn,
/// and readers, which run beside it and beside other processes' writers.
///
/// - ``write(_:)`` runs its body in a `BEGIN IMMEDIATE` transaction on the writer: the write lock
///   is taken first (waiting up to the busy timeout for another process), so what the body reads
///   cannot change before it writes; a body that throws is rolled back.
/// - ``read(_:)`` runs its body on a read-only connection in a deferred transaction: one
///   consistent snapshot of the database for the whole body, whatever commits meanwhile.
///
/// A pool opened read-only (``init(path:readOnly:)``) has only read-only connections; its writes fail.
final class SQLitePool: Sendable {
    /// How long a statement waits for another connection's lock before `SQLITE_BUSY`.
    static let busyTimeoutMilliseconds: Int32 = 30_000
    /// Readers wait less: only a checkpoint or a recovery in another process locks them out.
    static let readerBusyTimeoutMilliseconds: Int32 = 10_000
    /// Idle readers kept open for the next read; more may be open at once.
    static let keptReaders = 5

    let path: String
    private let writer: Locked<SQLiteDatabase>
    private let idleReaders = Locked<[SQLiteDatabase]>([])

    /// Opens the database at `path` (created if missing unless `readOnly`), in WAL mode.
    init(path: String, readOnly: Bool = false) throws(SQLiteError) {
        self.path = path
        let connection = try SQLiteDatabase(path: path, readOnly: readOnly, busyTimeoutMilliseconds: Self.busyTimeoutMilliseconds)
        if !readOnly { try Self.setUpWAL(connection) }
        writer = Locked(connection)
    }

    /// WAL mode (readers beside the writer), `synchronous = NORMAL` (durable at checkpoints, never
    /// corrupt), and a WAL file that exists, since a read-only reader connection cannot create it
    /// (it fails with `SQLITE_CANTOPEN` otherwise).
    private static func setUpWAL(_ db: SQLiteDatabase) throws(SQLiteError) {
        let mode = try db.fetchOne(sql: "PRAGMA journal_mode = WAL").map { row throws(SQLiteError) in try row.value(at: 0).text() } ?? nil
        guard mode?.lowercased() == "wal" else {
            throw SQLiteError(extendedResultCode: SQLITE_ERROR, message: "could not turn on WAL mode (journal mode is \(mode ?? "unknown"))")
        }
        try db.execute(sql: "PRAGMA synchronous = NORMAL")
        var info = stat()
        if stat(db.path + "-wal", &info) != 0 || info.st_size == 0 {
            try db.execute(sql: "SAVEPOINT walSetUp; CREATE TABLE odrWALSetUp (id INTEGER PRIMARY KEY); DROP TABLE odrWALSetUp; RELEASE walSetUp")
        }
    }

    /// `path` for a `file:` URI: every byte but letters, digits, `-._~` and `/` percent-encoded.
    static func uriPath(_ path: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var encoded: [UInt8] = []
        for byte in path.utf8 {
            switch byte {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"), UInt8(ascii: "/"):
                encoded.append(byte)
            default:
                encoded += [UInt8(ascii: "%"), hex[Int(byte >> 4)], hex[Int(byte & 0x0f)]]
            }
        }
        return String(decoding: encoded, as: UTF8.self)
    }

    /// Runs `body` in a deferred transaction on a reader: one snapshot for the whole body.
    func read<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        let reader = try idleReaders.withLock { $0.popLast() }
            ?? SQLiteDatabase(path: path, readOnly: true, busyTimeoutMilliseconds: Self.readerBusyTimeoutMilliseconds)
        defer {
            // A reader left inside a transaction (a rollback that failed) is closed, not reused.
            if !reader.isInsideTransaction { idleReaders.withLock { if $0.count < Self.keptReaders { $0.append(reader) } } }
        }
        return try reader.inTransaction(.deferred, body)
    }

    /// Runs `body` in an immediate transaction on the writer, after any other write of this pool.
    func write<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try writer.withLock { db throws in try db.inTransaction(.immediate, body) }
    }

    /// Runs `body` on the writer outside any transaction (migrations open their own).
    func writeWithoutTransaction<T>(_ body: (SQLiteDatabase) throws -> T) throws -> T {
        try writer.withLock { db throws in try body(db) }
    }
}
