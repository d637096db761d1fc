import ODRFormat

extension ResourceStore {
    /// An installed superseded pack, and the newest version of its catalog that lists it.
    public struct SupersededPack: Sendable, Hashable, Codable {
        /// The pack id.
        public var id: String
        /// The newest version (of any followed catalog) that lists it; `nil` when no stored version does.
        public var newestVersion: Int?
        /// Whether it belongs to one of the previous versions the store keeps (see
        /// ``supersededPacks(keepingVersions:)``).
        public var isKept: Bool
    }

    /// The installed packs no current version lists, each with the newest version that lists it,
    /// marking those the store keeps: the packs of the `versions` newest earlier versions that
    /// still have installed superseded packs (per catalog), which a process still using that
    /// version or a rollback to it would need. The rest is what ``ResourceManager`` reclaims as
    /// soon as no request holds it.
    ///
    /// A pack listed by versions 1 and 2 but not by the current 3 belongs to version 2.
    public func supersededPacks(keepingVersions versions: Int) throws(ResourceError) -> [SupersededPack] {
        let rows = try read("list superseded packs") { db in
            try db.fetchAll(sql: """
                SELECT p.id AS id, pv.catalogURL AS catalogURL, MAX(pv.version) AS newest
                FROM pack p LEFT JOIN packVersion pv ON pv.packID = p.id AND typeof(pv.version) = 'integer' AND pv.version >= 1
                WHERE p.isInstalled = 1 AND p.isSuperseded = 1
                GROUP BY p.id, pv.catalogURL ORDER BY p.number
                """).compactMap { row -> (id: String, catalog: String?, newest: Int?)? in
                // A row changed outside the runtime is left out: its pack is neither kept nor reclaimed here.
                guard let id = try? StoreRow.packID(row, "id") else { return nil }
                let newest = (try? StoreRow.integer(row, "newest", in: 1...Int64(Int32.max))).map { Int($0) }
                return (id, try? StoreRow.text(row, "catalogURL"), newest)
            }
        }
        // Per catalog, the newest `versions` versions that superseded packs belong to.
        var newestByCatalog: [String: Set<Int>] = [:]
        for row in rows {
            guard let catalog = row.catalog, let newest = row.newest else { continue }
            newestByCatalog[catalog, default: []].insert(newest)
        }
        let kept = newestByCatalog.mapValues { Set($0.sorted(by: >).prefix(max(0, versions))) }
        var packs: [SupersededPack] = []
        var index: [String: Int] = [:]
        for row in rows {
            let isKept = row.catalog.flatMap { catalog in row.newest.map { kept[catalog]?.contains($0) ?? false } } ?? false
            if let position = index[row.id] {
                packs[position].isKept = packs[position].isKept || isKept
                packs[position].newestVersion = [packs[position].newestVersion, row.newest].compactMap { $0 }.max()
            } else {
                index[row.id] = packs.count
                packs.append(SupersededPack(id: row.id, newestVersion: row.newest, isKept: isKept))
            }
        }
        return packs
    }
}
