#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// A catalog is its id, not its URL (docs/STORE.md, "Catalogs and their origins"): the store keeps
/// one row per catalog id and records every origin it has seen serving it (`catalogOrigin`), so a
/// new primary URL continues the stored catalog and an offline store opened with a URL it has not
/// seen still finds it.
extension ResourceStore {
    /// The key of the catalog `url` reaches in the store's tables: the catalog an origin was seen
    /// serving, else the URL's own key (a catalog never fetched through it).
    static func catalogKey(_ url: URL, _ db: SQLiteDatabase) throws -> String {
        let origin = CatalogLocation.key(url)
        return try db.fetchOne(sql: "SELECT catalogKey FROM catalogOrigin WHERE origin = ?", arguments: [origin])
            .flatMap { try? StoreRow.text($0, "catalogKey") } ?? origin
    }

    /// ``catalogKey(_:_:)`` in a read of its own.
    func catalogKey(_ url: URL) throws(ResourceError) -> String {
        try read("find a catalog's key") { db in try Self.catalogKey(url, db) }
    }

    /// Records that `origins` served catalog `catalogID`: each one not seen before continues the
    /// stored catalog of that id (the most recently checked, in a store of the previous release
    /// that kept one per URL), so its manifests and metadata are found and none is downloaded
    /// again. An origin seen serving another catalog is left as it is: the caller refused it.
    ///
    /// - Throws: `storage-failure`.
    func recordOrigins(_ origins: [URL], servingCatalog catalogID: String) throws(ResourceError) {
        // Read first: a check through known origins writes nothing (and works on a read-only store).
        let known = try read("read a catalog's origins") { db in
            try origins.allSatisfy { origin in
                try db.fetchOne(sql: "SELECT 1 FROM catalogOrigin WHERE origin = ?", arguments: [CatalogLocation.key(origin)]) != nil
            }
        }
        guard !known else { return }
        try write("record a catalog's origins") { db in
            guard let key = try db.fetchOne(sql: "SELECT url FROM catalog WHERE catalogID = ? ORDER BY checkedAt DESC, url LIMIT 1",
                                            arguments: [catalogID]).flatMap({ try? StoreRow.text($0, "url") }) else { return }
            for origin in origins {
                try db.execute(sql: "INSERT OR IGNORE INTO catalogOrigin (origin, catalogKey) VALUES (?, ?)",
                               arguments: [CatalogLocation.key(origin), key])
            }
        }
    }

    /// A URL through which the store reaches the stored catalog an app opened with `origins`
    /// means, for use with no network: the catalog one of `origins` was seen serving; else the one
    /// whose id is `catalogID`; else, with no `catalogID` and `orOnlyCatalog`, the only catalog the
    /// store holds.
    ///
    /// - Returns: `nil` when the store holds no catalog, or several and no rule chooses, or
    ///   `catalogID` names one it does not hold or one of `origins` was seen serving another.
    /// - Throws: `storage-failure`.
    public func storedCatalogURL(origins: [URL], catalogID: String? = nil, orOnlyCatalog: Bool = true) throws(ResourceError) -> URL? {
        let rows = try read("find a stored catalog") { db -> (seen: [(origin: URL, id: String?)], all: [(key: String, id: String?)]) in
            var seen: [(URL, String?)] = []
            for origin in origins {
                guard let row = try db.fetchOne(sql: """
                    SELECT c.catalogID AS catalogID FROM catalogOrigin o JOIN catalog c ON c.url = o.catalogKey WHERE o.origin = ?
                    """, arguments: [CatalogLocation.key(origin)]) else { continue }
                seen.append((origin, try? StoreRow.optionalText(row, "catalogID")))
            }
            let all = try db.fetchAll(sql: "SELECT url, catalogID FROM catalog WHERE indexJSON IS NOT NULL ORDER BY checkedAt DESC, url")
                .compactMap { row -> (String, String?)? in
                    guard let key = try? StoreRow.text(row, "url") else { return nil }
                    return (key, try? StoreRow.optionalText(row, "catalogID"))
                }
            return (seen, all)
        }
        // An origin seen serving another catalog than the one named: no choice (the caller says why).
        if let catalogID, rows.seen.contains(where: { $0.id != nil && $0.id != catalogID }) { return nil }
        if let seen = rows.seen.first { return seen.origin }
        if let catalogID { return rows.all.first(where: { $0.id == catalogID }).flatMap { URL(string: $0.key) } }
        guard orOnlyCatalog, rows.all.count == 1 else { return nil }
        return URL(string: rows.all[0].key)
    }

    /// The ids of the catalogs the store holds, most recently checked first.
    public func storedCatalogIDs() throws(ResourceError) -> [String] {
        try read("list the stored catalogs") { db in
            try db.fetchAll(sql: "SELECT catalogID FROM catalog WHERE catalogID IS NOT NULL AND indexJSON IS NOT NULL ORDER BY checkedAt DESC, url")
                .compactMap { try? StoreRow.text($0, "catalogID") }
        }
    }
}
