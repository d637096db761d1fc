#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import GRDB
import ODRFormat

extension ResourceStore {
    /// Brings the directory back in line with the database after a crash (ARCHITECTURE.md rule 5).
    ///
    /// - Partial downloads in `staging/` that can be resumed (`<id>.zip` with its `.resume` file) stay.
    /// - Every other `staging/` item is deleted.
    /// - Folders in `packs/` without an installed row are deleted: a crash hit between rename and commit.
    /// - Installed rows whose folder is missing, or lacks an entry or has one of the wrong size, are
    ///   marked not installed (and the remains deleted), with a `repair` event.
    ///
    /// Anything whose pack lock another process holds is in use by that process and left alone.
    static func repair(directory: URL, database: DatabasePool, clock: () -> Double) throws(ResourceError) -> StoreRepairReport {
        let storeLock = try FileLock.lockBlocking(locksURL(in: directory).appending(path: "store.lock").path)
        defer { storeLock.unlock() }
        var report = StoreRepairReport()
        let fileManager = FileManager.default
        let staging = stagingURL(in: directory), packs = packsURL(in: directory)
        func lock(_ id: String) throws(ResourceError) -> FileLock? {
            try FileLock.tryLock(locksURL(in: directory).appending(path: "\(id).lock").path)
        }

        let stagingItems = ((try? fileManager.contentsOfDirectory(atPath: staging.path)) ?? []).sorted()
        let itemNames = Set(stagingItems)
        for name in stagingItems {
            let id = String(name.prefix(while: { $0 != "." }))
            guard let held = try lock(id) else { continue }
            defer { held.unlock() }
            let resumable = name == "\(id).zip" && itemNames.contains("\(id).zip.resume")
                || name == "\(id).zip.resume" && itemNames.contains("\(id).zip")
            if resumable {
                if name.hasSuffix(".zip") { report.keptPartialDownloads.append(id) }
                continue
            }
            removeTree(staging.appending(path: name))
            report.removedStagingItems.append(name)
        }

        let installed: [String: InstalledPack]
        do {
            installed = try database.read { db in
                Dictionary(uniqueKeysWithValues: try Row.fetchAll(db, sql: "SELECT * FROM pack WHERE isInstalled")
                    .map(pack(from:)).map { ($0.id, $0) })
            }
        } catch {
            throw StoreFailure.database("be read for repair", error)
        }
        for name in ((try? fileManager.contentsOfDirectory(atPath: packs.path)) ?? []).sorted() where installed[name] == nil {
            guard let held = try lock(name) else { continue }
            defer { held.unlock() }
            // Re-read under the lock: another process may have committed it meanwhile.
            let committed = (try? database.read { db in
                try Bool.fetchOne(db, sql: "SELECT isInstalled FROM pack WHERE id = ?", arguments: [name])
            }) ?? nil
            if committed == true { continue }
            removeTree(packs.appending(path: name))
            report.removedPackFolders.append(name)
        }

        var manifests = ManifestCache(database: database)
        for pack in installed.values.sorted(by: { $0.number < $1.number }) {
            guard let held = try lock(pack.id) else { continue }
            defer { held.unlock() }
            let folder = packs.appending(path: pack.id)
            let entries = manifests.entries(ofPack: pack.id)
            guard !isComplete(folder, entries: entries) else { continue }
            removeTree(folder)
            let now = clock()
            do {
                try database.write { db in
                    try db.execute(sql: "UPDATE pack SET isInstalled = 0 WHERE id = ?", arguments: [pack.id])
                    try log(db, StoreEvent(time: now, kind: .repair, packID: pack.id, bytes: pack.installedBytes,
                                           reason: "files missing or incomplete"))
                }
            } catch {
                throw StoreFailure.database("record a repair", error)
            }
            report.packsMarkedNotInstalled.append(pack.id)
        }
        return report
    }

    /// Whether `folder` holds every entry with its size; cheap (no hashing): `odr verify` hashes.
    private static func isComplete(_ folder: URL, entries: [PackEntryExpectation]?) -> Bool {
        var info = stat()
        guard lstat(folder.path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return false }
        for entry in entries ?? [] {
            guard lstat(folder.appending(path: entry.name).path, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
                  Int64(info.st_size) == entry.size else { return false }
        }
        return true
    }
}

/// Decoded, indexed manifests by (catalog, version), so repair and verification decode each one once.
struct ManifestCache {
    let database: DatabasePool
    private var decoded: [String: ManifestIndex] = [:]

    init(database: DatabasePool) { self.database = database }

    /// The newest stored manifest that lists pack `id`, if any, indexed.
    mutating func manifest(containingPack id: String) -> ManifestIndex? {
        // Find the version first and read its (large) JSON only once per version.
        let row = try? database.read { db in
            try Row.fetchOne(db, sql: """
                SELECT m.catalogURL, m.version FROM packVersion pv
                JOIN manifest m ON m.catalogURL = pv.catalogURL AND m.version = pv.version
                WHERE pv.packID = ? ORDER BY m.fetchedAt DESC, m.version DESC LIMIT 1
                """, arguments: [id])
        }
        guard let row else { return nil }
        let catalogURL: String = row["catalogURL"], version: Int = row["version"]
        let key = "\(catalogURL)#\(version)"
        if let index = decoded[key] { return index }
        let json = try? database.read { db in
            try Data.fetchOne(db, sql: "SELECT json FROM manifest WHERE catalogURL = ? AND version = ?", arguments: [catalogURL, version])
        }
        guard let json = json ?? nil, let manifest = try? VersionManifest.decode(from: json) else { return nil }
        let index = manifest.makeIndex()
        decoded[key] = index
        return index
    }

    /// The entries of pack `id` as the newest manifest listing it says.
    mutating func entries(ofPack id: String) -> [PackEntryExpectation]? {
        manifest(containingPack: id)?.expectedEntries(inPack: id)
    }
}
