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

/// Where installed packs live on disk, and the database that remembers them across restarts.
///
/// A store is a directory:
///
/// ```
/// store/
///   store.sqlite (+ -wal, -shm)   catalogs followed, manifests, packs, priorities, event log
///   packs/<id>/...                installed files, read-only; a folder here with a row is complete
///   staging/                      downloads and unpacking in progress
///   locks/                        advisory lock files (flock): <id>.lock while a pack is being
///                                 changed, <id>.lease while a request in any process uses it
/// ```
///
/// Opening a store migrates its database and repairs what a crash left behind (see
/// ``repairReport``), under `locks/store.lock`, so processes creating one store at once each
/// migrate it once. Several `ResourceStore` values, in one process or several, may share a
/// directory: SQLite's locking serializes the database, and a per-pack file lock serializes the
/// installation and removal of each pack. On a full disk the store still opens for reading (see
/// ``init(directory:synchronousWrites:clock:)``).
///
/// ```swift
/// let store = try ResourceStore(directory: appSupport.appending(path: "odr"))
/// for pack in try store.packs() where pack.isInstalled { print(pack.id, pack.installedBytes) }
/// ```
public final class ResourceStore: Sendable {
    /// The store's directory.
    public let directory: URL
    /// What opening the store repaired.
    public let repairReport: StoreRepairReport
    /// Whether installed files are flushed to stable storage before they are recorded, so a power
    /// loss cannot leave a recorded pack with missing bytes. On by default.
    public let synchronousWrites: Bool
    let database: SQLitePool
    /// Why the database was opened read-only, if it was (see ``init(directory:synchronousWrites:clock:)``).
    let readOnly: ReadOnlyCause?
    /// Whether the database was opened read-only.
    var isReadOnly: Bool { readOnly != nil }

    /// Why a store's database was opened read-only.
    enum ReadOnlyCause: Equatable, Sendable {
        /// The disk was too full for SQLite to open it for writing.
        case diskFull
        /// This process may not write the database file, its `-wal` or `-shm` file, or its folder.
        case notWritable
    }
    let clock: @Sendable () -> Double
    /// Held while the store is open; tells the next opener whether everyone closed it cleanly.
    private let session: StoreSession
    /// The packs requests of this process hold, leased so that no process purges them.
    let leases: PackLeases
    /// `packs/` as a path ending in `/` (see ``packFolderExists(id:)``).
    private let packsPathPrefix: String

    /// The database file's name inside the store directory.
    public static let databaseName = "store.sqlite"

    /// Opens (creating if needed) the store in `directory`, migrates it and repairs it.
    ///
    /// - Parameters:
    ///   - synchronousWrites: see ``synchronousWrites``.
    ///   - clock: seconds since 1970; tests inject their own.
    /// Opening writes nothing to a database whose migrations all ran. When the disk is too full for
    /// SQLite to open the database for writing, it is opened read-only: reads work, and every write
    /// (an install, a purge, a use time) fails with `out-of-space`. So it is when the database file
    /// or the store folder is read-only for this process (`locks/` must stay writable): installed
    /// packs can be used, and every write fails with `storage-failure` naming the read-only file.
    ///
    /// - Throws: ``ResourceError`` with `storage-failure` (or `out-of-space`) when the directory or
    ///   the database cannot be created or read.
    public init(
        directory: URL,
        synchronousWrites: Bool = true,
        clock: @escaping @Sendable () -> Double = { Date().timeIntervalSince1970 }
    ) throws(ResourceError) {
        self.directory = directory.standardizedFileURL
        self.synchronousWrites = synchronousWrites
        self.clock = clock
        try Self.createFolder(self.directory)
        // The store's own folders are never links: one planted in their place is replaced.
        for folder in [Self.packsURL(in: self.directory), Self.stagingURL(in: self.directory),
                       Self.locksURL(in: self.directory), Self.manifestsURL(in: self.directory)] {
            try StoreFiles.makeFolder(folder.path)
        }
        leases = PackLeases.shared(locks: Self.locksURL(in: self.directory))
        let packsPath = Self.packsURL(in: self.directory).path
        packsPathPrefix = packsPath.hasSuffix("/") ? packsPath : packsPath + "/"
        // Creating the database and migrating it happen under the store lock, so processes opening
        // a new store at once migrate it once: the first runs every migration, the others find
        // them all recorded (the migrator also checks each one again inside its transaction).
        let storeLock = try FileLock.lockBlocking(Self.storeLockPath(in: Self.locksURL(in: self.directory)))
        defer { storeLock.unlock() }
        (database, readOnly) = try Self.openDatabase(at: self.directory)
        session = try StoreSession(locks: Self.locksURL(in: self.directory), writesMarker: synchronousWrites && readOnly == nil)
        repairReport = try Self.repair(directory: self.directory, database: database, clock: clock,
                                       checkEveryEntry: !session.openedAfterCleanClose, canWrite: readOnly == nil)
    }

    /// Creates `folder` (and its parents) unless it exists; another process creating it at the
    /// same moment is not an error.
    private static func createFolder(_ folder: URL) throws(ResourceError) {
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        } catch {
            if isFolder(folder.path) { return }
            // The system call again, for its errno: a full disk is `out-of-space`.
            if mkdir(folder.path, 0o755) != 0, errno == ENOSPC || errno == EDQUOT { throw StoreFailure.posix("create '\(folder.path)'") }
            throw ResourceError(.storageFailure, "Could not create the store directory '\(folder.path)'. Check its permissions.",
                                cause: StoreFailure(description: "\(error)"))
        }
    }

    /// Opens the database and migrates it; call with the store lock held.
    ///
    /// A store whose migrations all ran is only read here, so opening writes nothing to the
    /// database. When the file system is full (SQLite cannot even set up its 32 KiB shared-memory
    /// index), the database file is opened read-only and immutable instead: reading commands
    /// (`status`, `path`, `verify`, `log`) still work, and writes fail with `out-of-space`. When the
    /// database or its folder is not writable, it is opened read-only (immutable only if SQLite
    /// cannot read it otherwise), and writes fail with `storage-failure`.
    ///
    /// - Returns: the pool, and why it is read-only, if it is.
    private static func openDatabase(at directory: URL) throws(ResourceError) -> (SQLitePool, ReadOnlyCause?) {
        let path = directory.appending(path: databaseName).path
        // SQLite follows links to the database, its journal and WAL: one planted there would have
        // the store write outside itself. (`SQLITE_OPEN_NOFOLLOW` is no help: it refuses a store
        // anywhere below a linked folder, such as a home directory that is a link.)
        for suffix in ["", "-wal", "-shm", "-journal"] { StoreFiles.removeLink(path + suffix) }
        do {
            let database = try SQLitePool(path: path)
            // Asked on the writer connection, which migrates: a reader connection that had read the
            // schema before a migration kept reading rows without the columns it added (a store from
            // before `v6` lost every pack row, read as having no `useCount`).
            if try !database.writeWithoutTransaction({ db in try StoreSchema.migrator.hasCompletedMigrations(db) }) {
                try StoreSchema.migrator.migrate(database)
            }
            return (database, nil)
        } catch {
            let failure = StoreFailure.database("be opened at '\(directory.path)'", error, directory: directory)
            guard FileManager.default.fileExists(atPath: path) else { throw failure }
            func openReadOnly(_ path: String) throws -> SQLitePool? {
                let database = try SQLitePool(path: path, readOnly: true)
                return try database.read({ db in try StoreSchema.migrator.hasCompletedMigrations(db) }) ? database : nil
            }
            // `immutable=1`: read-only and without locks or the shared-memory index, which is what
            // needs the space (or a writable folder). Sound while the disk is full, since then no
            // process can commit; for a read-only file, only a fallback when SQLite cannot read it
            // with locks (a read-only `-shm`).
            let encoded = SQLitePool.uriPath(path)
            if failure.code == .outOfSpace {
                guard let database = try? openReadOnly("file:\(encoded)?immutable=1") else { throw failure }
                return (database, .diskFull)
            }
            guard !StoreFailure.isWritable(directory) else { throw failure }
            guard let database = (try? openReadOnly(path)) ?? (try? openReadOnly("file:\(encoded)?immutable=1")) else { throw failure }
            return (database, .notWritable)
        }
    }

    // MARK: - Layout

    /// The folder that holds an installed pack's files.
    ///
    /// Only for a pack id (64 lowercase hex digits, as a validated manifest or ``packs()`` gives):
    /// the store itself builds every path it creates or removes with the checked ``packFolder(id:)``.
    public func packURL(id: String) -> URL { Self.packsURL(in: directory).appending(path: id, directoryHint: .isDirectory) }

    /// ``packURL(id:)``, refusing anything that is not a pack id, so that no name read from the
    /// database, a journal or a folder listing ever becomes a path outside `packs/`.
    ///
    /// - Throws: ``ResourceError`` `invalid-argument`.
    func packFolder(id: String) throws(ResourceError) -> URL { packURL(id: try Self.checkedPackID(id)) }

    /// `id` when it is a pack id (64 lowercase hex digits).
    ///
    /// - Throws: ``ResourceError`` `invalid-argument` otherwise; nothing is created or changed.
    static func checkedPackID(_ id: String) throws(ResourceError) -> String {
        guard HexDigest.isSHA256(id) else {
            throw ResourceError(.invalidArgument, "'\(id.prefix(80))' is not a pack id (64 lowercase hex digits); nothing was changed. If it came from the store's database, the database was changed outside the runtime: run `odr verify --repair`.")
        }
        return id
    }
    var packsURL: URL { Self.packsURL(in: directory) }

    /// Whether pack `id`'s folder exists. One `stat` of a path built from a string: this runs on
    /// every begin that takes a new lease, where building a `URL` cost more than the lease.
    func packFolderExists(id: String) -> Bool {
        var info = stat()
        return stat(packsPathPrefix + id, &info) == 0
    }
    var stagingURL: URL { Self.stagingURL(in: directory) }
    var manifestsURL: URL { Self.manifestsURL(in: directory) }
    /// The lock file of pack `id` (checked, see ``packFolder(id:)``).
    func lockPath(for id: String) throws(ResourceError) -> String {
        Self.locksURL(in: directory).appending(path: "\(try Self.checkedPackID(id)).lock").path
    }

    /// Whether `path` is a folder (or a link to one).
    static func isFolder(_ path: String) -> Bool {
        var info = stat()
        return stat(path, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR
    }

    static func packsURL(in directory: URL) -> URL { directory.appending(path: "packs", directoryHint: .isDirectory) }
    static func stagingURL(in directory: URL) -> URL { directory.appending(path: "staging", directoryHint: .isDirectory) }
    static func locksURL(in directory: URL) -> URL { directory.appending(path: "locks", directoryHint: .isDirectory) }
    /// Compact copies of stored manifests, `<SHA-256 of the JSON>.odrm`, memory-mapped when read.
    static func manifestsURL(in directory: URL) -> URL { directory.appending(path: "manifests", directoryHint: .isDirectory) }
    /// The lock that serializes opening (repair) and closing a store across processes.
    static func storeLockPath(in locks: URL) -> String { locks.appending(path: "store.lock").path }

    // MARK: - Database access

    func read<T>(_ operation: String, _ body: (SQLiteDatabase) throws -> T) throws(ResourceError) -> T {
        do { return try database.read(body) } catch { throw StoreFailure.database(operation, error, directory: directory) }
    }

    func write<T>(_ operation: String, _ body: (SQLiteDatabase) throws -> T) throws(ResourceError) -> T {
        try requireWritable(operation)
        do { return try database.write(body) } catch { throw StoreFailure.database(operation, error, directory: directory) }
    }

    /// Throws `out-of-space` when the store was opened read-only on a full disk, `storage-failure`
    /// naming the read-only file when it was opened read-only for want of permission.
    private func requireWritable(_ operation: String) throws(ResourceError) {
        switch readOnly {
        case nil: return
        case .diskFull:
            throw ResourceError(.outOfSpace, "The store's database could not \(operation): its disk was full when the store was opened, so the store is open read-only. Free some space on that disk, then try again.")
        case .notWritable:
            throw ResourceError(.storageFailure, "The store's database could not \(operation): \(StoreFailure.DatabaseTrouble.readOnly(path: directory.appending(path: Self.databaseName).path).explanation).")
        }
    }

    // MARK: - Packs

    /// Every pack the store has a row for, installed or not, ordered by row number.
    ///
    /// A row that breaks the store's limits (written outside the runtime) is left out: its pack
    /// counts as not installed, ``verify()`` reports it and repair resets it.
    public func packs() throws(ResourceError) -> [InstalledPack] {
        try read("list packs") { db in try Self.packRows(db).packs }
    }

    /// The row of pack `id`, if the store has one it can trust (see ``packs()``).
    public func pack(id: String) throws(ResourceError) -> InstalledPack? {
        try read("read a pack") { db in
            try db.fetchAll(sql: "SELECT * FROM pack WHERE id = ? ORDER BY number", arguments: [id]).first.flatMap { try? Self.pack(from: $0) }
        }
    }

    /// The ids of the installed packs (of rows it can trust, see ``packs()``).
    public func installedPackIDs() throws(ResourceError) -> Set<String> {
        try read("list packs") { db in Set(try Self.packRows(db, installedOnly: true).packs.map(\.id)) }
    }

    /// Every pack row, the damaged ones apart: a row with a value outside its limits, or a second
    /// row of one id (the schema forbids it, but a database changed outside the runtime may not).
    static func packRows(_ db: SQLiteDatabase, installedOnly: Bool = false) throws -> (packs: [InstalledPack], damaged: [DamagedRow]) {
        var packs: [InstalledPack] = [], damaged: [DamagedRow] = [], seen = Set<String>()
        let rows = try db.fetchCursor(sql: "SELECT * FROM pack \(installedOnly ? "WHERE isInstalled " : "")ORDER BY number")
        while let row = try rows.next() {
            do throws(DamagedRow) {
                let pack = try pack(from: row)
                guard seen.insert(pack.id).inserted else { throw DamagedRow(id: pack.id, problem: "a second row of this pack") }
                packs.append(pack)
            } catch {
                damaged.append(error)
            }
        }
        return (packs, damaged)
    }

    /// Records that requests used these packs now (their last-use time and use count order
    /// purging).
    ///
    /// - Parameters:
    ///   - ids: the packs requests began or ended using; their last use becomes now.
    ///   - beginnings: per pack, how many requests began using it since the last call; added to
    ///     its ``InstalledPack/useCount``. Packs not named here (requests that ended) keep their count.
    public func markUsed(_ ids: some Collection<String>, beginnings: [String: Int] = [:]) throws(ResourceError) {
        let now = clock()
        try write("record a use") { db in
            // Capped, so a count read from a damaged row cannot overflow into a REAL.
            let update = try db.cachedStatement(sql: "UPDATE pack SET lastUsedAt = ?, useCount = MIN(useCount + ?, \(StoreRow.maximumCount)) WHERE id = ?")
            for id in Set(ids).union(beginnings.keys) {
                try update.execute(arguments: [now, beginnings[id] ?? 0, id])
            }
        }
    }

    /// Records a verified pack that was just moved into `packs/`, with the entries it was verified
    /// against (what opening the store checks are still there).
    func recordInstall(_ pack: PackRecord, entries: [PackEntryExpectation], chunks: [String: [FileChunk]] = [:], reason: String) throws(ResourceError) {
        let now = clock()
        // Its lease file exists from now on, so a purge that finds it missing knows it was deleted.
        leases.touch(pack.id)
        try write("record an installed pack") { db in
            try db.execute(sql: """
                INSERT INTO pack (id, archiveBytes, installedBytes, installedAt, lastUsedAt, isInstalled, useCount)
                VALUES (?, ?, ?, ?, ?, 1, 0)
                ON CONFLICT(id) DO UPDATE SET archiveBytes = excluded.archiveBytes,
                    installedBytes = excluded.installedBytes, installedAt = excluded.installedAt,
                    lastUsedAt = excluded.lastUsedAt, isInstalled = 1,
                    useCount = CASE WHEN typeof(useCount) = 'integer' AND useCount BETWEEN 0 AND \(StoreRow.maximumCount)
                                    THEN useCount ELSE 0 END
                """, arguments: [pack.id, pack.archiveBytes, pack.installedBytes, now, now])
            try StoreSchema.recordEntries(entries, ofPack: pack.id, db)
            try StoreSchema.recordChunks(chunks, ofPack: pack.id, db)
            try StoreSchema.updateSupersededFlags(db)
            try Self.log(db, StoreEvent(time: now, kind: .install, packID: pack.id, bytes: pack.installedBytes, reason: reason))
        }
    }

    /// Deletes an installed pack's files and records why, unless a request in some process uses it.
    ///
    /// A pack whose lease (see ``isPackInUse(id:)``) any process holds, this one included, is left
    /// alone: the call returns `false` at once instead of waiting. The row is marked not installed
    /// (with the event) first; then the folder leaves `packs/` by an atomic rename into `staging/`,
    /// so a crash midway leaves either the whole folder, without a row (deleted when the store next
    /// opens), or none of it.
    ///
    /// - Returns: `true` when the pack was deleted; `false` when it was not installed or is in use.
    /// - Throws: `invalid-argument` when `id` is not a pack id (nothing is touched).
    @discardableResult
    public func removePack(id: String, reason: PurgeReason) async throws(ResourceError) -> Bool {
        try await removeInstalledPack(id: id, event: .purge, reason: reason.rawValue) != nil
    }

    /// ``removePack(id:reason:)``, logging an event of `kind` (a purge, or a repair of a damaged pack).
    ///
    /// - Returns: the bytes the removal freed (its files no other installed pack or outside link
    ///   holds, read from their inodes just before), or `nil` when nothing was removed.
    func removeInstalledPack(id: String, event kind: StoreEvent.Kind, reason: String) async throws(ResourceError) -> Int64? {
        try requireWritable("record a purge")  // before the folder leaves packs/
        let lock = try await FileLock.lock(lockPath(for: id))
        defer { lock.unlock() }
        return try removeInstalledPackLocked(id: id, event: kind, reason: reason)
    }

    /// ``removeInstalledPack(id:event:reason:)`` for a caller that holds the pack's lock.
    func removeInstalledPackLocked(id: String, event kind: StoreEvent.Kind, reason: String) throws(ResourceError) -> Int64? {
        guard let row = try pack(id: id), row.isInstalled else { return nil }
        // Held exclusively only across the rename and the row update, so a process beginning to
        // use the pack meanwhile waits that long at most, then finds it gone and installs it again.
        leases.unlinger(id)
        // A lease file deleted outside the runtime may still be held by a process that has not yet
        // locked its path anew (see ``PackLeases``): the pack counts as in use a moment longer.
        if leases.recreateIfMissing(id) || leases.wasRecreatedRecently(id) { return nil }
        guard let lease = try FileLock.tryLock(leases.path(for: id)) else { return nil }
        defer { lease.unlockAndRemove() }
        let folder = try packFolder(id: id)
        let trash = stagingURL.appending(path: "\(id).removed-\(UUID().uuidString)")
        func moveOut() throws(ResourceError) {
            if rename(folder.path, trash.path) != 0, errno != ENOENT {
                throw StoreFailure.posix("move '\(folder.path)' out of packs/")
            }
        }
        let now = clock()
        // What leaves the disk: the files no other pack (nor anything outside) links to.
        let freed = Self.ownBytes(ofFolder: folder.path)
        func record() throws(ResourceError) {
            try write("record a purge") { db in
                try db.execute(sql: "UPDATE pack SET isInstalled = 0 WHERE id = ?", arguments: [id])
                try Self.log(db, StoreEvent(time: now, kind: kind, packID: id, bytes: freed, reason: reason))
            }
        }
        // The row first, then the folder: a process killed in between leaves a folder without an
        // installed row, which the next open deletes, and a log that tells what happened. (The
        // other way round, it left an installed row without its folder, which the next open logged
        // as a `repair` of damage that never happened.)
        do {
            try record()
        } catch where error.code == .outOfSpace {
            // A disk too full for the database to grow: deleting the files makes the room to record
            // that. Killed before the record, the row says installed without a folder: repaired at open.
            try moveOut()
            Self.removeTree(trash)
            try record()
        }
        CrashPoint.midPurge.reached()
        try moveOut()
        lease.unlockAndRemove()
        Self.removeTree(trash)
        return freed
    }

    /// Whether a request in any process on this store (this one included) holds pack `id` now,
    /// by its lease on `locks/<id>.lease`. The lease dies with its process.
    public func isPackInUse(id: String) -> Bool { leases.isLeasedAnywhere(id) }

    // MARK: - Priorities and events

    /// Sets the preservation priority (0...1) of `tag` in the catalog at `catalogURL`; it outlives restarts.
    public func setPreservationPriority(_ priority: Double, forTag tag: String, catalogURL: URL) throws(ResourceError) {
        let clamped = min(1, max(0, priority))
        try write("set a preservation priority") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO tagPriority (catalogURL, tag, priority) VALUES (?, ?, ?)",
                           arguments: [try Self.catalogKey(catalogURL, db), tag, clamped])
        }
    }

    /// The preservation priorities the app set for tags of the catalog at `catalogURL`.
    public func preservationPriorityOverrides(catalogURL: URL) throws(ResourceError) -> [String: Double] {
        try read("read preservation priorities") { db in
            var result: [String: Double] = [:]
            for row in try db.fetchAll(sql: "SELECT tag, priority FROM tagPriority WHERE catalogURL = ?",
                                        arguments: [try Self.catalogKey(catalogURL, db)]) {
                // A damaged row is left out: the manifest's priority stands.
                guard let tag = try? StoreRow.text(row, "tag"), let priority = try? StoreRow.number(row, "priority") else { continue }
                result[tag] = min(1, max(0, priority))
            }
            return result
        }
    }

    /// Logs that a download of `subject` (a pack id, `catalog.json`, a manifest's path) moved to
    /// another origin, as an ``StoreEvent/Kind/origin`` line: `odr log` then says which origin
    /// served what and why the runtime switched.
    public func logOriginSwitch(of subject: String, _ change: TransferOriginSwitch) throws(ResourceError) {
        let reason = "\(change.from.absoluteString) -> \(change.to.absoluteString): \(change.reason.rawValue)"
        try log(.origin, subject, bytes: change.keptBytes, reason: reason, doing: "log an origin switch")
    }

    /// Logs a line of `kind` about `subject` now, for a step that changes nothing else in the
    /// store (an origin switch, a hinted prefetch's start or end).
    func log(_ kind: StoreEvent.Kind, _ subject: String, bytes: Int64, reason: String, doing action: String) throws(ResourceError) {
        let now = clock()
        try write(action) { db in
            try Self.log(db, StoreEvent(time: now, kind: kind, packID: subject, bytes: max(0, bytes), reason: reason))
        }
    }

    /// The event log, oldest first; rows damaged outside the runtime are left out.
    public func events() throws(ResourceError) -> [StoreEvent] {
        try read("read the event log") { db in
            try db.fetchAll(sql: "SELECT * FROM event ORDER BY number").compactMap { row -> StoreEvent? in
                do throws(DamagedRow) {
                    return StoreEvent(time: try StoreRow.number(row, "time"), kind: StoreEvent.Kind(rawValue: try StoreRow.text(row, "kind")),
                                      packID: try StoreRow.text(row, "packID"), bytes: try StoreRow.bytes(row, "bytes"),
                                      reason: try StoreRow.text(row, "reason"))
                } catch {
                    return nil
                }
            }
        }
    }

    // MARK: - Space

    /// The bytes installed packs take (each physical file once, see ``diskAccount()``), the bytes
    /// in `staging/`, and the free space of the store's file system.
    ///
    /// Sums only rows it can trust (see ``packs()``), clamped instead of overflowing.
    public func usage() throws(ResourceError) -> StoreUsage {
        try usage(of: diskAccount())
    }

    /// ``usage()`` from an account the caller already read.
    public func usage(of account: StoreDiskAccount) throws(ResourceError) -> StoreUsage {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { throw StoreFailure.posix("read the free space of '\(directory.path)'") }
        let staging = stagedPacks().lazy.map(\.bytes).clampedSum()
        let (free, overflow) = UInt64(info.f_bavail).multipliedReportingOverflow(by: UInt64(info.f_frsize))
        return StoreUsage(installedBytes: account.installedBytes, installedPacks: account.packs.count, stagingBytes: staging,
                          freeBytes: overflow ? .max : Int64(clamping: free), sharedBytes: account.sharedBytes,
                          pinnedBytes: account.pinnedBytes)
    }

    /// The bytes installed packs take, each physical file once, and how many they are.
    func installedUsage() throws(ResourceError) -> (bytes: Int64, packs: Int) {
        let account = try diskAccount()
        return (account.installedBytes, account.packs.count)
    }

    // MARK: - Helpers

    static func log(_ db: SQLiteDatabase, _ event: StoreEvent) throws {
        try db.execute(sql: "INSERT INTO event (time, kind, packID, bytes, reason) VALUES (?, ?, ?, ?, ?)",
                       arguments: [event.time, event.kind.rawValue, event.packID, event.bytes, event.reason])
    }

    /// A pack row, every value checked against its limits (sizes 0...2^62, finite times, a pack id).
    static func pack(from row: SQLiteRow) throws(DamagedRow) -> InstalledPack {
        let id = try StoreRow.packID(row, "id")
        do throws(DamagedRow) {
            return InstalledPack(
                number: Int(try StoreRow.integer(row, "number", in: 0...StoreRow.maximumCount)), id: id,
                archiveBytes: try StoreRow.bytes(row, "archiveBytes"), installedBytes: try StoreRow.bytes(row, "installedBytes"),
                installedAt: try StoreRow.number(row, "installedAt"), lastUsedAt: try StoreRow.number(row, "lastUsedAt"),
                isInstalled: try StoreRow.flag(row, "isInstalled"), isSuperseded: try StoreRow.flag(row, "isSuperseded"),
                useCount: Int(try StoreRow.integer(row, "useCount", in: 0...StoreRow.maximumCount)))
        } catch {
            throw DamagedRow(id: id, problem: error.problem)
        }
    }

    /// Deletes a file or a folder tree; best effort (what remains is removed at the next open).
    /// Never through a symbolic link: a link (planted in place of a staging folder, say) is
    /// removed itself, since the path of a folder's URL ends with `/`, and a path ending with `/`
    /// would follow a link at its last component and empty the folder it points to.
    static func removeTree(_ url: URL) {
        var path = url.path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        if let info = StoreFiles.status(path), info.st_mode & S_IFMT != S_IFDIR {
            unlink(path)
            return
        }
        try? FileManager.default.removeItem(atPath: path)
    }
}
