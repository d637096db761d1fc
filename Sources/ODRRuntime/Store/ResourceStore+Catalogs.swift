import Foundation
import GRDB
import ODRFormat

extension ResourceStore {
    /// The catalog at `url` as the last successful check left it, or `nil` if it was never fetched.
    public func followedCatalog(url: URL) throws(ResourceError) -> FollowedCatalog? {
        let row = try read("read a followed catalog") { db in
            try Row.fetchOne(db, sql: "SELECT * FROM catalog WHERE url = ?", arguments: [CatalogLocation.key(url)])
        }
        guard let row else { return nil }
        let data: Data? = row["indexJSON"]
        let keySetData: Data? = row["keySetJSON"]
        return FollowedCatalog(
            url: CatalogLocation.base(url), distribution: row["distribution"],
            validators: TransferValidators(entityTag: row["entityTag"], lastModified: row["lastModified"]),
            highestSerial: row["highestSerial"], index: data.flatMap { try? CatalogIndex.decode(from: $0) },
            currentVersion: row["currentVersion"], checkedAt: row["checkedAt"],
            keySet: keySetData.flatMap { try? JSONDecoder().decode(TrustedKeySet.self, from: $0) })
    }

    /// The stored manifest of version `version` of the catalog at `catalogURL`.
    public func manifest(catalogURL: URL, version: Int) throws(ResourceError) -> VersionManifest? {
        do {
            return try Self.storedManifest(in: database, manifests: manifestsURL, catalogKey: CatalogLocation.key(catalogURL),
                                           version: version)
        } catch let error as FormatError {
            throw ResourceError(.invalidCatalog, "The stored manifest of version \(version) is damaged; check the catalog again online.",
                                url: catalogURL, cause: error)
        } catch {
            throw StoreFailure.database("read a manifest", error, directory: directory)
        }
    }

    /// A stored manifest: from its compact file when there is one (milliseconds, memory-mapped),
    /// else from its JSON (validated), writing the compact file for the next time.
    ///
    /// The compact file is named by the SHA-256 of the JSON it was made from (`manifestFile` maps
    /// a catalog's version to it), so a file can never stand for another manifest, and a missing or
    /// damaged one only costs decoding the JSON again.
    ///
    /// - Throws: `FormatError` when the JSON is damaged; a database error when it cannot be read.
    static func storedManifest(in database: DatabasePool, manifests: URL, catalogKey: String, version: Int) throws -> VersionManifest? {
        let arguments: StatementArguments = [catalogKey, version]
        let digest = try database.read { db in
            try String.fetchOne(db, sql: "SELECT jsonSHA256 FROM manifestFile WHERE catalogURL = ? AND version = ?", arguments: arguments)
        }
        if let digest, HexDigest.isSHA256(digest),
           let manifest = try? VersionManifest(compactFileAt: compactFileURL(digest: digest, in: manifests)) {
            return manifest
        }
        let json = try database.read { db in
            try Data.fetchOne(db, sql: "SELECT json FROM manifest WHERE catalogURL = ? AND version = ?", arguments: arguments)
        }
        guard let json else { return nil }
        let manifest = try VersionManifest.decode(from: json)
        // Best effort: without it the next open decodes the JSON again.
        if let digest = try? writeCompactFile(of: manifest, json: json, in: manifests) {
            try? database.write { db in try recordCompactFile(digest: digest, catalogKey: catalogKey, version: version, db) }
        }
        return manifest
    }

    /// The compact file of the manifest whose JSON has SHA-256 `digest`.
    static func compactFileURL(digest: String, in manifests: URL) -> URL { manifests.appending(path: "\(digest).odrm") }

    /// Writes the compact form of `manifest` (whose JSON is `json`) by renaming a complete file
    /// into place, so a mapped file is never changed under its reader; returns the JSON's SHA-256.
    static func writeCompactFile(of manifest: VersionManifest, json: Data, in manifests: URL) throws -> String {
        let digest = ContentHash.sha256Hex(of: json)
        try manifest.compactEncoded().write(to: compactFileURL(digest: digest, in: manifests), options: .atomic)
        return digest
    }

    private static func recordCompactFile(digest: String, catalogKey: String, version: Int, _ db: Database) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO manifestFile (catalogURL, version, jsonSHA256) VALUES (?, ?, ?)",
                       arguments: [catalogKey, version, digest])
    }

    /// Stores an accepted `catalog.json` (and the manifest of the version it points at) in one transaction.
    ///
    /// Refuses an index whose serial is lower than the highest stored, even when another process
    /// stored that one a moment ago.
    func commitCatalog(_ followed: FollowedCatalog, manifest: VersionManifest?) throws(ResourceError) {
        let key = CatalogLocation.key(followed.url)
        let indexData: Data?
        do { indexData = try followed.index?.encoded() } catch {
            throw ResourceError(.invalidCatalog, "The catalog index could not be stored.", url: followed.url, cause: error)
        }
        let keySetData = followed.keySet.flatMap { try? JSONEncoder().encode($0) }
        let manifestData: Data?
        do { manifestData = try manifest?.encoded() } catch {
            throw ResourceError(.invalidCatalog, "The version manifest could not be stored.", url: followed.url, cause: error)
        }
        // Written before the transaction that names it; if that transaction fails, the file is an
        // orphan that the next repair removes.
        var compactDigest: String?
        if let manifest, let manifestData {
            compactDigest = try? Self.writeCompactFile(of: manifest, json: manifestData, in: manifestsURL)
        }
        let now = clock()
        try write("store a catalog") { db in
            let highest = try Int.fetchOne(db, sql: "SELECT highestSerial FROM catalog WHERE url = ?", arguments: [key]) ?? -1
            if highest > followed.highestSerial {
                throw CatalogClient.rollbackError(serial: followed.highestSerial, highest: highest, url: followed.url)
            }
            try db.execute(sql: """
                INSERT INTO catalog (url, distribution, catalogID, entityTag, lastModified, highestSerial, currentVersion, indexJSON, checkedAt, keySetJSON)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                ON CONFLICT(url) DO UPDATE SET distribution = excluded.distribution, catalogID = excluded.catalogID,
                    entityTag = excluded.entityTag, lastModified = excluded.lastModified,
                    highestSerial = excluded.highestSerial, currentVersion = excluded.currentVersion,
                    indexJSON = excluded.indexJSON, checkedAt = excluded.checkedAt, keySetJSON = excluded.keySetJSON
                """, arguments: [key, followed.distribution, followed.index?.id, followed.validators.entityTag,
                                 followed.validators.lastModified, followed.highestSerial, followed.currentVersion,
                                 indexData, now, keySetData])
            if let manifest, let manifestData {
                try db.execute(sql: "INSERT OR IGNORE INTO manifest (catalogURL, version, json, fetchedAt) VALUES (?, ?, ?, ?)",
                               arguments: [key, manifest.version, manifestData, now])
                // Only for a manifest stored now: a version already stored keeps its JSON and file.
                if db.changesCount > 0, let compactDigest {
                    try Self.recordCompactFile(digest: compactDigest, catalogKey: key, version: manifest.version, db)
                }
                for pack in manifest.packs {
                    try db.execute(sql: "INSERT OR IGNORE INTO packVersion (packID, catalogURL, version) VALUES (?, ?, ?)",
                                   arguments: [pack.id, key, manifest.version])
                }
            }
            try StoreSchema.updateSupersededFlags(db)
        }
    }

    /// The versions, of every followed catalog, that include pack `id`.
    public func versions(includingPack id: String) throws(ResourceError) -> [Int] {
        try read("read pack versions") { db in
            try Int.fetchAll(db, sql: "SELECT DISTINCT version FROM packVersion WHERE packID = ? ORDER BY version", arguments: [id])
        }
    }
}
