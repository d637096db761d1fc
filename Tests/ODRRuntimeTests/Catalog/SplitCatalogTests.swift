import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The runtime reads split catalogs (`odrpack build --split-metadata`, format 3) over real HTTP:
/// it fetches only the bins and file tables of the tags it uses, checks each against its pin,
/// keeps them in the store's metadata cache (`manifests/meta/`), and after an update fetches only
/// the ones whose pin changed.
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

    /// The version's bins, then its tables, in the order a client fetches them; with `tags`, only
    /// those a client that uses these tags needs.
    static func files(ofVersion version: Int, _ fixture: CatalogFixture, tags: [String]? = nil) throws -> [String] {
        let entry = try #require(try fixture.index().version(version))
        let split = try SplitManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: entry.manifest)))
        let read = { (path: String) in try Data(contentsOf: fixture.catalog.appending(path: path)) }
        if let tags { return try SplitMetadata.files(forTags: tags, of: split, fetch: read).map(\.path) }
        return try SplitMetadata.parts(of: split, fetch: read).files.map(\.path)
    }

    @Test func installsATagAndKeepsTheMetadataInTheStore() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, snapshot, summary) = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            #expect(!summary.installed.isEmpty)
            try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)
            // Only the bin of `small` and the tables of its packs, once each, kept in the store
            // under their names; not the table of the pack only `big` uses.
            let used = try Self.files(ofVersion: 1, fixture, tags: ["small"])
            let all = try Self.files(ofVersion: 1, fixture)
            #expect(used.count < all.count)
            let asked = await Self.requested(server)
            #expect(asked.filter { $0.hasPrefix("/meta/") } == Set(used.map { "/\($0)" }))
            #expect(server.requests().filter { $0.path.hasPrefix("/meta/") }.count == used.count)
            for path in used {
                #expect(try Data(contentsOf: storeDirectory.appending("manifests/\(path)")) == Data(contentsOf: fixture.catalog.appending(path: path)))
            }
            for path in Set(all).subtracting(used) {
                #expect(!FileManager.default.fileExists(atPath: storeDirectory.appending("manifests/\(path)").path), "\(path)")
            }
            #expect(Set(snapshot.manifest.files.map(\.path)) == Set(Self.smallFiles))
            #expect(snapshot.manifest.tags.map(\.name) == ["small"])
            // A path of the tag not described is not installed, not unknown: another tag may hold it.
            let error = #expect(throws: ResourceError.self) { _ = try store.url(forResource: "big/music.bin", in: snapshot) }
            #expect(error?.code == .resourceNotInstalled, "\(String(describing: error))")
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
    /// its pin gets); a missing one (404) is `resource-unavailable`. Either way the tag is not
    /// described and nothing is installed, and once the server is fixed the next attempt fetches
    /// only that table.
    @Test(arguments: ["flip", "append", "missing"])
    func aTamperedTableIsAnIntegrityErrorAndTheRetryFetchesOnlyIt(tampering: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        // The table of `small` fetched last, so that everything before it is in the cache when it fails.
        let table = try #require(try Self.files(ofVersion: 1, fixture, tags: ["small"]).last)
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
            let snapshot = try await client.refresh()
            #expect(snapshot.split != nil && snapshot.manifest.tags.isEmpty)
            let error = await #expect(throws: ResourceError.self) { _ = try await client.describe(["small"], in: snapshot) }
            #expect(error?.code == (tampering == "missing" ? .resourceUnavailable : .integrity), "\(String(describing: error))")
            #expect(error?.url?.path.hasSuffix(table) == true, "\(String(describing: error))")
            #expect(try store.manifest(catalogURL: server.baseURL, version: 1)?.tags.isEmpty == true)
            #expect(try store.installedPackIDs().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: storeDirectory.appending("manifests/\(table)").path))

            try original.write(to: tableURL)
            await server.waitUntilIdle()
            server.clearRequests()
            let described = try await client.describe(["small"], in: snapshot)
            #expect(await Self.requested(server) == ["/\(table)"])
            _ = try await PackInstaller(store: store, transport: try TransferEngine()).install(try described.packs(forTags: ["small"]), from: described)
            try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: described)
            // Stored: the next snapshot, offline, describes the tag.
            let stored = try #require(try client.storedSnapshot())
            #expect(stored.manifest.tags.map(\.name) == ["small"])
            #expect(stored.split != nil)
        }
    }

    @Test func aTamperedBinIsAnIntegrityErrorAndNothingIsStored() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let bin = try #require(try Self.files(ofVersion: 1, fixture, tags: ["small"]).first)
        #expect(bin.hasSuffix(".tagbin"))
        var data = try Data(contentsOf: fixture.catalog.appending(path: bin))
        data[0] ^= 0x01
        try data.write(to: fixture.catalog.appending(path: bin))
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let snapshot = try await client.refresh()
            let error = await #expect(throws: ResourceError.self) { _ = try await client.describe(["small"], in: snapshot) }
            #expect(error?.code == .integrity, "\(String(describing: error))")
            #expect((error?.cause as? FormatError)?.code == .hashMismatch, "\(String(describing: error))")
            #expect(await Self.requested(server) == ["/catalog.json", "/versions/1.json", "/\(bin)"])
            #expect(try store.manifest(catalogURL: server.baseURL, version: 1)?.tags.isEmpty == true)
            #expect(try store.installedPackIDs().isEmpty)
        }
    }

    @Test func aTamperedCachedFileIsFetchedAgainAndTheStoreOpensOffline() async throws {
        // Exact packing: merged, big's and small's few bytes would share packs and tables.
        let fixture = try CatalogFixture.game(bigBytes: 1000, rules: CatalogFixture.exactPackingRules)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let v1 = try Self.files(ofVersion: 1, fixture, tags: ["small"])
        let baseURL = try await withTestServer(root: fixture.catalog) { server in
            _ = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            // Version 2 changes the tag `big` only; the store's copy of an unchanged table is damaged.
            try fixture.write("big/level.json", Data("{\"tile\": 2}\n".utf8))
            try await fixture.build(splitMetadata: true)
            // The update describes what the store used: `small`.
            let v2 = try Self.files(ofVersion: 2, fixture, tags: ["small"])
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
        for path in try Self.files(ofVersion: 2, fixture, tags: ["small"]) + Self.files(ofVersion: 1, fixture, tags: ["small"]) {
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
    /// from a catalog folder (file://) and over HTTP, and a path of a tag not installed says so;
    /// status lists the tags the store used.
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
            // Only the tags the store used are described: `big` is in a table never fetched.
            #expect(Dictionary(uniqueKeysWithValues: report.tags.map { ($0.name, $0.state) }) == ["small": "downloaded"])
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

    /// A request for a tag the device has not described fetches that tag's metadata, while another
    /// request holds its own tag and keeps it; a tag the version does not define is `invalid-tag`;
    /// the synchronous queries say `catalog-unavailable` until the tag is described.
    @Test func aRequestDescribesItsTagWhileAnotherIsHeld() async throws {
        let fixture = try ManagerFixture.unbuilt(bigBytes: 10_000)
        try await fixture.game.build(splitMetadata: true)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            #expect(manager.tags.isEmpty)
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            #expect(manager.tags.map(\.name) == ["small"])

            let before = #expect(throws: ResourceError.self) { _ = try manager.downloadSize(forTags: ["big"]) }
            #expect(before?.code == .catalogUnavailable, "\(String(describing: before))")
            await server.waitUntilIdle()
            server.clearRequests()
            // Through the completion-handler form, which begins in a task once the tag is described.
            let big = ResourceRequest(tags: ["big"], manager: manager)
            let outcome = Locked<Result<Void, ResourceError>?>(nil)
            try big.startAccessingResources { result in outcome.withLock { $0 = result } }
            try await waitUntil("the begin completes") { outcome.withLock { $0 } != nil }
            try outcome.withLock { $0 }?.get()
            let asked = await Self.requested(server)
            #expect(asked.filter { $0.hasPrefix("/meta/") }.count >= 1)
            #expect(!asked.contains("/catalog.json"))
            #expect(Set(manager.tags.map(\.name)) == ["small", "big"])
            #expect(try manager.downloadSize(forTags: ["big"]) == 0)
            // The request begun before still holds its tag and reads its files.
            let notes = try #require(small.url(forResource: "small/notes.txt"))
            #expect(try Data(contentsOf: notes) == Data("notes\n".utf8))
            #expect(big.url(forResource: "big/level.json") != nil)
            try small.endAccessingResources()
            try big.endAccessingResources()

            let unknown = ResourceRequest(tags: ["no-such-tag"], manager: manager)
            let recording = RequestProgressTests.Recording(unknown)
            let error = await #expect(throws: ResourceError.self) { try await unknown.beginAccessingResources() }
            #expect(error?.code == .invalidTag, "\(String(describing: error))")
            // Describing failed before the begin: its progress stream finishes all the same.
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            // And the request can begin again (it is still initial), failing the same way.
            let again = await #expect(throws: ResourceError.self) { try await unknown.beginAccessingResources() }
            #expect(again?.code == .invalidTag)
        }
    }

    /// A store that holds a split version without its top manifest (as a store filled by the
    /// release before this one does, which assembled the whole version) fetches only the top
    /// manifest again when it checks online: the bins and tables it holds are reused, and the tags
    /// it described stay described.
    @Test func aStoredVersionWithoutItsTopManifestFetchesOnlyThatAgain() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            _ = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            let meta = storeDirectory.appending("manifests/meta")
            let heads = try FileManager.default.contentsOfDirectory(atPath: meta.path).filter { $0.hasSuffix(".splitmanifest") }
            #expect(heads.count == 1)
            for head in heads { try FileManager.default.removeItem(at: meta.appending(path: head)) }

            await server.waitUntilIdle()
            server.clearRequests()
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let snapshot = try await client.refresh()
            #expect(await Self.requested(server) == ["/catalog.json", "/versions/1.json"])
            #expect(snapshot.split != nil)
            #expect(snapshot.manifest.tags.map(\.name) == ["small"])
            try InstallerTests.expectInstalled(Self.smallFiles, fixture: fixture, store: store, snapshot: snapshot)
            #expect(try client.storedSnapshot()?.split != nil)
        }
    }

    /// An update takes from the part of the earlier version what did not change: with the tags in
    /// 8 bins, version 2 (which changes `big` only) is assembled reading only `big`'s bin and
    /// table, and the result is the part a client without the earlier one assembles.
    @Test func anUpdateReadsOnlyTheBinsAndTablesThatChanged() async throws {
        // Exact packing: merged, big's and small's few bytes would share packs and tables.
        let fixture = try CatalogFixture.game(bigBytes: 1000, rules: CatalogFixture.exactPackingRules)
        try await fixture.build()
        func split(_ version: Int) throws -> (SplitManifest, [String: Data]) {
            var files: [String: Data] = [:]
            let manifest = try SplitMetadata.split(try fixture.manifest(version), binCount: 8, tablePin: { table in
                let data = try table.encoded()
                files[SplitMetadata.tablePath(for: MetadataPin(of: data))] = data
                return MetadataPin(of: data)
            }, binPin: { bin in
                let data = try bin.encoded()
                files[SplitMetadata.binPath(for: MetadataPin(of: data))] = data
                return MetadataPin(of: data)
            })
            return (manifest, files)
        }
        let (one, oneFiles) = try split(1)
        #expect(SplitManifest.bin(ofTag: "small", binCount: 8) != SplitManifest.bin(ofTag: "big", binCount: 8))
        let part = try SplitMetadata.scoped(one, tags: ["small", "big"]) { try #require(oneFiles[$0]) }
        try fixture.write("big/level.json", Data("{\"tile\": 9}\n".utf8))
        try await fixture.build()
        let (two, twoFiles) = try split(2)
        var reads: [String] = []
        let carried = try SplitMetadata.scoped(two, tags: ["small", "big"], carrying: (one, part.manifest)) { path in
            reads.append(path)
            return try #require(twoFiles[path])
        }
        let fresh = try SplitMetadata.scoped(two, tags: ["small", "big"]) { try #require(twoFiles[$0]) }
        #expect(carried.manifest == fresh.manifest)
        let changed = Set(twoFiles.keys).subtracting(oneFiles.keys)
        #expect(!changed.isEmpty)
        // What `big` needs (its bin and its packs' tables, one of them shared and unchanged, a
        // cached file for a client), and nothing of `small`'s bin.
        let bigFiles = try SplitMetadata.files(forTags: ["big"], of: two) { try #require(twoFiles[$0]) }.map(\.path)
        #expect(Set(reads) == Set(bigFiles), "\(reads)")
        #expect(changed.isSubset(of: bigFiles))
        #expect(!reads.contains(SplitMetadata.binPath(for: two.bins[SplitManifest.bin(ofTag: "small", binCount: 8)])))
        // The carried tag's bin is still named among the files the part uses.
        #expect(Set(carried.files.map(\.path)).isSuperset(of: reads))
        #expect(carried.files.contains { $0.path == SplitMetadata.binPath(for: two.bins[SplitManifest.bin(ofTag: "small", binCount: 8)]) })
    }

    /// Two processes sharing a store describe different tags of one version: neither loses the
    /// other's, so a pack either installed stays described (and is never taken for superseded).
    @Test func twoClientsOfOneStoreKeepEachOthersTags() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let first = CatalogClient(catalogURL: server.baseURL, store: try ResourceStore(directory: storeDirectory.url), transport: try TransferEngine())
            let secondStore = try ResourceStore(directory: storeDirectory.url)
            let second = CatalogClient(catalogURL: server.baseURL, store: secondStore, transport: try TransferEngine())
            let one = try await first.refresh(), two = try await second.refresh()
            let small = try await first.describe(["small"], in: one)
            #expect(small.manifest.tags.map(\.name) == ["small"])
            let big = try await second.describe(["big"], in: two)
            #expect(Set(big.manifest.tags.map(\.name)) == ["small", "big"])
            #expect(Set(try secondStore.manifest(catalogURL: server.baseURL, version: 1)?.tags.map(\.name) ?? []) == ["small", "big"])
            // The stored part keeps the order the first client saw, so its tag indices stay valid.
            #expect(try secondStore.manifest(catalogURL: server.baseURL, version: 1)?.tags.first?.name == "small")
        }
    }
}
