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
import ODRFormat

extension ResourceStore {
    /// Brings the directory back in line with the database after a crash (ARCHITECTURE.md rule 5).
    ///
    /// - Packs being assembled in `staging/` (`<id>.d/` with its `<id>.journal`) stay, when a stored
    ///   catalog version lists the pack and it is not installed: their verified entries are not
    ///   fetched again.
    /// - Every other `staging/` item is deleted.
    /// - Folders in `packs/` without an installed row are deleted: a crash hit between rename and commit.
    /// - Installed rows whose folder is missing, or lacks an entry or has one of the wrong size, are
    ///   marked not installed (and the remains deleted), with a `repair` event.
    /// - Pack rows that break the store's limits (see ``resetDamagedRows(database:locks:clock:)``)
    ///   are deleted; names in `staging/` and `packs/` that are not pack ids are deleted without
    ///   ever becoming a lock path.
    ///
    /// Anything whose pack lock another process holds is in use by that process and left alone.
    ///
    /// With `checkEveryEntry` false (the store was closed cleanly, see ``StoreSession``) an installed
    /// pack is only checked to have its folder. With `canWrite` false (the database was opened
    /// read-only on a full disk) only files are deleted: rows are left for a later open to fix.
    /// Call with the store lock held.
    static func repair(directory: URL, database: SQLitePool, clock: () -> Double,
                       checkEveryEntry: Bool, canWrite: Bool = true) throws(ResourceError) -> StoreRepairReport {
        var report = StoreRepairReport()
        report.checkedEveryEntry = checkEveryEntry
        let fileManager = FileManager.default
        let staging = stagingURL(in: directory), packs = packsURL(in: directory)
        func lock(_ id: String) throws(ResourceError) -> FileLock? {
            // A lock can look held for a moment after its holder closed it: a child this process is
            // spawning keeps a copy of the descriptor until it execs. So retry briefly before
            // deciding that another process is working on the pack.
            let path = locksURL(in: directory).appending(path: "\(id).lock").path
            for _ in 0..<10 {
                if let held = try FileLock.tryLock(path) { return held }
                usleep(10_000)
            }
            return nil
        }

        let stagingItems = ((try? fileManager.contentsOfDirectory(atPath: staging.path)) ?? []).sorted()
        let itemNames = Set(stagingItems)
        for name in stagingItems {
            let id = String(name.prefix(while: { $0 != "." }))
            // No installer stages anything but a pack id's items, so nobody works on this one.
            guard HexDigest.isSHA256(id) else {
                removeTree(staging.appending(path: name))
                report.removedStagingItems.append(name)
                continue
            }
            guard let held = try lock(id) else { continue }
            defer { held.unlock() }
            // A pack being assembled: its verified entries, and the journal that places a cut one.
            let assembling = itemNames.contains("\(id).d") && StoreFiles.isFolder(staging.appending(path: "\(id).d").path)
            // Worth keeping only for a pack a stored catalog version still lists and the store lacks;
            // otherwise no install would ever pick it up again.
            // Its chunked entries' work files (`<id>.chunked`) too: their chunks are checked
            // against the journal and their digests when the next install picks them up.
            let resumable = assembling && ["\(id).d", "\(id).journal", "\(id).chunked"].contains(name) && stillWanted(id, database: database)
            if resumable {
                if name.hasSuffix(".d") { report.keptPartialDownloads.append(id) }
                continue
            }
            removeTree(staging.appending(path: name))
            report.removedStagingItems.append(name)
        }

        report.removedManifestFiles = removeUnnamedManifestFiles(in: manifestsURL(in: directory), database: database)
            + removeUnreferencedMetadataFiles(in: metadataURL(in: directory), database: database)

        report.removedDamagedRows = try resetDamagedRows(database: database, locks: locksURL(in: directory), clock: clock)
        let installed: [String: InstalledPack]
        do {
            installed = try database.read { db in
                Dictionary(try packRows(db, installedOnly: true).packs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            }
        } catch {
            throw StoreFailure.database("be read for repair", error, directory: directory)
        }
        repairDidReadInstalledRowsHook.withLock { $0 }?(directory)
        let packFolders = (try? fileManager.contentsOfDirectory(atPath: packs.path)) ?? []
        // Sorting only the few orphans, not a thousand installed names, keeps a clean open quick.
        for name in packFolders.filter({ installed[$0] == nil }).sorted() {
            // Not a pack id: no installer made it, so it is removed without a lock.
            guard HexDigest.isSHA256(name) else {
                removeTree(packs.appending(path: name))
                report.removedPackFolders.append(name)
                continue
            }
            guard let held = try lock(name) else { continue }
            defer { held.unlock() }
            // Re-read under the lock: another process may have committed it meanwhile.
            let committed = (try? database.read { db in
                try db.fetchOne(sql: "SELECT isInstalled FROM pack WHERE id = ?", arguments: [name])?.value(at: 0).bool()
            }) ?? nil
            if committed == true { continue }
            removeTree(packs.appending(path: name))
            report.removedPackFolders.append(name)
        }

        guard checkEveryEntry else {
            let present = Set(packFolders)
            for pack in installed.values.filter({ !present.contains($0.id) }).sorted(by: { $0.number < $1.number }) {
                guard let held = try lock(pack.id) else { continue }
                defer { held.unlock() }
                guard canWrite, !FileManager.default.fileExists(atPath: packs.appending(path: pack.id).path) else { continue }
                guard try markNotInstalled(pack, database: database, directory: directory, clock: clock) else { continue }
                report.packsMarkedNotInstalled.append(pack.id)
            }
            return report
        }
        let recorded: [String: [RecordedEntry]]
        // Packs with a recorded entry that breaks the limits (a name that is not a clean relative
        // path, a size out of range): their records cannot vouch for them, so they are not complete.
        var untrusted = Set<String>()
        do {
            recorded = try database.read { db in
                var result: [String: [RecordedEntry]] = [:]
                let rows = try db.fetchCursor(sql: """
                    SELECT e.packID, e.name, e.size FROM packEntry e JOIN pack p ON p.id = e.packID WHERE p.isInstalled
                    """)
                while let row = try rows.next() {
                    guard let id = try? StoreRow.packID(row, "packID") else { continue }
                    guard let name = try? StoreRow.entryName(row, "name"), let size = try? StoreRow.bytes(row, "size") else {
                        untrusted.insert(id)
                        continue
                    }
                    result[id, default: []].append(RecordedEntry(name: name, size: size))
                }
                return result
            }
        } catch {
            throw StoreFailure.database("be read for repair", error, directory: directory)
        }
        // Packs installed before the store recorded entries are checked against their manifest once,
        // and their entries recorded then.
        var manifests = ManifestCache(database: database, folder: manifestsURL(in: directory))
        var backfill: [(id: String, entries: [PackEntryExpectation])] = []
        for pack in installed.values.sorted(by: { $0.number < $1.number }) {
            let folder = packs.appending(path: pack.id)
            let entries: [RecordedEntry]?
            if let known = recorded[pack.id] {
                entries = known
            } else if let expected = manifests.entries(ofPack: pack.id) {
                entries = expected.map { RecordedEntry(name: $0.name, size: $0.size) }
                backfill.append((pack.id, expected))
            } else {
                entries = nil
            }
            // A complete pack needs nothing, so only an incomplete one is locked, then checked again:
            // another process may be installing or removing it right now.
            let trusted = !untrusted.contains(pack.id)
            guard !trusted || !isComplete(folder, entries: entries) else { continue }
            guard canWrite, let held = try lock(pack.id) else { continue }
            defer { held.unlock() }
            guard !trusted || !isComplete(folder, entries: entries) else { continue }
            backfill.removeAll { $0.id == pack.id }
            // The row, read again under the lock, decides: a purge in another process may have
            // removed the pack since `installed` was read, and that is no damage to report.
            guard try isInstalled(pack.id, database: database, directory: directory) else { continue }
            removeTree(folder)
            guard try markNotInstalled(pack, database: database, directory: directory, clock: clock) else { continue }
            report.packsMarkedNotInstalled.append(pack.id)
        }
        if !backfill.isEmpty, canWrite {
            do {
                try database.write { db in
                    for pack in backfill { try StoreSchema.recordEntries(pack.entries, ofPack: pack.id, db) }
                }
            } catch {
                throw StoreFailure.database("record the entries of installed packs", error, directory: directory)
            }
        }
        return report
    }

    /// Deletes the pack rows that break the store's limits (a value out of range or of another
    /// type, an id that is not a pack id, a second row of one id): written outside the runtime, they
    /// cannot say what is installed. The folder of such a pack then has no row, and is deleted as
    /// any uncommitted folder is; the next fetch installs the pack again.
    ///
    /// - Returns: each deleted row, described.
    static func resetDamagedRows(database: SQLitePool, locks: URL, clock: () -> Double) throws(ResourceError) -> [String] {
        let damaged: [DamagedRow]
        do {
            damaged = try database.read { db in try packRows(db).damaged }
        } catch {
            throw StoreFailure.database("be read for repair", error)
        }
        var removed: [String] = []
        for row in damaged {
            // A valid id's row is changed only under its pack lock, as an install changes it.
            let held = try row.id.flatMap { id throws(ResourceError) in
                HexDigest.isSHA256(id) ? try FileLock.tryLock(locks.appending(path: "\(id).lock").path) : nil
            }
            defer { held?.unlock() }
            if let id = row.id, HexDigest.isSHA256(id), held == nil { continue }
            let now = clock()
            do {
                try database.write { db in
                    // Every row of the id goes: the good one of a duplicate pair cannot be told apart.
                    if let id = row.id {
                        try db.execute(sql: "DELETE FROM pack WHERE id = ?", arguments: [id])
                        try db.execute(sql: "DELETE FROM packEntry WHERE packID = ?", arguments: [id])
                    } else {
                        try db.execute(sql: "DELETE FROM pack WHERE typeof(id) != 'text'")
                    }
                    if let id = row.id, HexDigest.isSHA256(id) {
                        try log(db, StoreEvent(time: now, kind: .repair, packID: id, bytes: 0, reason: "damaged database row: \(row.problem)"))
                    }
                }
            } catch {
                throw StoreFailure.database("remove a damaged row", error)
            }
            removed.append(row.storeProblem.description)
        }
        return removed
    }

    /// Puts right what ``verify()`` finds, so that the next fetch installs the damaged packs again:
    /// the way back to a good store after a file was changed in place, a pack folder was damaged
    /// or the database was changed outside the runtime (`odr verify --repair`).
    ///
    /// - Installed packs with a problem are removed (as a purge removes them, with a `repair`
    ///   event): their rows say not installed, their folders go. A pack a request in any process
    ///   holds is left alone (``verify()`` still reports it).
    /// - Folders in `packs/` without an installed row are deleted.
    /// - Pack rows that break the store's limits are deleted, and trust records of catalogs that
    ///   do (the next check of such a catalog starts from the app's keys again).
    ///
    /// - Returns: what was done; ``StoreRepairReport/packsMarkedNotInstalled`` names the packs to fetch again.
    /// - Throws: ``ResourceError`` `storage-failure` when the store cannot be read or changed.
    public func repairDamage() async throws(ResourceError) -> StoreRepairReport {
        var report = StoreRepairReport()
        report.removedDamagedRows = try Self.resetDamagedRows(database: database, locks: Self.locksURL(in: directory), clock: clock)
        let forgotten: [String] = try write("forget damaged trust records") { db in
            var forgotten: [String] = []
            for damaged in try Self.damagedTrustRecords(db) {
                try db.execute(sql: "DELETE FROM catalogTrust WHERE rowid = ?", arguments: [damaged.rowNumber])
                forgotten.append("trust record of catalog '\(damaged.catalogID)' (damaged)")
            }
            return forgotten
        }
        report.removedDamagedRows += forgotten
        let installed = try installedPackIDs()
        for id in Set(try verify().map(\.packID)).sorted() {
            if installed.contains(id) {
                if try await removeInstalledPack(id: id, event: .repair, reason: "damaged files (verify --repair)") != nil {
                    report.packsMarkedNotInstalled.append(id)
                }
                continue
            }
            // A folder in packs/ without an installed row: the problem's id is its name, one
            // component of a folder listing (never a path of its own).
            guard !id.isEmpty, !id.contains("/"), id != ".", id != "..",
                  FileManager.default.fileExists(atPath: packsURL.appending(path: id).path) else { continue }
            if HexDigest.isSHA256(id) {
                guard let held = try FileLock.tryLock(lockPath(for: id)) else { continue }
                defer { held.unlock() }
                guard try pack(id: id)?.isInstalled != true else { continue }
                Self.removeTree(packsURL.appending(path: id))
            } else {
                Self.removeTree(packsURL.appending(path: id))
            }
            report.removedPackFolders.append(id)
        }
        return report
    }

    /// The `catalogTrust` rows that are damaged (``catalogTrust(from:)`` refuses them): every check
    /// of their catalog fails with `storage-failure` until `odr verify --repair` forgets them, so
    /// ``verify()`` reports them.
    static func damagedTrustRecords(_ db: SQLiteDatabase) throws -> [(rowNumber: Int64, catalogID: String, problem: String)] {
        try db.fetchAll(sql: "SELECT rowid AS rowNumber, catalogID, highestSerial, keySetJSON FROM catalogTrust").compactMap {
            row throws -> (rowNumber: Int64, catalogID: String, problem: String)? in
            do throws(DamagedRow) {
                _ = try catalogTrust(from: row)
                return nil
            } catch {
                return (try row.value("rowNumber").integer() ?? 0, (try? StoreRow.text(row, "catalogID")) ?? "?", error.problem)
            }
        }
    }

    /// Whether a stored catalog version lists pack `id` and the store does not hold it installed.
    private static func stillWanted(_ id: String, database: SQLitePool) -> Bool {
        (try? database.read { db in
            let listed = try db.fetchOne(sql: "SELECT EXISTS (SELECT 1 FROM packVersion WHERE packID = ?)", arguments: [id])?.value(at: 0).bool() ?? false
            let installed = try db.fetchOne(sql: "SELECT isInstalled FROM pack WHERE id = ?", arguments: [id])?.value(at: 0).bool() ?? false
            return listed && !installed
        }) ?? true
    }

    /// Called (tests only) with the store directory right after repair read which packs are
    /// installed, before it looks at their folders: the moment another process's purge may finish.
    static let repairDidReadInstalledRowsHook = Locked<(@Sendable (URL) -> Void)?>(nil)

    /// Whether pack `id`'s row says installed now (read again, under the pack's lock).
    private static func isInstalled(_ id: String, database: SQLitePool, directory: URL) throws(ResourceError) -> Bool {
        do {
            return try database.read { db in
                try db.fetchOne(sql: "SELECT 1 FROM pack WHERE id = ? AND isInstalled", arguments: [id]) != nil
            }
        } catch {
            throw StoreFailure.database("be read for repair", error, directory: directory)
        }
    }

    /// Marks `pack` not installed and logs a `repair` event, in one transaction, if its row still
    /// says installed; call with the pack's lock held. Repair lists packs before it locks them, so a
    /// purge in another process may have marked the pack not installed meanwhile: then nothing is
    /// written or logged, since nothing was damaged.
    ///
    /// - Returns: whether the row was changed.
    private static func markNotInstalled(_ pack: InstalledPack, database: SQLitePool, directory: URL, clock: () -> Double) throws(ResourceError) -> Bool {
        let now = clock()
        do {
            return try database.write { db in
                try db.execute(sql: "UPDATE pack SET isInstalled = 0 WHERE id = ? AND isInstalled", arguments: [pack.id])
                guard db.changesCount > 0 else { return false }
                try log(db, StoreEvent(time: now, kind: .repair, packID: pack.id, bytes: pack.installedBytes,
                                       reason: "files missing or incomplete"))
                return true
            }
        } catch {
            throw StoreFailure.database("record a repair", error, directory: directory)
        }
    }

    /// An entry an installed pack must hold: its name in the pack folder and its size.
    private struct RecordedEntry {
        var name: String
        var size: Int64
    }

    /// Whether `folder` holds every entry with its size; cheap (no hashing): `odr verify` hashes.
    private static func isComplete(_ folder: URL, entries: [RecordedEntry]?) -> Bool {
        // Entries are looked up relative to the open folder, so the kernel does not walk the store's
        // path again for each of them (a third of the time of opening a store with 1,000 packs).
        let folderDescriptor = open(folder.path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC)
        guard folderDescriptor >= 0 else { return false }
        defer { close(folderDescriptor) }
        var info = stat()
        for entry in entries ?? [] {
            // Entry names are clean relative paths (the manifest was validated).
            guard fstatat(folderDescriptor, entry.name, &info, AT_SYMLINK_NOFOLLOW) == 0, info.st_mode & S_IFMT == S_IFREG,
                  Int64(info.st_size) == entry.size else { return false }
        }
        return true
    }
}

/// Decoded, indexed manifests by (catalog, version), so repair and verification decode each one once.
extension ResourceStore {
    /// Removes files of the compact-manifest folder that no stored manifest names: left by a
    /// transaction that failed after its file was written, or by an interrupted write. Another
    /// process may be between writing a file and committing its name; removing that file only
    /// costs its next read a decode of the JSON, which writes it again.
    static func removeUnnamedManifestFiles(in folder: URL, database: SQLitePool) -> [String] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path), !names.isEmpty,
              let named = try? database.read({ db in
                  Set(try db.fetchAll(sql: "SELECT jsonSHA256 FROM manifestFile").compactMap { row throws(SQLiteError) in try row.value(at: 0).text() })
              })
        else { return [] }
        var removed: [String] = []
        // `meta/` is the cache of split metadata, cleaned by `removeUnreferencedMetadataFiles`.
        for name in names.sorted() where name != SplitMetadata.folder && !(name.hasSuffix(".odrm") && named.contains(String(name.dropLast(5)))) {
            removeTree(folder.appending(path: name))
            removed.append(name)
        }
        return removed
    }
}

struct ManifestCache {
    let database: SQLitePool
    /// The store's folder of compact manifests.
    let folder: URL
    private var decoded: [String: ManifestIndex] = [:]
    /// When each stored manifest was fetched, by "catalogURL#version"; read once.
    private var fetchedAt: [String: Double]?

    init(database: SQLitePool, folder: URL) {
        self.database = database
        self.folder = folder
    }

    /// The newest stored manifest that lists pack `id`, if any, indexed.
    mutating func manifest(containingPack id: String) -> ManifestIndex? {
        // Choose the version from small rows, and read a manifest's (large) JSON once per version.
        // `fetchedAt` sits after the JSON in its row, so SQLite walks the JSON's overflow pages to
        // read it: read it once per manifest, not once per pack.
        if fetchedAt == nil {
            fetchedAt = (try? database.read { db in
                var times: [String: Double] = [:]
                for row in try db.fetchAll(sql: "SELECT catalogURL, version, fetchedAt FROM manifest") {
                    // A damaged row is not a manifest to read.
                    guard let url = try? StoreRow.text(row, "catalogURL"), let time = try? StoreRow.number(row, "fetchedAt"),
                          let version = try? StoreRow.integer(row, "version", in: 1...StoreRow.maximumCount) else { continue }
                    times[Self.key(url, Int(version))] = time
                }
                return times
            }) ?? [:]
        }
        let candidates = (try? database.read { db in
            try db.fetchAll(sql: "SELECT catalogURL, version FROM packVersion WHERE packID = ?", arguments: [id])
                .compactMap { row -> (catalogURL: String, version: Int)? in
                    guard let url = try? StoreRow.text(row, "catalogURL"),
                          let version = try? StoreRow.integer(row, "version", in: 1...StoreRow.maximumCount) else { return nil }
                    return (url, Int(version))
                }
        }) ?? []
        let newest = candidates
            .compactMap { candidate in fetchedAt?[Self.key(candidate.catalogURL, candidate.version)].map { (candidate, $0) } }
            .max { ($0.1, $0.0.version) < ($1.1, $1.0.version) }?.0
        guard let newest else { return nil }
        let catalogURL = newest.catalogURL, version = newest.version
        let key = Self.key(catalogURL, version)
        if let index = decoded[key] { return index }
        guard let manifest = (try? ResourceStore.storedManifest(in: database, manifests: folder, catalogKey: catalogURL, version: version)) ?? nil else {
            return nil
        }
        let index = manifest.makeIndex()
        decoded[key] = index
        return index
    }

    private static func key(_ catalogURL: String, _ version: Int) -> String { "\(catalogURL)#\(version)" }

    /// The entries of pack `id` as the newest manifest listing it says.
    mutating func entries(ofPack id: String) -> [PackEntryExpectation]? {
        manifest(containingPack: id)?.expectedEntries(inPack: id)
    }
}
