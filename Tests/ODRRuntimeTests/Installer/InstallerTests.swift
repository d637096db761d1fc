import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

struct InstallerTests {
    /// Installs `tags` from `catalogURL` into a fresh store and returns the store and snapshot.
    static func install(_ tags: [String], from catalogURL: URL, store directory: URL) async throws
        -> (ResourceStore, CatalogSnapshot, InstallSummary) {
        let store = try ResourceStore(directory: directory)
        let engine = try TransferEngine()
        let client = CatalogClient(catalogURL: catalogURL, store: store, transport: engine)
        // A split catalog describes the tags when they are first used; a whole one already does.
        let snapshot = try await client.describe(Set(tags), in: try await client.refresh())
        let summary = try await PackInstaller(store: store, transport: engine)
            .install(try snapshot.packs(forTags: tags), from: snapshot)
        return (store, snapshot, summary)
    }

    /// Every file of `tags` in the fixture reads back byte for byte from the store.
    static func expectInstalled(_ paths: [String], fixture: CatalogFixture, store: ResourceStore, snapshot: CatalogSnapshot) throws {
        for path in paths {
            let url = try store.url(forResource: path, in: snapshot)
            #expect(try Data(contentsOf: url) == fixture.contents(of: path), "\(path)")
        }
    }

    @Test func installsFromALoopbackServerWithDuplicatesAsHardLinks() async throws {
        let fixture = try CatalogFixture.game()
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, snapshot, summary) = try await Self.install(["small"], from: server.baseURL, store: storeDirectory.url)
            #expect(summary.installed.count == snapshot.lookup.packs(forTags: ["small"]).count)
            try Self.expectInstalled(["small/map.json", "small/copy/map-again.json", "small/notes.txt", "shared/palette.bin"],
                                     fixture: fixture, store: store, snapshot: snapshot)
            let first = try store.url(forResource: "small/map.json", in: snapshot).path
            let second = try store.url(forResource: "small/copy/map-again.json", in: snapshot).path
            let a = try FileManager.default.attributesOfItem(atPath: first), b = try FileManager.default.attributesOfItem(atPath: second)
            #expect((a[.systemFileNumber] as? NSNumber) == (b[.systemFileNumber] as? NSNumber))
            #expect((a[.posixPermissions] as? NSNumber)?.intValue == 0o444)
            #expect(try store.verify().isEmpty)
            #expect(try store.events().filter { $0.kind != .catalog }.map(\.kind) == Array(repeating: .install, count: summary.installed.count))
            #expect(storeDirectory.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
            // The big tag is not installed.
            #expect(throws: ResourceError.self) { try store.url(forResource: "big/music.bin", in: snapshot) }
        }
    }

    @Test func installsFromAFileCatalogAndFromABundledCatalog() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 200_000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, summary) = try await Self.install(["big", "small"], from: fixture.catalog, store: storeDirectory.url)
        #expect(summary.installed.count == snapshot.manifest.packs.count)
        try Self.expectInstalled(["big/music.bin", "big/level.json", "small/map.json"], fixture: fixture, store: store, snapshot: snapshot)

        // A bundled copy: its packs are read from disk even though the catalog URL is a server.
        let bundledStore = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: bundledStore.url)
            let engine = try TransferEngine()
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: engine, bundledCatalog: fixture.catalog)
            let snapshot = try await client.refresh()
            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: engine, bundledCatalog: fixture.catalog)
                .install(try snapshot.packs(forTags: ["big"]), from: snapshot)
            await server.waitUntilIdle()
            #expect(summary.fromBundle.count == snapshot.lookup.packs(forTags: ["big"]).count)
            #expect(server.requests().filter { $0.path.hasPrefix("/packs/") }.isEmpty)
            try Self.expectInstalled(["big/music.bin"], fixture: fixture, store: store, snapshot: snapshot)
        }
    }

    @Test(arguments: ["../evil.txt", "symlink"])
    func aHostilePackIsRefusedAndLeavesNothingBehind(_ kind: String) async throws {
        let root = try TemporaryDirectory(prefix: "odr-hostile")
        var zip = ZipFixture()
        let payload = Data("owned\n".utf8)
        if kind == "symlink" {
            zip.add("link", Data("/etc/passwd".utf8), mode: 0o120777)
        } else {
            zip.add(kind, payload)
        }
        let (archive, expectations) = zip.build()
        let id = ContentHash.sha256Hex(of: archive)
        // An honest-looking manifest: it names a safe entry, but the archive holds something else.
        let entry = expectations[0]
        let safeName = kind == "symlink" ? "link" : "evil.txt"
        let manifest = VersionManifest(
            catalogID: "hostile", version: 1,
            tags: [TagRecord(name: "t", preservationPriority: 0.5, packs: [id], downloadBytes: Int64(archive.count), installedBytes: entry.size)],
            initialInstallTags: [], prefetchOrder: [],
            packs: [PackRecord(id: id, tags: ["t"], archiveBytes: Int64(archive.count), installedBytes: entry.size, entryCount: 1)],
            files: [FileRecord(path: safeName, pack: id, entry: safeName, sha256: entry.sha256, storedSize: entry.storedSize,
                               size: entry.size, headerOffset: 0, method: .stored)])
        let index = CatalogIndex(id: "hostile", serial: 1, distributions: ["live": 1],
                                 versions: [.init(number: 1, manifest: "versions/1.json")])
        let catalog = root.appending("catalog")
        try FileManager.default.createDirectory(at: catalog.appending(path: "versions"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: catalog.appending(path: "packs"), withIntermediateDirectories: true)
        try index.encoded().write(to: catalog.appending(path: "catalog.json"))
        try manifest.encoded().write(to: catalog.appending(path: "versions/1.json"))
        try archive.write(to: catalog.appending(path: "packs/\(id).zip"))
        let storeURL = root.appending("deep/store")

        try await withTestServer(root: catalog) { server in
            let error = await #expect(throws: ResourceError.self) {
                _ = try await Self.install(["t"], from: server.baseURL, store: storeURL)
            }
            #expect(error?.code == .integrity)
            let cause = try #require(error?.cause as? FormatError)
            #expect(cause.code == (kind == "symlink" ? .unsupportedEntryType : .unsafeEntryName))
        }
        let store = try ResourceStore(directory: storeURL)
        #expect(try store.installedPackIDs().isEmpty)
        // Nothing in packs/ or staging/, and nothing written next to the store (its database,
        // locks and the accepted manifest's compact copy are the store's own).
        let files = root.allFiles().filter {
            !$0.hasPrefix("catalog/") && !$0.hasPrefix("deep/store/store.sqlite") && !$0.hasPrefix("deep/store/locks/")
                && !$0.hasPrefix("deep/store/manifests/")
        }
        #expect(files.isEmpty, "\(files)")
    }

    @Test func aNewVersionDownloadsOnlyTheChangedPacks() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 300_000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, v1, _) = try await Self.install(["small", "big"], from: server.baseURL, store: storeDirectory.url)
            try fixture.write("small/notes.txt", Data("new notes\n".utf8))
            try await fixture.build()
            server.clearRequests()
            let engine = try TransferEngine()
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: engine)
            let v2 = try await client.refresh()
            #expect(v2.version == 2)
            let changed = Set(v2.manifest.packs.map(\.id)).subtracting(v1.manifest.packs.map(\.id))
            #expect(!changed.isEmpty)
            let summary = try await PackInstaller(store: store, transport: engine)
                .install(try v2.packs(forTags: ["small", "big"]), from: v2)
            await server.waitUntilIdle()
            let fetched = Set(server.requests().map(\.path).filter { $0.hasPrefix("/packs/") })
            #expect(fetched == Set(changed.map { "/packs/\($0).zip" }))
            #expect(Set(summary.installed) == changed)
            // The replaced pack is now superseded: first in line for purging.
            let superseded = try store.packs().filter(\.isSuperseded).map(\.id)
            #expect(Set(superseded) == Set(v1.manifest.packs.map(\.id)).subtracting(v2.manifest.packs.map(\.id)))
            #expect(try Data(contentsOf: store.url(forResource: "small/notes.txt", in: v2)) == Data("new notes\n".utf8))
        }
    }
}
