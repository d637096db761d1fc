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

/// The store's tables, as versioned migrations; a store opened by a newer runtime is migrated forward.
enum StoreSchema {
    static var migrator: SQLiteMigrator {
        var migrator = SQLiteMigrator()
        migrator.registerMigration("v1") { db in
            // One row per catalog the app follows (its base URL), with what the last check saw.
            try db.execute(sql: """
                CREATE TABLE catalog (
                    url TEXT PRIMARY KEY NOT NULL,
                    distribution TEXT NOT NULL,
                    catalogID TEXT,
                    entityTag TEXT,
                    lastModified TEXT,
                    highestSerial INTEGER NOT NULL DEFAULT -1,
                    currentVersion INTEGER,
                    indexJSON BLOB,
                    checkedAt DOUBLE
                );
                -- Immutable version manifests, kept so an app starts with no network.
                CREATE TABLE manifest (
                    catalogURL TEXT NOT NULL REFERENCES catalog(url) ON DELETE CASCADE,
                    version INTEGER NOT NULL,
                    json BLOB NOT NULL,
                    fetchedAt DOUBLE NOT NULL,
                    PRIMARY KEY (catalogURL, version)
                );
                -- Every pack the store knows; isInstalled says whether packs/<id> holds it, verified.
                CREATE TABLE pack (
                    number INTEGER PRIMARY KEY AUTOINCREMENT,
                    id TEXT NOT NULL UNIQUE,
                    archiveBytes INTEGER NOT NULL,
                    installedBytes INTEGER NOT NULL,
                    installedAt DOUBLE NOT NULL,
                    lastUsedAt DOUBLE NOT NULL,
                    isInstalled BOOLEAN NOT NULL,
                    isSuperseded BOOLEAN NOT NULL DEFAULT 0
                );
                -- Which versions of which catalogs include a pack (filled from stored manifests).
                CREATE TABLE packVersion (
                    packID TEXT NOT NULL,
                    catalogURL TEXT NOT NULL REFERENCES catalog(url) ON DELETE CASCADE,
                    version INTEGER NOT NULL,
                    PRIMARY KEY (packID, catalogURL, version)
                );
                -- Preservation priorities the app set; the manifest's are the defaults.
                CREATE TABLE tagPriority (
                    catalogURL TEXT NOT NULL,
                    tag TEXT NOT NULL,
                    priority DOUBLE NOT NULL,
                    PRIMARY KEY (catalogURL, tag)
                );
                -- What happened to packs, and why.
                CREATE TABLE event (
                    number INTEGER PRIMARY KEY AUTOINCREMENT,
                    time DOUBLE NOT NULL,
                    kind TEXT NOT NULL,
                    packID TEXT NOT NULL,
                    bytes INTEGER NOT NULL,
                    reason TEXT NOT NULL
                );
                """)
        }
        migrator.registerMigration("v2") { db in
            // The entries each installed pack was verified with (name and size), so opening a store
            // checks its packs without decoding a manifest; repair fills it in for packs installed
            // before this table existed. And each stored manifest in the compact binary form, which
            // decodes in milliseconds where the JSON takes seconds for a large catalog: written
            // next to the JSON, and for an older store the first time its JSON is read.
            try db.execute(sql: """
                CREATE TABLE packEntry (
                    packID TEXT NOT NULL,
                    name TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    PRIMARY KEY (packID, name)
                ) WITHOUT ROWID;
                CREATE TABLE manifestCompact (
                    catalogURL TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    data BLOB NOT NULL,
                    PRIMARY KEY (catalogURL, version)
                );
                """)
        }
        migrator.registerMigration("v3") { db in
            // Compact manifests move to files (`manifests/<SHA-256 of the JSON>.odrm`), which are
            // memory-mapped when read rather than copied out of a blob; this table names each
            // stored manifest's file. Stores from v2 write their file the next time they read a manifest.
            try db.execute(sql: """
                DROP TABLE manifestCompact;
                CREATE TABLE manifestFile (
                    catalogURL TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    jsonSHA256 TEXT NOT NULL,
                    PRIMARY KEY (catalogURL, version)
                );
                """)
        }
        migrator.registerMigration("v4") { db in
            // Each recorded entry's SHA-256, so an install can reuse a file the store already holds
            // (same content in any installed pack, of any version) instead of downloading it again.
            // Rows recorded before this migration have none and are simply not reused.
            try db.execute(sql: """
                ALTER TABLE packEntry ADD COLUMN sha256 TEXT;
                CREATE INDEX packEntryBySHA256 ON packEntry(sha256);
                """)
        }
        migrator.registerMigration("v5") { db in
            // The key set that signed the accepted catalog.json (JSON: version, keys, threshold),
            // so a key rotation, once followed, is never undone by a catalog signed with old keys.
            try db.execute(sql: "ALTER TABLE catalog ADD COLUMN keySetJSON BLOB")
        }
        migrator.registerMigration("v6") { db in
            // How many requests began using each pack, kept across purges and reinstalls: the
            // purge planner keeps packs used often longer. Packs recorded before this migration
            // count as used once.
            try db.execute(sql: "ALTER TABLE pack ADD COLUMN useCount INTEGER NOT NULL DEFAULT 1")
        }
        migrator.registerMigration("v7") { db in
            // Trust (the highest serial, the key set rotations led to) per catalog id for the whole
            // store, rather than per URL: a second URL of the same catalog no longer starts again
            // from the configured keys. Filled from every URL's row: the highest serial, and the
            // key set of the highest version.
            try db.execute(sql: """
                CREATE TABLE catalogTrust (
                    catalogID TEXT PRIMARY KEY NOT NULL,
                    highestSerial INTEGER NOT NULL,
                    keySetJSON BLOB
                )
                """)
            var trust: [String: (serial: Int64, keySet: TrustedKeySet?, json: Data?)] = [:]
            for row in try db.fetchAll(sql: "SELECT catalogID, highestSerial, keySetJSON FROM catalog WHERE catalogID IS NOT NULL") {
                guard let id = try? StoreRow.text(row, "catalogID"),
                      let serial = try? StoreRow.integer(row, "highestSerial", in: -1...StoreRow.maximumCount) else { continue }
                let json = (try? row["keySetJSON"]?.blob()) ?? nil
                let keySet = ResourceStore.keySet(fromJSON: json)
                var entry = trust[id] ?? (serial, nil, nil)
                entry.serial = max(entry.serial, serial)
                if let keySet, keySet.version > entry.keySet?.version ?? Int.min { (entry.keySet, entry.json) = (keySet, json) }
                trust[id] = entry
            }
            for (id, entry) in trust {
                try db.execute(sql: "INSERT INTO catalogTrust (catalogID, highestSerial, keySetJSON) VALUES (?, ?, ?)",
                               arguments: [id, entry.serial, entry.json])
            }
        }
        migrator.registerMigration("v8") { db in
            // The split-metadata files (tag bins and file tables, `manifests/meta/<name>`) each
            // stored version of a format 3 catalog was assembled from, so an update finds unchanged
            // ones in the store and opening it deletes the files no stored version uses.
            try db.execute(sql: """
                CREATE TABLE manifestMeta (
                    catalogURL TEXT NOT NULL,
                    version INTEGER NOT NULL,
                    name TEXT NOT NULL,
                    PRIMARY KEY (catalogURL, version, name)
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v9") { db in
            // The chunks of each installed chunked file (docs/STORE.md, "Chunked files"): where each
            // starts in the entry's file, its size and SHA-256, so an update takes the chunks the
            // store holds from disk and downloads only the others. Packs installed before this
            // migration have none recorded and lend no chunks.
            try db.execute(sql: """
                CREATE TABLE packChunk (
                    packID TEXT NOT NULL,
                    name TEXT NOT NULL,
                    position INTEGER NOT NULL,
                    size INTEGER NOT NULL,
                    sha256 TEXT NOT NULL,
                    PRIMARY KEY (packID, name, position)
                ) WITHOUT ROWID;
                CREATE INDEX packChunkBySHA256 ON packChunk(sha256);
                """)
        }
        migrator.registerMigration("v10") { db in
            // Origins (catalog base URLs) that failed recently, so every process on the store, and
            // the next run, tries them after the others for their back-off (docs/STORE.md,
            // "Origins that failed"). A location's health, not a catalog's identity: keyed by URL.
            try db.execute(sql: """
                CREATE TABLE originFailure (
                    origin TEXT PRIMARY KEY NOT NULL,
                    failedAt DOUBLE NOT NULL
                ) WITHOUT ROWID
                """)
        }
        migrator.registerMigration("v11") { db in
            // A catalog is its id, not its URL (docs/STORE.md, "Catalogs and their origins"): every
            // origin seen serving a catalog, mapped to the key of its row, so a new primary URL of the
            // same id continues the stored catalog. Each row of the previous release was reached
            // through its own URL. Rows keep their key (the first origin's URL) and tables their
            // `catalogURL` columns: the key names the catalog's row, it is no longer looked up by URL.
            try db.execute(sql: """
                CREATE TABLE catalogOrigin (
                    origin TEXT PRIMARY KEY NOT NULL,
                    catalogKey TEXT NOT NULL
                ) WITHOUT ROWID;
                INSERT OR IGNORE INTO catalogOrigin (origin, catalogKey) SELECT url, url FROM catalog;
                """)
        }
        migrator.registerMigration("v12") { db in
            // The manager's prefetch learning measure (docs/STORE.md, "Prefetch learning"): one row,
            // so that it survives restarts and `odr status` can report it. Older releases leave it alone.
            try db.execute(sql: """
                CREATE TABLE prefetchLearning (
                    id INTEGER PRIMARY KEY NOT NULL CHECK (id = 1),
                    usedBytes DOUBLE NOT NULL,
                    judgedBytes DOUBLE NOT NULL,
                    judgments INTEGER NOT NULL
                )
                """)
        }
        return migrator
    }

    /// Replaces the recorded chunks of pack `id`'s entries (entry name to its chunks, in order).
    static func recordChunks(_ chunks: [String: [FileChunk]], ofPack id: String, _ db: SQLiteDatabase) throws {
        try db.execute(sql: "DELETE FROM packChunk WHERE packID = ?", arguments: [id])
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO packChunk (packID, name, position, size, sha256) VALUES (?, ?, ?, ?, ?)")
        for (name, table) in chunks {
            var position: Int64 = 0
            for chunk in table {
                try insert.execute(arguments: [id, name, position, chunk.size, chunk.sha256])
                position = position.clampedAdding(chunk.size)
            }
        }
    }

    /// Replaces the recorded entries of pack `id`.
    static func recordEntries(_ entries: [PackEntryExpectation], ofPack id: String, _ db: SQLiteDatabase) throws {
        try db.execute(sql: "DELETE FROM packEntry WHERE packID = ?", arguments: [id])
        let insert = try db.cachedStatement(sql: "INSERT OR REPLACE INTO packEntry (packID, name, size, sha256) VALUES (?, ?, ?, ?)")
        for entry in entries { try insert.execute(arguments: [id, entry.name, entry.size, entry.sha256]) }
    }

    /// Whether the entries recorded for pack `id` are `expected`: the same names with the same sizes
    /// and SHA-256s. A pack id that another manifest lists with other contents is not installed for
    /// this one. Entries recorded before migration `v4` have no SHA-256 and compare by name and size.
    static func recordedEntries(ofPack id: String, match expected: [PackEntryExpectation], _ db: SQLiteDatabase) throws -> Bool {
        var recorded: [String: (size: Int64, sha256: String?)] = [:]
        for row in try db.fetchAll(sql: "SELECT name, size, sha256 FROM packEntry WHERE packID = ?", arguments: [id]) {
            do throws(DamagedRow) {
                recorded[try StoreRow.text(row, "name")] = (try StoreRow.bytes(row, "size"), try StoreRow.optionalText(row, "sha256"))
            } catch {
                return false
            }
        }
        guard recorded.count == expected.count else { return false }
        return expected.allSatisfy { entry in
            guard let found = recorded[entry.name] else { return false }
            return found.size == entry.size && (found.sha256 == nil || found.sha256 == entry.sha256)
        }
    }

    /// Marks every pack that no followed catalog's current version lists as superseded.
    static func updateSupersededFlags(_ db: SQLiteDatabase) throws {
        try db.execute(sql: """
            UPDATE pack SET isSuperseded = NOT EXISTS (
                SELECT 1 FROM packVersion pv JOIN catalog c
                  ON pv.catalogURL = c.url AND pv.version = c.currentVersion
                WHERE pv.packID = pack.id)
            """)
    }
}
