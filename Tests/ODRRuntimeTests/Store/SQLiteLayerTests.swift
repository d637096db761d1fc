import CSQLite
import Foundation
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// SQLite's extended result codes the tests use: sqlite3.h defines them as expressions, which Swift
/// does not import.
enum ExtendedCode {
    static let ioErrorShortRead = SQLITE_IOERR | (2 << 8)
    static let ioErrorFsync = SQLITE_IOERR | (4 << 8)
    static let lockedSharedCache = SQLITE_LOCKED | (1 << 8)
    static let busySnapshot = SQLITE_BUSY | (2 << 8)
    static let corruptIndex = SQLITE_CORRUPT | (3 << 8)
    static let readOnlyDatabaseMoved = SQLITE_READONLY | (4 << 8)
    static let constraintPrimaryKey = SQLITE_CONSTRAINT | (6 << 8)
}

/// The store's own SQLite layer (Sources/ODRRuntime/Store/SQLite): checked reads, transactions that
/// leave nothing behind when they fail, waiting for and reporting a locked database, and errors
/// that carry SQLite's extended result code.
struct SQLiteLayerTests {
    /// A fresh database with one table, in a temporary folder.
    static func makeDatabase() throws -> (TemporaryDirectory, String) {
        let directory = try TemporaryDirectory(prefix: "odr-sqlite")
        let path = directory.appending("test.sqlite").path
        let db = try SQLiteDatabase(path: path)
        try db.execute(sql: "CREATE TABLE item (id INTEGER PRIMARY KEY, count INTEGER, name TEXT, data BLOB, score DOUBLE)")
        return (directory, path)
    }

    /// A value of another storage class than asked is `SQLITE_MISMATCH`, a missing column
    /// `SQLITE_RANGE`: typed errors, never a trap or a silent conversion.
    @Test func aColumnOfTheWrongTypeIsATypedErrorNotATrap() throws {
        let (directory, path) = try Self.makeDatabase()
        let db = try SQLiteDatabase(path: path)
        // Stored past the columns' affinities (a TEXT column would turn 42 into '42').
        try db.execute(sql: "INSERT INTO item (count, data, score) VALUES ('many', 'text', X'00')")
        let row = try #require(try db.fetchOne(sql: "SELECT count, 42 AS name, data, score FROM item"))
        for read in [{ try row.value("count").integer() as Any }, { try row.value("name").text() as Any },
                     { try row.value("data").blob() as Any }, { try row.value("score").real() as Any },
                     { try row.value("name").blob() as Any }, { try row.value("count").bool() as Any }] {
            #expect { _ = try read() } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_MISMATCH }
        }
        #expect(row["missing"] == nil)
        #expect { _ = try row.value("missing") } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_RANGE }
        #expect { _ = try row.value(at: 4) } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_RANGE }
        // What the store's checked reads make of it: damaged rows, not values.
        #expect(throws: DamagedRow.self) { try StoreRow.integer(row, "count", in: 0...10) }
        #expect(throws: DamagedRow.self) { try StoreRow.text(row, "name") }
        #expect(throws: DamagedRow.self) { try StoreRow.optionalBlob(row, "data") }
        withExtendedLifetime(directory) {}
    }

    /// Values come back as they were bound: the extremes of Int64, a REAL, an empty string and an
    /// empty blob (neither of which becomes NULL), and NULL.
    @Test func boundValuesComeBackAsTheyWere() throws {
        let (directory, path) = try Self.makeDatabase()
        let db = try SQLiteDatabase(path: path)
        let data = Data([0, 1, 2, 0xff])
        for (count, name, blob, score) in [(Int64.max, "", Data(), 0.5), (Int64.min, "né\u{0}x", data, -1e300)] as [(Int64, String, Data, Double)] {
            try db.execute(sql: "DELETE FROM item")
            try db.execute(sql: "INSERT INTO item (count, name, data, score) VALUES (?, ?, ?, ?)", arguments: [count, name, blob, score])
            let row = try #require(try db.fetchOne(sql: "SELECT count, name, data, score, typeof(name), typeof(data) FROM item"))
            #expect(try row.value("count").integer() == count)
            #expect(try row.value("name").text() == name)
            #expect(try row.value("data").blob() == blob)
            #expect(try row.value("score").real() == score)
            #expect(try row.value(at: 4).text() == "text" && row.value(at: 5).text() == "blob")
        }
        try db.execute(sql: "UPDATE item SET name = ?", arguments: [nil])
        #expect(try db.fetchOne(sql: "SELECT name FROM item")?.value(at: 0) == .null)
        // A wrong number of arguments, or arguments for several statements, is an error.
        #expect { try db.execute(sql: "UPDATE item SET name = ?", arguments: [1, 2]) } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_RANGE }
        #expect { try db.execute(sql: "DELETE FROM item WHERE id = ?") } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_RANGE }
        #expect(try db.fetchAll(sql: "SELECT * FROM item").count == 1)
        #expect { try db.execute(sql: "UPDATE item SET name = ?; DELETE FROM item", arguments: [1]) } throws: { ($0 as? SQLiteError)?.resultCode == SQLITE_MISUSE }
        withExtendedLifetime(directory) {}
    }

    struct Refused: Error {}

    /// A write whose body throws is rolled back, leaving nothing, and its error comes out as it
    /// was thrown; the writer then commits the next write as usual.
    @Test func aWriteThatThrowsLeavesNothing() throws {
        let (directory, path) = try Self.makeDatabase()
        let pool = try SQLitePool(path: path)
        #expect(throws: Refused.self) {
            try pool.write { db in
                try db.execute(sql: "INSERT INTO item (name) VALUES ('first')")
                try db.execute(sql: "INSERT INTO item (name) VALUES ('second')")
                #expect(db.isInsideTransaction)
                throw Refused()
            }
        }
        #expect(try pool.read { try $0.fetchAll(sql: "SELECT * FROM item") }.isEmpty)
        // A failing statement midway rolls back the statements before it too.
        #expect(throws: SQLiteError.self) {
            try pool.write { db in
                try db.execute(sql: "INSERT INTO item (id, name) VALUES (1, 'kept?')")
                try db.execute(sql: "INSERT INTO item (id, name) VALUES (1, 'duplicate')")
            }
        }
        #expect(try SQLiteDatabase(path: path).fetchAll(sql: "SELECT * FROM item").isEmpty)
        try pool.write { try $0.execute(sql: "INSERT INTO item (name) VALUES ('third')") }
        #expect(try pool.read { try $0.fetchAll(sql: "SELECT name FROM item").map { try $0.value(at: 0).text() } } == ["third"])
        withExtendedLifetime(directory) {}
    }

    /// A read sees one snapshot for its whole body, even when a write commits meanwhile.
    @Test func aReadSeesOneSnapshot() throws {
        let (directory, path) = try Self.makeDatabase()
        let pool = try SQLitePool(path: path)
        try pool.write { try $0.execute(sql: "INSERT INTO item (name) VALUES ('before')") }
        let counts = try pool.read { db in
            let first = try db.fetchAll(sql: "SELECT * FROM item").count
            try pool.write { try $0.execute(sql: "INSERT INTO item (name) VALUES ('during')") }
            return (first, try db.fetchAll(sql: "SELECT * FROM item").count)
        }
        #expect(counts == (1, 1))
        #expect(try pool.read { try $0.fetchAll(sql: "SELECT * FROM item").count } == 2)
        withExtendedLifetime(directory) {}
    }

    /// A writer that finds the database locked by another connection waits for it; past its busy
    /// timeout it fails with `SQLITE_BUSY`, which the store reports as a lock held too long.
    @Test func aLockedDatabaseIsWaitedForThenReportedAsBusy() async throws {
        let (directory, path) = try Self.makeDatabase()
        let pool = try SQLitePool(path: path)  // opened first: it turns WAL mode on, which writes
        let holder = try SQLiteDatabase(path: path)
        try holder.execute(sql: "BEGIN IMMEDIATE")
        try holder.execute(sql: "INSERT INTO item (name) VALUES ('holder')")

        let impatient = try SQLiteDatabase(path: path, busyTimeoutMilliseconds: 0)
        var caught: SQLiteError?
        do {
            try impatient.inTransaction(.immediate) { try $0.execute(sql: "INSERT INTO item (name) VALUES ('impatient')") }
        } catch let error as SQLiteError {
            caught = error
        }
        let busy = try #require(caught)
        #expect(busy.resultCode == SQLITE_BUSY, "\(busy)")
        #expect(!impatient.isInsideTransaction)
        let failure = StoreFailure.database("record a use", busy, directory: directory.url)
        #expect(failure.code == .storageFailure)
        #expect(failure.message.contains("locked for over 30 seconds") && failure.message.contains("SQLite: database is locked"), "\(failure.message)")

        // The pool's writer waits (up to 30 s) instead: whenever the holder commits, it goes on.
        let waiting = Task.detached { try pool.write { try $0.execute(sql: "INSERT INTO item (name) VALUES ('patient')") } }
        try holder.execute(sql: "COMMIT")
        try await waiting.value
        let names = try pool.read { try $0.fetchAll(sql: "SELECT name FROM item ORDER BY id").map { try $0.value(at: 0).text() } }
        #expect(names == ["holder", "patient"])
    }

    /// An error carries SQLite's extended result code beside the primary one, and its message.
    @Test func anErrorCarriesTheExtendedResultCode() throws {
        let (directory, path) = try Self.makeDatabase()
        let db = try SQLiteDatabase(path: path)
        try db.execute(sql: "INSERT INTO item (id) VALUES (1)")
        var caught: SQLiteError?
        do { try db.execute(sql: "INSERT INTO item (id) VALUES (1)") } catch { caught = error }
        let error = try #require(caught)
        #expect(error.resultCode == SQLITE_CONSTRAINT)
        #expect(error.extendedResultCode == ExtendedCode.constraintPrimaryKey)
        #expect(error.message?.contains("UNIQUE constraint failed: item.id") == true, "\(error)")
        #expect(error.sql == "INSERT INTO item (id) VALUES (1)")
        withExtendedLifetime(directory) {}
    }
}
