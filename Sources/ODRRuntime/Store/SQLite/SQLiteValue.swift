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

/// One value as SQLite stores it: its storage class and its content.
enum SQLiteValue: Sendable, Hashable {
    case null
    case integer(Int64)
    case real(Double)
    case text(String)
    case blob(Data)

    var isNull: Bool { self == .null }

    /// The storage class's name, for messages.
    var typeName: String {
        switch self {
        case .null: "NULL"
        case .integer: "INTEGER"
        case .real: "REAL"
        case .text: "TEXT"
        case .blob: "BLOB"
        }
    }

    // Checked reads: `nil` for NULL, `SQLITE_MISMATCH` for a value of another storage class. None
    // converts silently (SQLite's own column readers turn text into 0 and a real into an integer).

    /// An INTEGER.
    func integer() throws(SQLiteError) -> Int64? {
        switch self {
        case .null: return nil
        case .integer(let value): return value
        default: throw mismatch("INTEGER")
        }
    }

    /// A REAL, or an INTEGER as a number (an expression's result may be either).
    func real() throws(SQLiteError) -> Double? {
        switch self {
        case .null: return nil
        case .real(let value): return value
        case .integer(let value): return Double(value)
        default: throw mismatch("REAL")
        }
    }

    /// TEXT.
    func text() throws(SQLiteError) -> String? {
        switch self {
        case .null: return nil
        case .text(let value): return value
        default: throw mismatch("TEXT")
        }
    }

    /// A BLOB.
    func blob() throws(SQLiteError) -> Data? {
        switch self {
        case .null: return nil
        case .blob(let value): return value
        default: throw mismatch("BLOB")
        }
    }

    /// A truth value as SQL computes one (`EXISTS`, a comparison): an INTEGER or REAL, true unless 0.
    func bool() throws(SQLiteError) -> Bool? {
        switch self {
        case .null: return nil
        case .integer(let value): return value != 0
        case .real(let value): return value != 0
        default: throw mismatch("INTEGER (a truth value)")
        }
    }

    private func mismatch(_ expected: String) -> SQLiteError {
        SQLiteError(extendedResultCode: SQLITE_MISMATCH, message: "read \(typeName) where \(expected) was expected")
    }
}

/// A Swift value that binds to a statement's `?` as a ``SQLiteValue``.
protocol SQLiteBindable {
    var sqliteValue: SQLiteValue { get }
}

extension Int64: SQLiteBindable { var sqliteValue: SQLiteValue { .integer(self) } }
extension Int: SQLiteBindable { var sqliteValue: SQLiteValue { .integer(Int64(self)) } }
extension Double: SQLiteBindable { var sqliteValue: SQLiteValue { .real(self) } }
extension String: SQLiteBindable { var sqliteValue: SQLiteValue { .text(self) } }
extension Data: SQLiteBindable { var sqliteValue: SQLiteValue { .blob(self) } }

/// The values bound to a statement's `?` placeholders, in order; `nil` binds NULL.
///
/// ```swift
/// try db.execute(sql: "UPDATE pack SET useCount = ? WHERE id = ?", arguments: [count, id])
/// ```
struct SQLiteArguments: ExpressibleByArrayLiteral, Sendable {
    var values: [SQLiteValue]

    init(arrayLiteral elements: (any SQLiteBindable)?...) {
        values = elements.map { $0?.sqliteValue ?? .null }
    }

    init(_ elements: some Sequence<some SQLiteBindable>) {
        values = elements.map(\.sqliteValue)
    }
}

/// One row of a query's result, copied out of the statement, so it outlives the next step.
///
/// Reads are checked: ``subscript(_:)`` is `nil` for a column the query does not have, and the
/// typed reads of ``SQLiteValue`` throw `SQLITE_MISMATCH` for a value of another storage class.
/// Nothing traps on what a database file holds.
struct SQLiteRow: Sendable {
    /// The result's column names, shared by all rows of one statement.
    let columnNames: [String]
    let values: [SQLiteValue]

    /// The value of column `name` (compared as SQLite compares names, ignoring ASCII case), or
    /// `nil` when the result has no such column.
    subscript(_ name: String) -> SQLiteValue? {
        if let index = columnNames.firstIndex(of: name) { return values[index] }
        let lowered = name.lowercased()
        return columnNames.firstIndex { $0.lowercased() == lowered }.map { values[$0] }
    }

    /// The value of column `name`.
    ///
    /// - Throws: `SQLITE_RANGE` when the result has no such column.
    func value(_ name: String) throws(SQLiteError) -> SQLiteValue {
        guard let value = self[name] else {
            throw SQLiteError(extendedResultCode: SQLITE_RANGE, message: "no column '\(name)' in the result (\(columnNames.joined(separator: ", ")))")
        }
        return value
    }

    /// The value of the result's column `index` (from 0).
    ///
    /// - Throws: `SQLITE_RANGE` when the result has fewer columns.
    func value(at index: Int) throws(SQLiteError) -> SQLiteValue {
        guard values.indices.contains(index) else {
            throw SQLiteError(extendedResultCode: SQLITE_RANGE, message: "no column \(index) in a result of \(values.count)")
        }
        return values[index]
    }
}
