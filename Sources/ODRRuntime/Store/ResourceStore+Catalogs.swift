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

extension ResourceStore {
    /// The base URLs of the catalogs this store follows, most recently checked first: what `odr`
    /// uses when it is given a store and no catalog URL.
    ///
    /// - Throws: `storage-failure` when the database cannot be read.
    public func followedCatalogURLs() throws(ResourceError) -> [URL] {
        let rows = try read("list the followed catalogs") { db in
            try db.fetchAll(sql: "SELECT url FROM catalog ORDER BY checkedAt DESC, url")
        }
        return rows.compactMap { row -> URL? in
            guard let text = try? StoreRow.text(row, "url"), let url = URL(string: text) else { return nil }
            return CatalogLocation.base(url)
        }
    }

    /// The catalog at `url` as the last successful check left it, or `nil` if it was never fetched.
    ///
    /// Its ``FollowedCatalog/highestSerial`` and ``FollowedCatalog/keySet`` are the store's trust in
    /// its catalog id (see ``catalogTrust(catalogID:)``), whichever URL reached it. A row damaged
    /// outside the runtime counts as never fetched: the next check replaces it, and the trust kept
    /// per catalog id still refuses rollbacks and rotated-away keys.
    ///
    /// - Throws: `storage-failure` when the database cannot be read or the trust state is damaged.
    public func followedCatalog(url: URL) throws(ResourceError) -> FollowedCatalog? {
        let row = try read("read a followed catalog") { db in
            try db.fetchOne(sql: "SELECT * FROM catalog WHERE url = ?", arguments: [try Self.catalogKey(url, db)])
        }
        guard let row else { return nil }
        var followed: FollowedCatalog
        do throws(DamagedRow) {
            let data = try? row["indexJSON"]?.blob()
            followed = FollowedCatalog(
                url: CatalogLocation.base(url), distribution: try StoreRow.text(row, "distribution"),
                validators: TransferValidators(entityTag: try StoreRow.optionalText(row, "entityTag"),
                                               lastModified: try StoreRow.optionalText(row, "lastModified")),
                highestSerial: Int(try StoreRow.integer(row, "highestSerial", in: -1...StoreRow.maximumCount)),
                index: data.flatMap { $0 }.flatMap { try? CatalogIndex.decode(from: $0) },
                currentVersion: try StoreRow.optionalInteger(row, "currentVersion", in: 1...StoreRow.maximumCount).map { Int($0) },
                checkedAt: try StoreRow.optionalNumber(row, "checkedAt"),
                keySet: Self.keySet(fromJSON: try? row["keySetJSON"]?.blob()))
        } catch {
            return nil
        }
        if let id = followed.index?.id, let trusted = try catalogTrust(catalogID: id) {
            followed.highestSerial = max(followed.highestSerial, trusted.highestSerial)
            if let keySet = trusted.keySet, keySet.version >= followed.keySet?.version ?? Int.min { followed.keySet = keySet }
        }
        return followed
    }

    /// What the store trusts of catalog `catalogID`, for the whole store: the highest serial
    /// accepted and the key set its rotations led to, whichever URL reached it (a CDN and its
    /// origin, `localhost` and `127.0.0.1`), so that no second URL starts again from the
    /// configured keys or an older serial.
    ///
    /// - Returns: `nil` when no catalog of that id was accepted.
    /// - Throws: `storage-failure` when the row was damaged outside the runtime: trust is never
    ///   reset silently; `odr verify --repair` forgets it, and the next check starts from the app's keys.
    func catalogTrust(catalogID: String) throws(ResourceError) -> CatalogTrustState? {
        let row = try read("read a catalog's trust") { db in
            try db.fetchOne(sql: "SELECT * FROM catalogTrust WHERE catalogID = ?", arguments: [catalogID])
        }
        guard let row else { return nil }
        do throws(DamagedRow) {
            return try Self.catalogTrust(from: row)
        } catch {
            throw ResourceError(.storageFailure, "The store's trust record of catalog '\(catalogID)' is damaged (\(error.problem)); the database was changed outside the runtime. Run `odr verify --repair`, which forgets it, then check the catalog again.")
        }
    }

    static func catalogTrust(from row: SQLiteRow) throws(DamagedRow) -> CatalogTrustState {
        // A value other than NULL or a key set's JSON (another type included) is damage: trust
        // is never reset silently.
        let json = try StoreRow.optionalBlob(row, "keySetJSON")
        let keySet = Self.keySet(fromJSON: json)
        if json != nil, keySet == nil { throw DamagedRow(problem: "keySetJSON is not a key set") }
        return CatalogTrustState(highestSerial: Int(try StoreRow.integer(row, "highestSerial", in: -1...StoreRow.maximumCount)),
                                 keySet: keySet)
    }

    static func keySet(fromJSON data: Data??) -> TrustedKeySet? {
        data.flatMap { $0 }.flatMap { try? JSONDecoder().decode(TrustedKeySet.self, from: $0) }
    }

    /// The stored manifest of version `version` of the catalog at `catalogURL`.
    public func manifest(catalogURL: URL, version: Int) throws(ResourceError) -> VersionManifest? {
        do {
            return try Self.storedManifest(in: database, manifests: manifestsURL, catalogKey: try catalogKey(catalogURL),
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
    static func storedManifest(in database: SQLitePool, manifests: URL, catalogKey: String, version: Int) throws -> VersionManifest? {
        let arguments: SQLiteArguments = [catalogKey, version]
        let digest = try database.read { db in
            try db.fetchOne(sql: "SELECT jsonSHA256 FROM manifestFile WHERE catalogURL = ? AND version = ?", arguments: arguments)?
                .value(at: 0).text()
        }
        if let digest, HexDigest.isSHA256(digest) {
            // Checked against the digest it is stored under: a file put in its place (another
            // manifest's compact form) is refused and written again from the JSON below.
            let url = compactFileURL(digest: digest, in: manifests)
            if let manifest = try? VersionManifest(compactFileAt: url, source: digest) { return manifest }
            if StoreFiles.exists(url.path) {
                let event = StoreEvent(time: Date().timeIntervalSince1970, kind: .repair, packID: "manifests/\(digest).odrm", bytes: 0,
                                       reason: "compact manifest damaged or not the stored manifest's; written again from its JSON")
                try? database.write { db in try log(db, event) }
            }
        }
        let json = try database.read { db in
            try db.fetchOne(sql: "SELECT json FROM manifest WHERE catalogURL = ? AND version = ?", arguments: arguments)?.value(at: 0).blob()
        }
        guard let json else { return nil }
        let manifest = try decodeStoredManifest(json)
        // Best effort: without it the next open decodes the JSON again.
        if let digest = try? writeCompactFile(of: manifest, json: json, in: manifests) {
            try? database.write { db in try recordCompactFile(digest: digest, catalogKey: catalogKey, version: version, db) }
        }
        return manifest
    }

    /// A manifest as the `manifest` table stores it: JSON, or for the part of a split version the
    /// compact form (encoding 10,000 file records as JSON cost an update check 90 ms). Either is
    /// validated, since the row comes from a file others can write.
    static func decodeStoredManifest(_ data: Data) throws(FormatError) -> VersionManifest {
        guard data.first != UInt8(ascii: "{") else { return try VersionManifest.decode(from: data) }
        let manifest = try VersionManifest(compact: data)
        try manifest.validate()
        return manifest
    }

    /// The compact file of the manifest whose JSON has SHA-256 `digest`.
    static func compactFileURL(digest: String, in manifests: URL) -> URL { manifests.appending(path: "\(digest).odrm") }

    /// Writes the compact form of `manifest` (whose JSON is `json`) by renaming a complete file
    /// into place, so a mapped file is never changed under its reader; returns the JSON's SHA-256,
    /// which the file records as what it stands for. `compact`, when given, is the compact form
    /// already encoded (without a source).
    static func writeCompactFile(of manifest: VersionManifest, json: Data, compact: Data? = nil, in manifests: URL) throws -> String {
        let digest = ContentHash.sha256Hex(of: json)
        let bytes = try compact.map { compact throws(FormatError) in try VersionManifest.compact(compact, recordingSource: digest) }
            ?? manifest.compactEncoded(source: digest)
        try bytes.write(to: compactFileURL(digest: digest, in: manifests), options: .atomic)
        return digest
    }

    private static func recordCompactFile(digest: String, catalogKey: String, version: Int, _ db: SQLiteDatabase) throws {
        try db.execute(sql: "INSERT OR REPLACE INTO manifestFile (catalogURL, version, jsonSHA256) VALUES (?, ?, ?)",
                       arguments: [catalogKey, version, digest])
    }

    /// Stores an accepted `catalog.json` (and the manifest of the version it points at) in one transaction.
    ///
    /// Refuses an index whose serial is lower than the highest stored, even when another process
    /// stored that one a moment ago. A pack the new manifest lists that is installed with other
    /// entries than it lists for the id is marked not installed (with a `repair` event), so that
    /// its bytes never serve this version and the next fetch installs the listed ones.
    ///
    /// `metadataFiles` are the split-metadata files (`meta/<sha256>.tagbin`, `.filetable`) the
    /// manifest was assembled from, kept in the store's cache: recorded with the manifest, so they
    /// stay while it is stored.
    ///
    /// With `scoped`, the manifest is the part of a split version its clients use
    /// (``SplitMetadata/scoped(_:tags:keepingOrderOf:fetch:)``) and replaces the part stored before,
    /// which must be a subset of it (see ``commitScope(catalogURL:manifest:metadataFiles:)``).
    ///
    /// `entriesChecked` are packs whose records an earlier stored version lists identically (an
    /// update carried them over): their installed entries were checked against them then.
    func commitCatalog(_ followed: FollowedCatalog, manifest lookup: ManifestIndex?, metadataFiles: [String] = [],
                       scoped: Bool = false, entriesChecked: Set<String> = []) throws(ResourceError) {
        let manifest = lookup?.manifest
        // For the read-only check; the transaction finds the row again, and a URL not seen yet
        // continues the stored catalog of its id there.
        let key = try catalogKey(followed.url)
        let indexData: Data?
        do { indexData = try followed.index?.encoded() } catch {
            throw ResourceError(.invalidCatalog, "The catalog index could not be stored.", url: followed.url, cause: error)
        }
        let keySetData = followed.keySet.flatMap { try? JSONEncoder().encode($0) }
        let manifestData: Data?
        do { manifestData = try scoped ? manifest?.compactEncoded() : manifest?.encoded() } catch {
            throw ResourceError(.invalidCatalog, "The version manifest could not be stored.", url: followed.url, cause: error)
        }
        // A read-only database that holds this very index and manifest already: nothing to store
        // but the time of the check, so installed tags stay usable.
        if readOnly == .notWritable, try read("read a stored catalog", { db in
            try db.fetchOne(sql: """
                SELECT EXISTS (SELECT 1 FROM catalog WHERE url = ? AND highestSerial = ? AND currentVersion IS ? AND indexJSON IS ?)
                   AND (? IS NULL OR EXISTS (SELECT 1 FROM manifest WHERE catalogURL = ? AND version = ?))
                """, arguments: [key, followed.highestSerial, followed.currentVersion, indexData,
                                 manifest?.version, key, manifest?.version])?.value(at: 0).bool() ?? false
        }) {
            return
        }
        // Written before the transaction that names it; if that transaction fails, the file is an
        // orphan that the next repair removes.
        var compactDigest: String?
        if let manifest, let manifestData {
            compactDigest = try? Self.writeCompactFile(of: manifest, json: manifestData, compact: scoped ? manifestData : nil, in: manifestsURL)
        }
        let now = clock()
        try write("store a catalog") { db in
            // A damaged row counts as never fetched, as `followedCatalog(url:)` reads it; the
            // trust kept per catalog id below still holds.
            // The catalog's row: the one its URL was seen serving, else the stored one of its id
            // (a new origin continues it: conditional requests, manifests), else a new row.
            var key = try Self.catalogKey(followed.url, db)
            if key == CatalogLocation.key(followed.url), let id = followed.index?.id,
               let stored = try db.fetchOne(sql: "SELECT url FROM catalog WHERE catalogID = ? AND url != ? ORDER BY checkedAt DESC, url LIMIT 1",
                                            arguments: [id, key]).flatMap({ try? StoreRow.text($0, "url") }),
               try db.fetchOne(sql: "SELECT 1 FROM catalog WHERE url = ?", arguments: [key]) == nil {
                key = stored
            }
            try db.execute(sql: "INSERT OR IGNORE INTO catalogOrigin (origin, catalogKey) VALUES (?, ?)",
                           arguments: [CatalogLocation.key(followed.url), key])
            let highest = try db.fetchOne(sql: "SELECT highestSerial FROM catalog WHERE url = ?", arguments: [key])
                .flatMap { try? StoreRow.integer($0, "highestSerial", in: -1...StoreRow.maximumCount) }.map { Int($0) } ?? -1
            if highest > followed.highestSerial {
                throw CatalogClient.rollbackError(serial: followed.highestSerial, highest: highest, url: followed.url)
            }
            if let id = followed.index?.id {
                // Checked again in the transaction: another process, through any URL, may have
                // accepted a higher serial or followed a rotation since this client read the trust.
                let stored = try db.fetchOne(sql: "SELECT * FROM catalogTrust WHERE catalogID = ?", arguments: [id])
                    .map { row throws -> CatalogTrustState in
                        do throws(DamagedRow) { return try Self.catalogTrust(from: row) } catch {
                            throw ResourceError(.storageFailure, "The store's trust record of catalog '\(id)' is damaged (\(error.problem)). Run `odr verify --repair`, then check the catalog again.")
                        }
                    }
                if let stored, stored.highestSerial > followed.highestSerial {
                    throw CatalogClient.rollbackError(serial: followed.highestSerial, highest: stored.highestSerial, url: followed.url)
                }
                if let rotated = stored?.keySet, let signer = followed.keySet, rotated.version > signer.version {
                    throw ResourceError(.untrustedCatalog, "catalog.json is signed with key set \(signer.version), but the store already follows key set \(rotated.version) of catalog '\(id)'; refusing the rotated-away keys.",
                                        url: followed.url)
                }
                try db.execute(sql: """
                    INSERT INTO catalogTrust (catalogID, highestSerial, keySetJSON) VALUES (?, ?, ?)
                    ON CONFLICT(catalogID) DO UPDATE SET highestSerial = MAX(highestSerial, excluded.highestSerial),
                        keySetJSON = COALESCE(excluded.keySetJSON, keySetJSON)
                    """, arguments: [id, followed.highestSerial, keySetData])
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
            if let manifestData, let lookup {
                try Self.storeManifestRows(db, catalogKey: key, lookup: lookup, json: manifestData, compactDigest: compactDigest,
                                           metadataFiles: metadataFiles, now: now, replacing: scoped, entriesChecked: entriesChecked)
            }
            try StoreSchema.updateSupersededFlags(db)
        }
    }

    /// Stores a larger part of a split version than the store holds (a client began a tag the
    /// stored part did not describe): replaces the stored manifest of that version when the stored
    /// one's tags are all in `lookup`'s.
    ///
    /// - Throws: `storage-failure` caused by ``ScopeChanged`` when another process stored a part with tags this one lacks
    ///   (assemble the union and try again); `storage-failure`.
    func commitScope(catalogURL: URL, manifest lookup: ManifestIndex, metadataFiles: [String]) throws(ResourceError) {
        let manifest = lookup.manifest
        let key = try catalogKey(catalogURL)
        let json: Data
        do { json = try manifest.compactEncoded() } catch {
            throw ResourceError(.invalidCatalog, "The version manifest could not be stored.", url: catalogURL, cause: error)
        }
        let compactDigest = try? Self.writeCompactFile(of: manifest, json: json, compact: json, in: manifestsURL)
        let now = clock()
        try write("store a larger part of a split version") { db in
            try Self.storeManifestRows(db, catalogKey: key, lookup: lookup, json: json, compactDigest: compactDigest,
                                       metadataFiles: metadataFiles, now: now, replacing: true)
            try StoreSchema.updateSupersededFlags(db)
        }
    }

    /// Stores a version's manifest, its compact file's name, the metadata files it uses and its
    /// pack rows; marks not installed the packs installed with other contents than it lists.
    /// With `replacing`, a stored manifest of the version is replaced when its tags are a subset.
    private static func storeManifestRows(_ db: SQLiteDatabase, catalogKey key: String, lookup: ManifestIndex, json: Data,
                                          compactDigest: String?, metadataFiles: [String], now: Double, replacing: Bool,
                                          entriesChecked: Set<String> = []) throws {
        let manifest = lookup.manifest
        if replacing, let stored = try db.fetchOne(sql: "SELECT json FROM manifest WHERE catalogURL = ? AND version = ?",
                                                    arguments: [key, manifest.version])?.value(at: 0).blob() {
            // Another process may have stored a part with tags this one lacks: never lose them.
            let storedTags = (try? VersionManifest(compact: stored))?.tags.map(\.name)
                ?? (try? VersionManifest.decode(from: stored))?.tags.map(\.name) ?? []
            let tags = Set(manifest.tags.map(\.name))
            guard storedTags.allSatisfy(tags.contains) else {
                throw ResourceError(.storageFailure, "Another process stored a part of version \(manifest.version) with tags this one lacks; assemble both and store again.",
                                    cause: ScopeChanged())
            }
        }
        try db.execute(sql: replacing
                       ? "INSERT INTO manifest (catalogURL, version, json, fetchedAt) VALUES (?, ?, ?, ?) ON CONFLICT(catalogURL, version) DO UPDATE SET json = excluded.json"
                       : "INSERT OR IGNORE INTO manifest (catalogURL, version, json, fetchedAt) VALUES (?, ?, ?, ?)",
                       arguments: [key, manifest.version, json, now])
        // Only for a manifest stored now: a version already stored keeps its JSON and file.
        if db.changesCount > 0 {
            if let compactDigest {
                try recordCompactFile(digest: compactDigest, catalogKey: key, version: manifest.version, db)
            } else {
                // No compact file of this JSON (writing it failed): a reader must not keep reading
                // the file of the part this replaced, or a process assembling the union of the
                // stored part's tags never sees the others' and fails every attempt.
                try db.execute(sql: "DELETE FROM manifestFile WHERE catalogURL = ? AND version = ?", arguments: [key, manifest.version])
            }
        }
        try recordMetadataFiles(metadataFiles, catalogKey: key, version: manifest.version, db)
        for pack in manifest.packs {
            try db.execute(sql: "INSERT OR IGNORE INTO packVersion (packID, catalogURL, version) VALUES (?, ?, ?)",
                           arguments: [pack.id, key, manifest.version])
        }
        let listed = Set(manifest.packs.map(\.id))
        for pack in try packRows(db, installedOnly: true).packs where listed.contains(pack.id) && !entriesChecked.contains(pack.id) {
            guard try !StoreSchema.recordedEntries(ofPack: pack.id, match: lookup.expectedEntries(inPack: pack.id), db) else { continue }
            try db.execute(sql: "UPDATE pack SET isInstalled = 0 WHERE id = ?", arguments: [pack.id])
            try log(db, StoreEvent(time: now, kind: .repair, packID: pack.id, bytes: pack.installedBytes,
                                   reason: "installed with other contents than version \(manifest.version) lists"))
        }
    }

    /// The cause of the error ``commitScope(catalogURL:manifest:metadataFiles:)`` throws when
    /// another process stored a part of the version with tags the new part lacks.
    struct ScopeChanged: Error, Sendable {}

    /// The versions, of every followed catalog, that include pack `id`.
    public func versions(includingPack id: String) throws(ResourceError) -> [Int] {
        try read("read pack versions") { db in
            // Version numbers start at 1; a row changed outside the runtime may say otherwise.
            try db.fetchAll(sql: "SELECT DISTINCT version FROM packVersion WHERE packID = ? AND typeof(version) = 'integer' AND version >= 1 ORDER BY version",
                            arguments: [id])
                .compactMap { row throws(SQLiteError) in try row.value(at: 0).integer().flatMap { Int(exactly: $0) } }
        }
    }
}
