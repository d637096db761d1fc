import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// A store the previous release wrote (its database migrated by the SQLite library it used, which
/// recorded its migrations in `grdb_migrations`) opens with this release's own SQLite layer, keeping its rows:
/// no migration runs again, no pack is forgotten (docs/STORE.md, "Schema and migrations").
struct PreviousReleaseStoreTests {
    static let fixture = URL(filePath: #filePath).deletingLastPathComponent().appending(path: "Fixtures/previous-release-store.sql")
    static let installed = "94c44b88a31ea77ebf47db8d41c2cc87f3ada87534958246ef507157f70e57ea"
    static let purged = ["83df37ff5149e6d17b0ebf75375d775012aa4d4d10f97fa5bb6dd97c18c5cdd8",
                         "2db68e7d6177d1b46515120949b1dbfa2e50bd1fdd9423859b0909f46549922d"]
    static let catalogURL = URL(string: "file:///tmp/oldstore/catalog/")!

    /// The fixture's database and its one installed pack's folder in a new store directory.
    static func makeStore() throws -> TemporaryDirectory {
        let directory = try TemporaryDirectory(prefix: "odr-previous")
        let dump = try String(contentsOf: fixture, encoding: .utf8)
        try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path).execute(sql: dump)
        let folder = directory.appending("packs/\(installed)/B")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try Data("beta\n".utf8).write(to: folder.appending(path: "intro.txt"))
        return directory
    }

    @Test func aStoreOfThePreviousReleaseOpensWithItsRows() async throws {
        let directory = try Self.makeStore()
        let store = try ResourceStore(directory: directory.url)
        #expect(store.repairReport.packsMarkedNotInstalled.isEmpty && store.repairReport.removedPackFolders.isEmpty
                && store.repairReport.removedDamagedRows.isEmpty, "\(store.repairReport)")

        let packs = try store.packs()
        #expect(packs.map(\.id) == Self.purged + [Self.installed])
        #expect(packs.map(\.isInstalled) == [false, false, true])
        #expect(packs.map(\.installedBytes) == [6, 4070, 5])
        #expect(packs.map(\.useCount) == [0, 0, 0])
        #expect(try store.installedPackIDs() == [Self.installed])
        #expect(try store.events().map(\.kind) == [.install, .install, .install, .purge, .purge])
        let followed = try #require(try store.followedCatalog(url: Self.catalogURL))
        #expect(followed.currentVersion == 1 && followed.highestSerial == 1)
        let manifest = try #require(try store.manifest(catalogURL: Self.catalogURL, version: 1))
        #expect(Set(manifest.packs.map(\.id)) == Set(Self.purged + [Self.installed]))
        #expect(try store.catalogTrust(catalogID: "previous-release")?.highestSerial == 1)
        #expect(try store.verify().isEmpty)

        // The migrations it recorded stand as they were: none ran again; only v8 (the split-metadata
        // cache's table), v9 (the chunks of installed files), v10 (origins that failed), v11 (the
        // origins each catalog was served by) and v12 (the prefetch learning measure), which the
        // previous release did not have, were added.
        let database = try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path)
        let applied = try database.fetchAll(sql: "SELECT identifier FROM \(SQLiteMigrator.appliedTable) ORDER BY identifier")
            .compactMap { try $0.value(at: 0).text() }
        #expect(applied == ["v1", "v10", "v11", "v12", "v2", "v3", "v4", "v5", "v6", "v7", "v8", "v9"])

        // It goes on working: a use is recorded, and a second open finds the same.
        try store.markUsed([Self.installed], beginnings: [Self.installed: 1])
        let reopened = try withExtendedLifetime(store) { try ResourceStore(directory: directory.url) }
        #expect(try reopened.pack(id: Self.installed)?.useCount == 1)
        #expect(try reopened.installedPackIDs() == [Self.installed])
    }

    /// Migration v11 records each row's URL as an origin of its catalog: the store of the previous
    /// release serves its catalog offline through a new URL (the only catalog, or named by id), and
    /// a new origin serving the same id continues the stored row, manifests included.
    @Test func aStoreOfThePreviousReleaseServesItsCatalogThroughANewURL() throws {
        let directory = try Self.makeStore()
        let store = try ResourceStore(directory: directory.url)
        let moved = URL(string: "https://new-cdn.example.com/game/")!
        #expect(try store.storedCatalogURL(origins: [moved], catalogID: "previous-release") == Self.catalogURL)
        #expect(try store.storedCatalogURL(origins: [moved]) == Self.catalogURL)
        #expect(try store.storedCatalogURL(origins: [moved], orOnlyCatalog: false) == nil)
        #expect(try store.storedCatalogURL(origins: [moved, Self.catalogURL], orOnlyCatalog: false) == Self.catalogURL)
        #expect(try store.storedCatalogURL(origins: [moved], catalogID: "another-game") == nil)
        #expect(try store.storedCatalogURL(origins: [Self.catalogURL], catalogID: "another-game") == nil)

        var client = CatalogClient(catalogURL: moved, store: store, transport: try TransferEngine())
        client.catalogID = "previous-release"
        let snapshot = try #require(try client.storedSnapshot())
        #expect(snapshot.version == 1 && snapshot.catalogURL == moved)

        try store.recordOrigins([moved], servingCatalog: "previous-release")
        #expect(try store.followedCatalog(url: moved)?.currentVersion == 1)
        #expect(try store.manifest(catalogURL: moved, version: 1) != nil)
        #expect(try store.followedCatalogURLs() == [Self.catalogURL])
    }

    /// A store this release creates has exactly the schema the previous release's had, plus the
    /// tables of migrations v8 (`manifestMeta`), v9 (`packChunk` and its index), v10
    /// (`originFailure`), v11 (`catalogOrigin`) and v12 (`prefetchLearning`), which older releases leave alone, so either
    /// release can open the other's.
    @Test func aNewStoreHasThePreviousReleasesSchema() throws {
        let previous = try Self.makeStore()
        let created = try TemporaryDirectory(prefix: "odr-new")
        _ = try ResourceStore(directory: created.url)
        func schema(_ directory: TemporaryDirectory) throws -> [String] {
            try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path)
                .fetchAll(sql: "SELECT type, name, sql FROM sqlite_master ORDER BY type, name")
                .map { row in "\(try row.value("type").text() ?? "") \(try row.value("name").text() ?? ""): \(try row.value("sql").text() ?? "")" }
        }
        let added = { (line: String) in line.contains("manifestMeta") || line.contains("packChunk") || line.contains("originFailure") || line.contains("catalogOrigin")
            || line.contains("prefetchLearning") }
        #expect(try schema(created).filter { !added($0) } == schema(previous))
        #expect(try schema(created).filter(added).count == 6)
    }
}
