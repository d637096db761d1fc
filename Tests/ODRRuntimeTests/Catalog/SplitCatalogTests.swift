import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The runtime reads split catalogs (`odrpack build --split-metadata`, format 3) over real HTTP:
/// it fetches the version's bins and file tables, checks each against its pin, keeps them in the
/// store's metadata cache (`manifests/meta/`), and after an update fetches only the ones whose pin
/// changed.
struct SplitCatalogTests {
    static let smallFiles = ["small/map.json", "small/copy/map-again.json", "small/notes.txt", "shared/palette.bin"]

    /// The metadata files in the catalog's `meta/` folder.
    static func metaFiles(_ fixture: CatalogFixture) throws -> Set<String> {
        Set(try FileManager.default.contentsOfDirectory(atPath: fixture.catalog.appending(path: "meta").path).map { "meta/\($0)" })
    }

    /// The paths the server was asked for, each once.
    static func requested(_ server: CatalogServer) async -> Set<String> {
        await server.waitUntilIdle()
        return Set(server.requests().map(\.path))
    }

    /// The version's bins, then its tables, in the order a client fetches them.
    static func files(ofVersion version: Int, _ fixture: CatalogFixture) throws -> [String] {
        let entry = try #require(try fixture.index().version(version))
        let split = try SplitManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: entry.manifest)))
        return try SplitMetadata.parts(of: split) { try Data(contentsOf: fixture.catalog.appending(path: $0)) }.files.map(\.path)
    }

    @Test func installsATagAndKeepsTheMetadataInTheStore() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, snapshot, summary) = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            #expect(!summary.installed.isEmpty)
            try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)
            // Every bin and table of the version, once, each kept in the store under its name.
            let meta = try Self.metaFiles(fixture)
            let asked = await Self.requested(server)
            #expect(asked.filter { $0.hasPrefix("/meta/") } == Set(meta.map { "/\($0)" }))
            #expect(server.requests().filter { $0.path.hasPrefix("/meta/") }.count == meta.count)
            for path in meta {
                #expect(try Data(contentsOf: storeDirectory.appending("manifests/\(path)")) == Data(contentsOf: fixture.catalog.appending(path: path)))
            }
            #expect(snapshot.manifest.files.count == 6)
        }
    }

    @Test func anUpdateFetchesOnlyTheManifestAndTheMetadataAndPackThatChanged() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, _, _) = try await InstallerTests.install(["small", "big"], from: server.baseURL, store: storeDirectory.url)
            let metaBefore = try Self.metaFiles(fixture)
            let packsBefore = Set(try FileManager.default.contentsOfDirectory(atPath: fixture.catalog.appending(path: "packs").path))

            try fixture.write("small/notes.txt", Data("notes, revised\n".utf8))
            try await fixture.build(splitMetadata: true)
            let changedMeta = try Self.metaFiles(fixture).subtracting(metaBefore)
            let newPacks = Set(try FileManager.default.contentsOfDirectory(atPath: fixture.catalog.appending(path: "packs").path))
                .subtracting(packsBefore)
            // One tag set changed: its pack, its table, and the one bin that pins it.
            #expect(changedMeta.count == 2 && changedMeta.contains { $0.hasSuffix(".tagbin") } && changedMeta.contains { $0.hasSuffix(".filetable") },
                    "\(changedMeta)")
            #expect(newPacks.count == 1)

            await server.waitUntilIdle()
            server.clearRequests()
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let snapshot = try await client.refresh()
            #expect(snapshot.version == 2)
            _ = try await PackInstaller(store: store, transport: try TransferEngine()).install(try snapshot.packs(forTags: ["small", "big"]), from: snapshot)
            try InstallerTests.expectInstalled(Self.smallFiles + ["big/music.bin", "big/level.json"], fixture: fixture, store: store, snapshot: snapshot)

            let expected = Set(["/catalog.json", "/versions/2.json"] + changedMeta.map { "/\($0)" } + newPacks.map { "/packs/\($0)" })
            #expect(await Self.requested(server) == expected)
        }
    }

    /// A table changed in place or made longer is `integrity` (what a manifest that differs from
    /// its pin gets); a missing one (404) is `resource-unavailable`. Either way nothing is stored,
    /// and once the server is fixed the next check fetches only that table.
    @Test(arguments: ["flip", "append", "missing"])
    func aTamperedTableIsAnIntegrityErrorAndTheRetryFetchesOnlyIt(tampering: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        // The table fetched last, so that everything before it is in the cache when it fails.
        let table = try #require(try Self.files(ofVersion: 1, fixture).last)
        #expect(table.hasSuffix(".filetable"))
        let tableURL = fixture.catalog.appending(path: table)
        let original = try Data(contentsOf: tableURL)
        var tampered = original
        switch tampering {
        case "flip": tampered[tampered.count / 2] ^= 0x01
        case "append": tampered.append(0)
        default: break
        }
        if tampering == "missing" { try FileManager.default.removeItem(at: tableURL) } else { try tampered.write(to: tableURL) }

        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let error = await #expect(throws: ResourceError.self) { _ = try await client.refresh() }
            #expect(error?.code == (tampering == "missing" ? .resourceUnavailable : .integrity), "\(String(describing: error))")
            #expect(error?.url?.path.hasSuffix(table) == true, "\(String(describing: error))")
            #expect(try store.followedCatalog(url: server.baseURL) == nil)
            #expect(try store.installedPackIDs().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: storeDirectory.appending("manifests/\(table)").path))

            try original.write(to: tableURL)
            await server.waitUntilIdle()
            server.clearRequests()
            let snapshot = try await client.refresh()
            #expect(await Self.requested(server) == ["/catalog.json", "/versions/1.json", "/\(table)"])
            _ = try await PackInstaller(store: store, transport: try TransferEngine()).install(try snapshot.packs(forTags: ["small"]), from: snapshot)
            try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)
        }
    }

    @Test func aTamperedBinIsAnIntegrityErrorAndNothingIsStored() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let bin = try #require(try Self.files(ofVersion: 1, fixture).first)
        #expect(bin.hasSuffix(".tagbin"))
        var data = try Data(contentsOf: fixture.catalog.appending(path: bin))
        data[0] ^= 0x01
        try data.write(to: fixture.catalog.appending(path: bin))
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let error = await #expect(throws: ResourceError.self) { _ = try await client.refresh() }
            #expect(error?.code == .integrity, "\(String(describing: error))")
            #expect((error?.cause as? FormatError)?.code == .hashMismatch, "\(String(describing: error))")
            #expect(await Self.requested(server) == ["/catalog.json", "/versions/1.json", "/\(bin)"])
            #expect(try store.followedCatalog(url: server.baseURL) == nil)
            #expect(try store.installedPackIDs().isEmpty)
        }
    }

    @Test func aTamperedCachedFileIsFetchedAgainAndTheStoreOpensOffline() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let v1 = try Self.files(ofVersion: 1, fixture)
        let baseURL = try await withTestServer(root: fixture.catalog) { server in
            _ = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            // Version 2 changes the tag `big` only; the store's copy of an unchanged table is damaged.
            try fixture.write("big/level.json", Data("{\"tile\": 2}\n".utf8))
            try await fixture.build(splitMetadata: true)
            let v2 = try Self.files(ofVersion: 2, fixture)
            let unchanged = try #require(v2.filter { $0.hasSuffix(".filetable") && v1.contains($0) }.first)
            let cached = storeDirectory.appending("manifests/\(unchanged)")
            var data = try Data(contentsOf: cached)
            data[data.count - 1] ^= 0x01
            try data.write(to: cached)

            await server.waitUntilIdle()
            server.clearRequests()
            let store = try ResourceStore(directory: storeDirectory.url)
            let snapshot = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine()).refresh()
            #expect(snapshot.version == 2)
            let asked = await Self.requested(server)
            #expect(asked.contains("/\(unchanged)"))
            let fetchedAgain = Set(v2.filter { !v1.contains($0) } + [unchanged]).map { "/\($0)" }
            #expect(asked == Set(["/catalog.json", "/versions/2.json"] + fetchedAgain))
            #expect(try Data(contentsOf: cached) == Data(contentsOf: fixture.catalog.appending(path: unchanged)))
            return server.baseURL
        }

        // The server is gone: the store opens with version 2 and serves the installed tag, and
        // opening it keeps every metadata file a stored version uses, removing only strays.
        try Data("stray".utf8).write(to: storeDirectory.appending("manifests/meta/stray.filetable"))
        let store = try ResourceStore(directory: storeDirectory.url)
        #expect(store.repairReport.removedManifestFiles == ["meta/stray.filetable"])
        for path in try Self.files(ofVersion: 2, fixture) + Self.files(ofVersion: 1, fixture) {
            #expect(FileManager.default.fileExists(atPath: storeDirectory.appending("manifests/\(path)").path), "\(path)")
        }
        let snapshot = try await CatalogClient(catalogURL: baseURL, store: store, transport: try TransferEngine()).snapshot(online: false)
        #expect(snapshot.version == 2)
        try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)
    }

    /// A split catalog shipped with the app serves before the first online check, its bins and
    /// tables read from the bundle and checked against their pins; a damaged one is refused.
    @Test func aBundledSplitCatalogServesOfflineAndInstallsFromDisk() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let store = try ResourceStore(directory: storeDirectory.url)
        let engine = try TransferEngine()
        // Nothing listens there, and nothing is asked: online is off, and packs come from the bundle.
        let unreachable = try #require(URL(string: "http://127.0.0.1:9/"))
        let client = CatalogClient(catalogURL: unreachable, store: store, transport: engine, bundledCatalog: fixture.catalog)
        let snapshot = try await client.snapshot(online: false)
        #expect(snapshot.version == 1)
        #expect(snapshot.manifest == (try fixture.manifest(1)))
        _ = try await PackInstaller(store: store, transport: engine, bundledCatalog: fixture.catalog)
            .install(try snapshot.packs(forTags: ["small"]), from: snapshot)
        try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)

        let table = try #require(try Self.files(ofVersion: 1, fixture).last)
        var data = try Data(contentsOf: fixture.catalog.appending(path: table))
        data[data.count / 2] ^= 0x01
        try data.write(to: fixture.catalog.appending(path: table))
        let error = await #expect(throws: ResourceError.self) { _ = try await client.snapshot(online: false) }
        #expect(error?.code == .invalidCatalog, "\(String(describing: error))")
        #expect(error?.message.contains(fixture.catalog.path) == true, "\(String(describing: error))")
    }

    /// The `odr` tool on a split catalog: fetch, path, status and verify work as on a whole one,
    /// from a catalog folder (file://) and over HTTP, and a path of a tag not installed says so.
    @Test(arguments: ["file", "http"])
    func theODRToolWorksOnASplitCatalog(_ scheme: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        func check(_ catalog: String) async throws {
            let common = ["--catalog", catalog, "--store", storeDirectory.url.path]
            let fetch = try await ODRExecutable.run(["fetch"] + common + ["small"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            let path = try await ODRExecutable.run(["path"] + common + ["small/map.json"])
            #expect(path.status == 0, "\(path.stderr)")
            #expect(try Data(contentsOf: URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))) == fixture.contents(of: "small/map.json"))
            let status = try await ODRExecutable.run(["status"] + common + ["--json"])
            struct Report: Decodable { struct Tag: Decodable { var name: String; var state: String }; var tags: [Tag] }
            let report = try JSONDecoder().decode(Report.self, from: Data(status.stdout.utf8))
            #expect(Dictionary(uniqueKeysWithValues: report.tags.map { ($0.name, $0.state) }) == ["small": "downloaded", "big": "not downloaded"])
            let missing = try await ODRExecutable.run(["path"] + common + ["big/music.bin"])
            #expect(missing.status == 1 && missing.stderr.hasPrefix("error[resource-not-installed]:"), "\(missing.stderr)")
            let verify = try await ODRExecutable.run(["verify", "--store", storeDirectory.url.path])
            #expect(verify.status == 0, "\(verify.stdout) \(verify.stderr)")
        }
        if scheme == "file" {
            try await check(fixture.catalog.path)
        } else {
            try await withTestServer(root: fixture.catalog) { server in try await check(server.baseURL.absoluteString) }
        }
    }

    /// A game's ResourceManager on a split catalog: prepare, a request's files, and an update that
    /// the next request uses.
    @Test func aManagerUsesASplitCatalogAndItsUpdates() async throws {
        let fixture = try ManagerFixture.unbuilt(bigBytes: 10_000)
        try await fixture.game.build(splitMetadata: true)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            let url = try #require(request.url(forResource: "small/notes.txt"))
            #expect(try Data(contentsOf: url) == Data("notes\n".utf8))
            try request.endAccessingResources()

            try fixture.game.write("small/notes.txt", Data("version two\n".utf8))
            try await fixture.game.build(splitMetadata: true)
            #expect(try await manager.checkForUpdates() == 2)
            #expect(manager.currentVersion == 2)
            let again = ResourceRequest(tags: ["small"], manager: manager)
            try await again.beginAccessingResources()
            let updated = try #require(again.url(forResource: "small/notes.txt"))
            #expect(try Data(contentsOf: updated) == Data("version two\n".utf8))
            try again.endAccessingResources()
        }
    }
}
