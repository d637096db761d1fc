#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif
import ODRFormat

/// A database row that breaks the store's limits: written outside the runtime (or by a damaged
/// disk). It is never trusted: its pack counts as not installed, ``ResourceStore/verify()`` reports
/// it, and repair resets it (docs/STORE.md, "Tampering with the store").
struct DamagedRow: Error, Sendable, Hashable {
    /// The `id` column as text when it could be read; anything at all, so never a path.
    var id: String?
    /// What is wrong, for reports.
    var problem: String

    /// The problem as a ``StoreProblem`` of `verify()`.
    var storeProblem: StoreProblem {
        StoreProblem(packID: id.map { HexDigest.isSHA256($0) ? $0 : "'\($0.prefix(80))'" } ?? "?",
                     message: "damaged database row: \(problem)")
    }
}

/// Checked reading of the store's database: every number is checked against its limits where it
/// enters, every id before it can become a path. Each reads the stored value with its storage class
/// (``SQLiteValue``), never through SQLite's converting column readers, which would turn text into
/// 0 or a real into an integer silently; a missing column counts as NULL.
enum StoreRow {
    /// The most bytes one pack, entry or event may count (2^62): a larger size is no real size.
    static let maximumBytes: Int64 = 1 << 62
    /// The most a counter (uses, serials, versions) may reach.
    static let maximumCount: Int64 = 1 << 62

    /// Column `column` as an integer within `range`.
    static func integer(_ row: SQLiteRow, _ column: String, in range: ClosedRange<Int64>) throws(DamagedRow) -> Int64 {
        let value: Int64?
        switch row[column] ?? .null {
        case .integer(let integer): value = integer
        case .null: value = nil
        default: throw DamagedRow(problem: "\(column) is not an integer")
        }
        guard let value, range.contains(value) else {
            throw DamagedRow(problem: "\(column) = \(value.map(String.init) ?? "NULL") is outside \(range.lowerBound)...\(range.upperBound)")
        }
        return value
    }

    /// Column `column` as an optional integer within `range`.
    static func optionalInteger(_ row: SQLiteRow, _ column: String, in range: ClosedRange<Int64>) throws(DamagedRow) -> Int64? {
        guard row[column]?.isNull == false else { return nil }
        return try integer(row, column, in: range)
    }

    /// Column `column` as a size in bytes (0 to ``maximumBytes``).
    static func bytes(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> Int64 {
        try integer(row, column, in: 0...maximumBytes)
    }

    /// Column `column` as a finite number (a time in seconds since 1970, a priority).
    static func number(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> Double {
        let value: Double?
        switch row[column] ?? .null {
        case .real(let number): value = number
        case .integer(let integer): value = Double(integer)
        default: value = nil
        }
        guard let value, value.isFinite else {
            throw DamagedRow(problem: "\(column) is not a finite number")
        }
        return value
    }

    /// Column `column` as an optional finite number.
    static func optionalNumber(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> Double? {
        guard row[column]?.isNull == false else { return nil }
        return try number(row, column)
    }

    /// Column `column` as text.
    static func text(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> String {
        guard case .text(let value) = row[column] ?? .null else {
            throw DamagedRow(problem: "\(column) is not text")
        }
        return value
    }

    /// Column `column` as optional text.
    static func optionalText(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> String? {
        guard row[column]?.isNull == false else { return nil }
        return try text(row, column)
    }

    /// Column `column` as an optional blob.
    static func optionalBlob(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> Data? {
        do { return try row[column]?.blob() } catch { throw DamagedRow(problem: "\(column) is not a blob") }
    }

    /// Column `column` as a flag (0 or 1).
    static func flag(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> Bool {
        try integer(row, column, in: 0...1) == 1
    }

    /// Column `column` as a pack id: 64 lowercase hex digits, the only text that becomes a folder
    /// or lock name of a pack.
    static func packID(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> String {
        let id = try text(row, column)
        guard HexDigest.isSHA256(id) else { throw DamagedRow(id: id, problem: "\(column) is not a pack id (64 lowercase hex digits)") }
        return id
    }

    /// Column `column` as an entry name: a clean relative path, the only text that becomes a path
    /// inside a pack folder.
    static func entryName(_ row: SQLiteRow, _ column: String) throws(DamagedRow) -> String {
        let name = try text(row, column)
        guard RelativePath.isClean(name) else { throw DamagedRow(problem: "\(column) '\(name.prefix(80))' is not a clean relative path") }
        return name
    }
}
