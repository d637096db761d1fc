#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif

/// Versioned schema changes, each run once per database, in order, in its own transaction.
///
/// Which migrations ran is recorded in the table `grdb_migrations (identifier TEXT NOT NULL PRIMARY
/// KEY)`: the name and layout of the SQLite library earlier releases migrated the store with, so a
/// store they created is recognized as migrated and keeps its rows (docs/STORE.md, "Schema and
/// migrations").
struct SQLiteMigrator {
    /// The table of applied migrations; stores of earlier releases have it by this name, which must not change.
    static let appliedTable = "grdb_migrations"

    private var migrations: [(identifier: String, migrate: (SQLiteDatabase) throws -> Void)] = []

    /// Adds migration `identifier`, run after those registered before it.
    mutating func registerMigration(_ identifier: String, _ migrate: @escaping (SQLiteDatabase) throws -> Void) {
        migrations.append((identifier, migrate))
    }

    /// The identifiers of the migrations that ran on `db` (none when it has no table of them).
    func appliedIdentifiers(_ db: SQLiteDatabase) throws -> Set<String> {
        let exists = try db.fetchOne(sql: "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = ?", arguments: [Self.appliedTable]) != nil
        guard exists else { return [] }
        // An identifier of another type (written outside the runtime) names no migration.
        return Set(try db.fetchAll(sql: "SELECT identifier FROM \(Self.appliedTable)").compactMap { try? $0.value(at: 0).text() })
    }

    /// Whether every registered migration ran on `db`.
    func hasCompletedMigrations(_ db: SQLiteDatabase) throws -> Bool {
        let applied = try appliedIdentifiers(db)
        return migrations.allSatisfy { applied.contains($0.identifier) }
    }

    /// Runs the migrations that have not run on `db` yet, up to and including `target` (all when
    /// `nil`), each in an immediate transaction that also records it: a migration is applied and
    /// recorded together or not at all, and one another connection applied meanwhile is skipped.
    /// Call outside a transaction.
    func migrate(_ db: SQLiteDatabase, upTo target: String? = nil) throws {
        for migration in migrations {
            try db.inTransaction(.immediate) { db in
                try db.execute(sql: "CREATE TABLE IF NOT EXISTS \(Self.appliedTable) (identifier TEXT NOT NULL PRIMARY KEY)")
                guard try !appliedIdentifiers(db).contains(migration.identifier) else { return }
                try migration.migrate(db)
                try db.execute(sql: "INSERT INTO \(Self.appliedTable) (identifier) VALUES (?)", arguments: [migration.identifier])
            }
            if migration.identifier == target { return }
        }
    }

    /// ``migrate(_:upTo:)`` on `pool`'s writer.
    func migrate(_ pool: SQLitePool) throws {
        try pool.writeWithoutTransaction { db in try migrate(db) }
    }
}
