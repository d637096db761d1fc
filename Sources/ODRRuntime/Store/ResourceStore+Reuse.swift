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
        let wanted = Array(Set(digests))
        guard !wanted.isEmpty else { return [:] }
        let rows: [(sha: String, pack: String, name: String)] = try read("find installed files by content") { db in
            var found: [(String, String, String)] = []
            // SQLite limits the number of bound values; 500 stays well inside every build's limit.
            var start = 0
            while start < wanted.count {
                let chunk = Array(wanted[start..<min(start + 500, wanted.count)])
                start += chunk.count
                let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
                let cursor = try db.fetchCursor(sql: """
                    SELECT e.sha256, e.packID, e.name FROM packEntry e JOIN pack p ON p.id = e.packID
                    WHERE p.isInstalled AND e.sha256 IN (\(marks))
                    """, arguments: SQLiteArguments(chunk))
                while let row = try cursor.next() {
                    // Only a pack id and a clean entry name become a path (the row may have been changed outside the runtime).
                    guard let sha = try? StoreRow.text(row, "sha256"), let pack = try? StoreRow.packID(row, "packID"),
                          let name = try? StoreRow.entryName(row, "name") else { continue }
                    found.append((sha, pack, name))
                }
            }
            return found
        }
        var files: [String: URL] = [:]
        for row in rows where row.pack != excluding && files[row.sha] == nil {
            files[row.sha] = packURL(id: row.pack).appending(path: row.name)
        }
        return files
    }
}
