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

/// One connection to a SQLite database, on SQLite's C API: the store's whole database layer is
/// this file, ``SQLitePool`` and ``SQLiteMigrator``.
///
/// Not thread-safe, as SQLite's multi-thread mode (`SQLITE_OPEN_NOMUTEX`) is not: one thread at a
/// time uses a connection, which ``SQLitePool`` guarantees by handing each one to one caller.
///
/// ```swift
/// let db = try SQLiteDatabase(path: path)
/// try db.execute(sql: "INSERT INTO tagPriority (catalogURL, tag, priority) VALUES (?, ?, ?)", arguments: [url, tag, 0.5])
/// let rows = try db.fetchAll(sql: "SELECT tag, priority FROM tagPriority")
/// ```
final class SQLiteDatabase: @unchecked Sendable {
    let handle: OpaquePointer
    let path: String
    private var cachedStatements: [String: SQLiteStatement] = [:]

    /// Opens the database at `path` (a `file:` URI too, for `?immutable=1`).
    ///
    /// Extended result codes are on, foreign keys are enforced, and a statement that finds the
    /// database locked by another connection (of any process) retries for `busyTimeoutMilliseconds`
    /// before it fails with `SQLITE_BUSY`.
    ///
    /// - Parameter readOnly: `SQLITE_OPEN_READONLY`; otherwise the file is created if missing.
    init(path: String, readOnly: Bool = false, busyTimeoutMilliseconds: Int32 = SQLitePool.busyTimeoutMilliseconds) throws(SQLiteError) {
        self.path = path
        var flags = SQLITE_OPEN_NOMUTEX | (readOnly ? SQLITE_OPEN_READONLY : SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE)
        if path.hasPrefix("file:") { flags |= SQLITE_OPEN_URI }
        var opened: OpaquePointer?
        let code = sqlite3_open_v2(path, &opened, flags, nil)
        guard code == SQLITE_OK, let opened else {
            let error = SQLiteError(connection: opened, code: code)
            sqlite3_close_v2(opened)
            throw error
        }
        handle = opened
        sqlite3_extended_result_codes(handle, 1)
        sqlite3_busy_timeout(handle, busyTimeoutMilliseconds)
        do throws(SQLiteError) {
            // SQLite opens a file it may not write read-only without a word; a caller that asked
            // to write is told at once, as a write would tell it later.
            if !readOnly, sqlite3_db_readonly(handle, "main") == 1 {
                throw SQLiteError(extendedResultCode: SQLITE_READONLY, message: "the database file is read-only for this process")
            }
            try execute(sql: "PRAGMA foreign_keys = ON")
        } catch {
            sqlite3_close_v2(handle)
            throw error
        }
    }

    deinit {
        cachedStatements.removeAll()  // finalized before the connection closes
        sqlite3_close_v2(handle)
    }

    /// Runs `sql`: with `arguments`, one statement bound to them; without, any number of
    /// statements separated by `;` (a migration's script), none with a placeholder.
    func execute(sql: String, arguments: SQLiteArguments = []) throws(SQLiteError) {
        guard arguments.values.isEmpty else {
            try makeStatement(sql: sql).execute(arguments: arguments)
            return
        }
        var failure: SQLiteError?
        sql.withCString { start in
            var next: UnsafePointer<CChar>? = start
            while let current = next, current.pointee != 0 {
                var statement: OpaquePointer?
                var tail: UnsafePointer<CChar>?
                let code = sqlite3_prepare_v2(handle, current, -1, &statement, &tail)
                guard code == SQLITE_OK else {
                    failure = SQLiteError(connection: handle, code: code, sql: sql)
                    return
                }
                next = tail
                guard let statement else { continue }  // only whitespace or a comment
                defer { sqlite3_finalize(statement) }
                // An unbound placeholder would be NULL: a missing argument, not a value.
                guard sqlite3_bind_parameter_count(statement) == 0 else {
                    failure = SQLiteError(extendedResultCode: SQLITE_RANGE, message: "a placeholder without an argument", sql: sql)
                    return
                }
                var stepped: Int32
                repeat { stepped = sqlite3_step(statement) } while stepped == SQLITE_ROW
                guard stepped == SQLITE_DONE else {
                    failure = SQLiteError(connection: handle, code: stepped, sql: sql)
                    return
                }
            }
        }
        if let failure { throw failure }
    }

    /// A prepared statement of `sql`, which must be one statement.
    func makeStatement(sql: String) throws(SQLiteError) -> SQLiteStatement {
        try SQLiteStatement(database: self, sql: sql)
    }

    /// A prepared statement of `sql` kept for the connection's lifetime, for statements run in a
    /// loop; it must not be used again while one of its results is being read.
    func cachedStatement(sql: String) throws(SQLiteError) -> SQLiteStatement {
        if let statement = cachedStatements[sql] { return statement }
        let statement = try makeStatement(sql: sql)
        cachedStatements[sql] = statement
        return statement
    }

    /// Every row `sql` returns.
    func fetchAll(sql: String, arguments: SQLiteArguments = []) throws(SQLiteError) -> [SQLiteRow] {
        let cursor = try fetchCursor(sql: sql, arguments: arguments)
        var rows: [SQLiteRow] = []
        while let row = try cursor.next() { rows.append(row) }
        return rows
    }

    /// The first row `sql` returns, if any.
    func fetchOne(sql: String, arguments: SQLiteArguments = []) throws(SQLiteError) -> SQLiteRow? {
        try fetchCursor(sql: sql, arguments: arguments).next()
    }

    /// The rows `sql` returns, one step at a time.
    func fetchCursor(sql: String, arguments: SQLiteArguments = []) throws(SQLiteError) -> SQLiteCursor {
        let statement = try makeStatement(sql: sql)
        try statement.bind(arguments)
        return SQLiteCursor(statement: statement)
    }

    /// The rows the last INSERT, UPDATE or DELETE changed.
    var changesCount: Int { Int(sqlite3_changes64(handle)) }

    /// Whether a transaction is open on this connection.
    var isInsideTransaction: Bool { sqlite3_get_autocommit(handle) == 0 }

    /// How a transaction begins.
    enum TransactionKind: String {
        /// Takes a read snapshot at its first read, and the write lock only if it writes.
        case deferred = "BEGIN DEFERRED TRANSACTION"
        /// Takes the write lock at once (waiting for it as long as the busy timeout), so no other
        /// writer can change what it read before it writes.
        case immediate = "BEGIN IMMEDIATE TRANSACTION"
    }

    /// Runs `body` in a transaction: committed when it returns, rolled back when it (or the
    /// commit) throws, so a failed body leaves nothing behind.
    func inTransaction<T>(_ kind: TransactionKind, _ body: (SQLiteDatabase) throws -> T) throws -> T {
        try execute(sql: kind.rawValue)
        do {
            let result = try body(self)
            try execute(sql: "COMMIT TRANSACTION")
            return result
        } catch {
            rollback()
            throw error
        }
    }

    /// Rolls back the open transaction, if there is one (SQLite may have rolled it back itself).
    func rollback() {
        guard isInsideTransaction else { return }
        sqlite3_exec(handle, "ROLLBACK TRANSACTION", nil, nil, nil)
    }
}

/// A prepared statement of one ``SQLiteDatabase``.
final class SQLiteStatement {
    /// The connection's handle, for its error messages; not the connection itself, which holds its
    /// cached statements (a cycle would keep both open for good). A statement that outlives its
    /// connection keeps the handle valid: `sqlite3_close_v2` waits for the last statement.
    private let connection: OpaquePointer
    let handle: OpaquePointer
    let sql: String
    /// The result's column names.
    let columnNames: [String]

    fileprivate init(database: SQLiteDatabase, sql: String) throws(SQLiteError) {
        connection = database.handle
        self.sql = sql
        var prepared: OpaquePointer?
        var failure: SQLiteError?
        sql.withCString { start in
            var tail: UnsafePointer<CChar>?
            let code = sqlite3_prepare_v2(database.handle, start, -1, &prepared, &tail)
            if code != SQLITE_OK {
                failure = SQLiteError(connection: database.handle, code: code, sql: sql)
            } else if prepared == nil {
                failure = SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "no statement", sql: sql)
            } else if let tail, String(cString: tail).contains(where: { !$0.isWhitespace && $0 != ";" }) {
                failure = SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "more than one statement", sql: sql)
            }
        }
        if let failure {
            sqlite3_finalize(prepared)
            throw failure
        }
        guard let prepared else { throw SQLiteError(extendedResultCode: SQLITE_MISUSE, message: "no statement", sql: sql) }
        handle = prepared
        columnNames = (0..<sqlite3_column_count(prepared)).map { String(cString: sqlite3_column_name(prepared, $0)) }
    }

    deinit { sqlite3_finalize(handle) }

    /// Resets the statement and binds `arguments` to its placeholders, which must be as many.
    func bind(_ arguments: SQLiteArguments) throws(SQLiteError) {
        sqlite3_reset(handle)
        sqlite3_clear_bindings(handle)
        let expected = Int(sqlite3_bind_parameter_count(handle))
        guard arguments.values.count == expected else {
            throw SQLiteError(extendedResultCode: SQLITE_RANGE, message: "\(arguments.values.count) arguments for \(expected) placeholders", sql: sql)
        }
        for (offset, value) in arguments.values.enumerated() {
            let index = Int32(offset + 1)  // at most SQLITE_MAX_VARIABLE_NUMBER, an Int32
            let code: Int32
            switch value {
            case .null: code = sqlite3_bind_null(handle, index)
            case .integer(let integer): code = sqlite3_bind_int64(handle, index, integer)
            case .real(let real): code = sqlite3_bind_double(handle, index, real)
            case .text(var text): code = text.withUTF8 { csqlite_bind_text(handle, index, $0.baseAddress, UInt64($0.count)) }
            case .blob(let data): code = data.withUnsafeBytes { csqlite_bind_blob(handle, index, $0.baseAddress, UInt64($0.count)) }
            }
            guard code == SQLITE_OK else { throw SQLiteError(connection: connection, code: code, sql: sql) }
        }
    }

    /// Binds `arguments` and runs the statement to its end.
    func execute(arguments: SQLiteArguments = []) throws(SQLiteError) {
        try bind(arguments)
        defer { sqlite3_reset(handle) }
        while try step() {}
    }

    /// One step: `true` when a row is ready (read it with ``row()``), `false` at the end.
    func step() throws(SQLiteError) -> Bool {
        switch sqlite3_step(handle) {
        case SQLITE_ROW: return true
        case SQLITE_DONE: return false
        case let code: throw SQLiteError(connection: connection, code: code, sql: sql)
        }
    }

    /// The row the last step stopped at, copied.
    func row() -> SQLiteRow {
        SQLiteRow(columnNames: columnNames, values: (0..<Int32(columnNames.count)).map(value(at:)))
    }

    private func value(at column: Int32) -> SQLiteValue {
        switch sqlite3_column_type(handle, column) {
        case SQLITE_INTEGER: return .integer(sqlite3_column_int64(handle, column))
        case SQLITE_FLOAT: return .real(sqlite3_column_double(handle, column))
        case SQLITE_TEXT:
            // The pointer first, then its length, as SQLite's documentation asks.
            guard let text = sqlite3_column_text(handle, column) else { return .text("") }
            let count = Int(sqlite3_column_bytes(handle, column))
            return .text(String(decoding: UnsafeBufferPointer(start: text, count: count), as: UTF8.self))
        case SQLITE_BLOB:
            guard let bytes = sqlite3_column_blob(handle, column) else { return .blob(Data()) }
            return .blob(Data(bytes: bytes, count: Int(sqlite3_column_bytes(handle, column))))
        default: return .null
        }
    }
}

/// The rows of a query, read one step at a time (``next()``); the statement is finalized with it.
final class SQLiteCursor {
    private let statement: SQLiteStatement
    private var finished = false

    fileprivate init(statement: SQLiteStatement) { self.statement = statement }

    /// The next row, or `nil` at the end.
    func next() throws(SQLiteError) -> SQLiteRow? {
        guard !finished else { return nil }
        do {
            guard try statement.step() else {
                finished = true
                return nil
            }
        } catch {
            finished = true
            throw error
        }
        return statement.row()
    }
}
