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
    /// Installed files with the given contents: for each SHA-256 the store holds, one installed file.
    ///
    /// The installer hard-links these into a pack it assembles instead of downloading the same bytes
    /// again, whichever pack or catalog version they were installed with. Entries recorded by a store
    /// older than the `sha256` column are not found (they are downloaded as before).
    ///
    /// The answer is a hint, not a promise: the pack may be purged, or a file changed behind the
    /// store's back, after this returns. The installer therefore links first and hashes the link it
    /// made, which no purge can take away (see docs/STORE.md, "Reusing installed files").
    ///
    /// - Parameters:
    ///   - digests: SHA-256 digests as 64 lowercase hex digits.
    ///   - excluding: a pack whose files must not be offered (the one being assembled).
    public func installedFiles(withSHA256 digests: some Collection<String>, excluding: String? = nil) throws(ResourceError) -> [String: URL] {
        let rows = try rows(withSHA256: digests, action: "find installed files by content", sql: { marks in """
            SELECT e.sha256, e.packID, e.name FROM packEntry e JOIN pack p ON p.id = e.packID
            WHERE p.isInstalled AND e.sha256 IN (\(marks))
            """ }) { row throws(DamagedRow) in
            // Only a pack id and a clean entry name become a path (the row may have been changed outside the runtime).
            (sha: try StoreRow.text(row, "sha256"), pack: try StoreRow.packID(row, "packID"), name: try StoreRow.entryName(row, "name"))
        }
        var files: [String: URL] = [:]
        for row in rows where row.pack != excluding && files[row.sha] == nil {
            files[row.sha] = packURL(id: row.pack).appending(path: row.name)
        }
        return files
    }

    /// A chunk of an installed file: ``size`` bytes of ``file`` from ``offset``.
    struct HeldChunk: Sendable, Hashable {
        var file: URL
        var offset: Int64
        var size: Int64
    }

    /// Chunks of installed files with the given contents: for each SHA-256 the store holds as a
    /// chunk of some installed chunked file (any pack, any version, any path), one place to read it.
    ///
    /// Like ``installedFiles(withSHA256:excluding:)`` a hint: the installer checks each chunk's bytes
    /// against the digest as it reads them, and fetches a chunk whose bytes do not match.
    func heldChunks(withSHA256 digests: some Collection<String>, excluding: String? = nil) throws(ResourceError) -> [String: HeldChunk] {
        let rows = try rows(withSHA256: digests, action: "find installed chunks by content", sql: { marks in """
            SELECT c.sha256, c.packID, c.name, c.position, c.size FROM packChunk c JOIN pack p ON p.id = c.packID
            WHERE p.isInstalled AND c.sha256 IN (\(marks))
            """ }) { row throws(DamagedRow) in
            (sha: try StoreRow.text(row, "sha256"), pack: try StoreRow.packID(row, "packID"), name: try StoreRow.entryName(row, "name"),
             offset: try StoreRow.bytes(row, "position"), size: try StoreRow.bytes(row, "size"))
        }
        var chunks: [String: HeldChunk] = [:]
        for row in rows where row.pack != excluding && chunks[row.sha] == nil && row.size > 0 {
            chunks[row.sha] = HeldChunk(file: packURL(id: row.pack).appending(path: row.name), offset: row.offset, size: row.size)
        }
        return chunks
    }

    /// Runs `sql` (given the placeholders) over `digests` in batches SQLite can bind, parsing each
    /// row with `parse`; rows that do not parse (changed outside the runtime) are skipped.
    private func rows<Row>(
        withSHA256 digests: some Collection<String>, action: String, sql: (String) -> String,
        parse: @escaping (SQLiteRow) throws(DamagedRow) -> Row
    ) throws(ResourceError) -> [Row] {
        let wanted = Array(Set(digests))
        guard !wanted.isEmpty else { return [] }
        return try read(action) { db in
            var found: [Row] = []
            // SQLite limits the number of bound values; 500 stays well inside every build's limit.
            var start = 0
            while start < wanted.count {
                let batch = Array(wanted[start..<min(start + 500, wanted.count)])
                start += batch.count
                let marks = Array(repeating: "?", count: batch.count).joined(separator: ",")
                let cursor = try db.fetchCursor(sql: sql(marks), arguments: SQLiteArguments(batch))
                while let row = try cursor.next() {
                    if let parsed = try? parse(row) { found.append(parsed) }
                }
            }
            return found
        }
    }
}

/// Content the store can share with peers (docs/STORE.md, "Local network peers"): `size` bytes of
/// an installed file from `offset` (a whole file, or a chunk of a chunked one).
public struct SharedContent: Sendable, Hashable {
    /// The installed file, inside `packs/<packID>/`.
    public var file: URL
    /// The installed pack the file belongs to.
    public var packID: String
    /// The content's first byte in the file (0 for a whole file).
    public var offset: Int64
    /// The content's size.
    public var size: Int64

    /// Describes content: `size` bytes of `file` (of pack `packID`) from `offset`.
    public init(file: URL, packID: String, offset: Int64, size: Int64) {
        self.file = file
        self.packID = packID
        self.offset = offset
        self.size = size
    }
}

extension ResourceStore {
    /// Where the content with SHA-256 `digest` (64 lowercase hex digits) is: an installed file with
    /// that content, else a chunk of an installed chunked file; `nil` when the store's database
    /// says no installed (and so verified) pack holds it, or `digest` is not a digest.
    ///
    /// What `odr share` serves: only the database decides, a path never comes from the request,
    /// and a pack being purged is not installed any more by the time its folder leaves `packs/`
    /// (the purge clears the row first).
    public func sharedContent(sha256 digest: String) throws(ResourceError) -> SharedContent? {
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else { return nil }
        let rows = try rows(withSHA256: [digest], action: "find shared content", sql: { marks in """
            SELECT e.packID, e.name, e.size FROM packEntry e JOIN pack p ON p.id = e.packID
            WHERE p.isInstalled AND e.sha256 IN (\(marks)) LIMIT 4
            """ }) { row throws(DamagedRow) in
            (pack: try StoreRow.packID(row, "packID"), name: try StoreRow.entryName(row, "name"), size: try StoreRow.bytes(row, "size"))
        }
        if let row = rows.first {
            return SharedContent(file: packURL(id: row.pack).appending(path: row.name), packID: row.pack, offset: 0, size: row.size)
        }
        let chunks = try heldChunks(withSHA256: [digest])
        guard let chunk = chunks[digest], let pack = packID(ofInstalledFile: chunk.file) else { return nil }
        return SharedContent(file: chunk.file, packID: pack, offset: chunk.offset, size: chunk.size)
    }

    /// Whether pack `id` is installed, as the database says now.
    public func isPackInstalled(_ id: String) -> Bool {
        (try? pack(id: id)?.isInstalled) == true
    }

    private func packID(ofInstalledFile file: URL) -> String? {
        let packs = packsURL.path.hasSuffix("/") ? packsURL.path : packsURL.path + "/"
        guard file.path.hasPrefix(packs) else { return nil }
        return file.path.dropFirst(packs.count).split(separator: "/").first.map(String.init)
    }
}
