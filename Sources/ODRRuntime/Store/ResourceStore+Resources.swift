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

/// Where a tag stands in a store, as Xcode's on-demand resources gauge shows it.
public enum TagState: String, Sendable, Codable, Hashable {
    /// Some of its packs are neither installed nor downloading.
    case notDownloaded = "not downloaded"
    /// Some of its packs are being downloaded (by this or another process) or wait to be resumed.
    case downloading
    /// Every pack it needs is installed.
    case downloaded
    /// Downloaded, and requests hold it: a request of a running manager holds the tag, or
    /// requests in any process hold every pack it needs (their leases say so).
    case inUse = "in use"
}

/// Where a pack stands in a store.
public enum PackState: String, Sendable, Codable, Hashable {
    /// Not installed, and nobody is downloading it.
    case notDownloaded = "not downloaded"
    /// Being downloaded (its lock is held) or a partial download waits in `staging/` to be resumed.
    case downloading
    /// Installed in `packs/`.
    case downloaded
    /// Installed, and a request in some process holds it (its lease, see ``ResourceStore/isPackInUse(id:)``).
    case inUse = "in use"
}

extension ResourceStore {
    /// The installed file of logical path `path` in `snapshot`'s version: of a path with variants,
    /// the one the snapshot's ``CatalogSnapshot/lookup`` chose for this device.
    ///
    /// The file returned is always a regular file with the content this version lists for the
    /// path: the pack must have been installed with the entry this version names (a pack id that
    /// another version lists with other contents is not installed for this one), and a path is
    /// served through its own name only when that is a link to its entry (see ``installedFile(_:)``).
    ///
    /// - Throws: ``ResourceError`` `unknown-resource` when the version does not list the path, or
    ///   lists it only in variants the device does not accept (for a split catalog, whose files are
    ///   known only for the tags the device used, `resource-not-installed` instead, since another
    ///   tag may hold it); `resource-not-installed` when its
    ///   pack is not installed, or was installed with other contents than this version lists;
    ///   `integrity` when the installed file is not there as recorded (run `odr verify --repair`).
    public func url(forResource path: String, in snapshot: CatalogSnapshot) throws(ResourceError) -> URL {
        guard let file = snapshot.lookup.file(atPath: path) else {
            let variants = snapshot.lookup.files(atPath: path).map(\.variant.variantDescription)
            guard variants.isEmpty else {
                throw ResourceError(.unknownResource, "Version \(snapshot.version) of the catalog has '\(path)' only in variants this device does not accept (\(variants.joined(separator: "; "))). Add one of those values to the variant choice (odr --variant axis=value,fallback) to use it.",
                                    url: snapshot.catalogURL)
            }
            if snapshot.split != nil {
                // A split version is known here only for the tags this device used: the path may be in another.
                throw ResourceError(.resourceNotInstalled, "'\(path)' is not in any tag this device has used of version \(snapshot.version); the catalog is split, so the files of other tags are not known here until one of them is fetched. Check the path (it is case-sensitive), and fetch its tag first.",
                                    url: snapshot.catalogURL)
            }
            throw ResourceError(.unknownResource, "Version \(snapshot.version) of the catalog has no file '\(path)'. Check the path (it is case-sensitive).",
                                url: snapshot.catalogURL)
        }
        let tags = snapshot.lookup.pack(id: file.pack)?.tags.joined(separator: ", ") ?? "?"
        guard try pack(id: file.pack)?.isInstalled == true else {
            throw ResourceError(.resourceNotInstalled, "'\(path)' is in pack \(file.pack.prefix(12)), which is not installed. Fetch one of its tags first: \(tags).",
                                url: snapshot.catalogURL)
        }
        let recorded = try read("read an installed entry") { db in
            try db.fetchOne(sql: "SELECT size, sha256 FROM packEntry WHERE packID = ? AND name = ?", arguments: [file.pack, file.entry])
        }
        // Entries recorded before the store kept SHA-256s (migration v4) are compared by size.
        let matches = recorded.map { row in
            guard let sha256 = try? StoreRow.optionalText(row, "sha256") as String?? else { return false }
            return (try? StoreRow.bytes(row, "size")) == file.size && (sha256 == nil || sha256 == file.sha256)
        } ?? false
        guard matches else {
            throw ResourceError(.resourceNotInstalled, "'\(path)' is in pack \(file.pack.prefix(12)), which is installed with other contents than version \(snapshot.version) lists for it. Fetch one of its tags again to install this version's: \(tags).",
                                url: snapshot.catalogURL)
        }
        guard let url = try installedFile(file) else {
            throw ResourceError(.integrity, "The installed file of '\(path)' (pack \(file.pack.prefix(12))) is missing or is not a file of \(file.size) bytes. Run `odr verify --repair`, then fetch one of its tags again: \(tags).",
                                url: snapshot.catalogURL)
        }
        return url
    }

    /// Where installed `file` is served from, or `nil` when its entry is not a regular file of the
    /// file's size.
    ///
    /// A path other than its entry is served through its own name only when that name is a hard
    /// link to the entry (same inode): a name that holds something else (another entry of the
    /// pack, a folder of `d/e` beside a path `d`) is never served; the entry is.
    ///
    /// - Throws: `invalid-argument` when the file's pack is not a pack id.
    func installedFile(_ file: FileRecord) throws(ResourceError) -> URL? {
        let folder = try packFolder(id: file.pack)
        let byEntry = folder.appending(path: file.entry)
        var entry = stat()
        guard lstat(byEntry.path, &entry) == 0, entry.st_mode & S_IFMT == S_IFREG, Int64(entry.st_size) == file.size else { return nil }
        guard file.path != file.entry else { return byEntry }
        let byPath = folder.appending(path: file.path)
        var linked = stat()
        if lstat(byPath.path, &linked) == 0, linked.st_mode & S_IFMT == S_IFREG, linked.st_ino == entry.st_ino, linked.st_dev == entry.st_dev {
            return byPath
        }
        return byEntry
    }

    /// Whether pack `id` is installed with exactly the entries `snapshot`'s version lists for it
    /// (names, sizes, SHA-256s), rather than only under its id.
    public func isInstalled(_ id: String, asIn snapshot: CatalogSnapshot) throws(ResourceError) -> Bool {
        let entries = snapshot.lookup.expectedEntries(inPack: id)
        return try read("read an installed pack") { db in
            guard let row = try db.fetchAll(sql: "SELECT * FROM pack WHERE id = ? ORDER BY number", arguments: [id]).first,
                  (try? Self.pack(from: row))?.isInstalled == true else { return false }
            return try StoreSchema.recordedEntries(ofPack: id, match: entries, db)
        }
    }

    /// The state of pack `id`: installed (and in use by some process, or not), being downloaded
    /// (its lock is held or a partial download waits), or neither.
    public func state(ofPack id: String, installed: Set<String>) -> PackState {
        if installed.contains(id) { return isPackInUse(id: id) ? .inUse : .downloaded }
        if FileManager.default.fileExists(atPath: stagingURL.appending(path: "\(id).zip").path) { return .downloading }
        if let lock = try? FileLock.tryLock(lockPath(for: id)) {
            lock.unlock()
            return .notDownloaded
        }
        return .downloading
    }

    /// The state of a tag: the least advanced state of the packs it needs; in use when `inUse`
    /// names it or requests in any process hold all of its packs.
    public func state(ofTag tag: TagRecord, installed: Set<String>, inUse: Set<String> = []) -> TagState {
        let states = tag.packs.map { state(ofPack: $0, installed: installed) }
        if states.allSatisfy({ $0 == .downloaded || $0 == .inUse }) {
            return inUse.contains(tag.name) || states.allSatisfy({ $0 == .inUse }) ? .inUse : .downloaded
        }
        return states.contains(.downloading) ? .downloading : .notDownloaded
    }
}
