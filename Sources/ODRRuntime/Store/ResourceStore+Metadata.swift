#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The store's cache of split metadata (format 3 catalogs, docs/FORMAT.md "Split metadata"): every
/// tag bin and file table a ``CatalogClient`` fetched, as served, in `manifests/meta/<sha256>.tagbin`
/// and `manifests/meta/<sha256>.filetable`. A file is named by the SHA-256 its pin gives, so the
/// next version's pin finds it again when it did not change, and it is checked against that pin
/// each time it is read: a damaged or replaced file is deleted and fetched again, never trusted.
/// `manifestMeta` names the files each stored version uses; opening the store deletes the others.
extension ResourceStore {
    /// The folder of cached metadata files.
    static func metadataURL(in directory: URL) -> URL {
        manifestsURL(in: directory).appending(path: SplitMetadata.folder, directoryHint: .isDirectory)
    }

    /// The name of a metadata file in the cache, from its catalog path (`meta/<sha256>.tagbin`),
    /// or `nil` for a path that is not one: only a SHA-256 and a known extension become a file name.
    static func metadataFileName(_ path: String) -> String? {
        let prefix = SplitMetadata.folder + "/"
        guard path.hasPrefix(prefix) else { return nil }
        let name = String(path.dropFirst(prefix.count))
        for suffix in [".tagbin", ".filetable", splitManifestSuffix] where name.hasSuffix(suffix) {
            return HexDigest.isSHA256(String(name.dropLast(suffix.count))) ? name : nil
        }
        return nil
    }

    /// The suffix of a split manifest (format 3) kept in the cache: a client that uses only part of
    /// a version needs its head again to fetch more of it, offline included.
    static let splitManifestSuffix = ".splitmanifest"

    /// The cache path of split manifest bytes `data`: named by their SHA-256, as bins and tables are.
    static func splitManifestPath(of data: Data) -> String {
        "\(SplitMetadata.folder)/\(ContentHash.sha256Hex(of: data))\(splitManifestSuffix)"
    }

    /// The split manifest (format 3) of a stored version, when the version is split: the store then
    /// holds only the part of it its clients used (see ``SplitMetadata/scoped(_:tags:keepingOrderOf:fetch:)``).
    ///
    /// - Returns: `nil` for a version stored whole, or when the cached head is gone or damaged
    ///   (it is deleted then, and the version counts as not stored).
    func splitManifest(catalogURL: URL, version: Int) throws(ResourceError) -> SplitManifest? {
        let names: [String] = try read("read a stored split manifest") { db in
            try db.fetchAll(sql: "SELECT name FROM manifestMeta WHERE catalogURL = ? AND version = ? AND name LIKE ?",
                            arguments: [try Self.catalogKey(catalogURL, db), version, "%" + Self.splitManifestSuffix])
                .compactMap { try? $0.value(at: 0).text() }
        }
        for name in names.sorted() {
            let digest = String(name.dropLast(Self.splitManifestSuffix.count))
            guard HexDigest.isSHA256(digest) else { continue }
            let url = Self.metadataURL(in: directory).appending(path: name)
            guard let info = StoreFiles.status(url.path), info.st_mode & S_IFMT == S_IFREG, info.st_size <= Int64(CatalogTrust.defaultMaximumManifestBytes),
                  let data = try? Data(contentsOf: url), ContentHash.sha256Hex(of: data) == digest,
                  case .split(let split)? = try? PublishedManifest.decode(from: data), split.version == version else {
                Self.removeTree(url)
                try? log(.repair, "\(SplitMetadata.folder)/\(name)", bytes: 0,
                         reason: "cached split manifest damaged or replaced; removed, fetched again when needed", doing: "log a repair")
                continue
            }
            return split
        }
        return nil
    }

    /// Whether stored version `version` was assembled from split metadata (its files are recorded).
    func hasMetadataFiles(catalogURL: URL, version: Int) throws(ResourceError) -> Bool {
        try read("read a stored version's metadata files") { db in
            try db.fetchOne(sql: "SELECT EXISTS (SELECT 1 FROM manifestMeta WHERE catalogURL = ? AND version = ?)",
                            arguments: [try Self.catalogKey(catalogURL, db), version])?.value(at: 0).bool() ?? false
        }
    }

    /// The cached bytes of metadata file `path` when they are exactly what `pin` pins; a cached file
    /// that is not (damaged, cut short, replaced) is deleted, so it is fetched again.
    func cachedMetadata(_ path: String, pin: MetadataPin) -> Data? {
        guard let name = Self.metadataFileName(path) else { return nil }
        let url = Self.metadataURL(in: directory).appending(path: name)
        // The size first, so a huge file put there is never read.
        guard let info = StoreFiles.status(url.path) else { return nil }
        guard info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == pin.size, let data = try? Data(contentsOf: url), (try? pin.check(data, file: path)) != nil else {
            Self.removeTree(url)
            try? log(.repair, path, bytes: 0, reason: "cached metadata file damaged or replaced; removed and fetched again", doing: "log a repair")
            return nil
        }
        return data
    }

    /// Keeps `data`, checked against its pin, as metadata file `path`: written whole and renamed
    /// into place. Best effort: a file not kept is only fetched again next time.
    func cacheMetadata(_ data: Data, path: String) {
        guard let name = Self.metadataFileName(path) else { return }
        let folder = Self.metadataURL(in: directory)
        guard (try? StoreFiles.makeFolder(folder.path)) != nil else { return }
        try? data.write(to: folder.appending(path: name), options: .atomic)
    }

    /// The names of the metadata files stored versions use, as `manifestMeta` lists them for the
    /// versions the `manifest` table holds.
    static func referencedMetadataFiles(_ database: SQLitePool) throws -> Set<String> {
        try database.read { db in
            Set(try db.fetchAll(sql: """
                SELECT DISTINCT m.name FROM manifestMeta m JOIN manifest v ON v.catalogURL = m.catalogURL AND v.version = m.version
                """).compactMap { row throws(SQLiteError) in try row.value(at: 0).text() })
        }
    }

    /// Records that version `version` of the catalog `catalogKey` uses the metadata files `paths`.
    static func recordMetadataFiles(_ paths: [String], catalogKey: String, version: Int, _ db: SQLiteDatabase) throws {
        let insert = try db.cachedStatement(sql: "INSERT OR IGNORE INTO manifestMeta (catalogURL, version, name) VALUES (?, ?, ?)")
        for name in paths.compactMap(metadataFileName) { try insert.execute(arguments: [catalogKey, version, name]) }
    }

    /// Removes cached metadata files that no stored version uses: fetched for a version whose
    /// check failed or was interrupted, or not a metadata file at all. Another process may be
    /// between fetching a file and storing its version; removing it only costs fetching it again.
    static func removeUnreferencedMetadataFiles(in folder: URL, database: SQLitePool) -> [String] {
        // A link planted in the folder's place is removed, never listed: what it points to is not the store's.
        guard StoreFiles.isFolder(folder.path) else {
            StoreFiles.removeLink(folder.path)
            return []
        }
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path), !names.isEmpty,
              let referenced = try? referencedMetadataFiles(database) else { return [] }
        var removed: [String] = []
        for name in names.sorted() where !referenced.contains(name) {
            removeTree(folder.appending(path: name))
            removed.append("\(SplitMetadata.folder)/\(name)")
        }
        return removed
    }
}
