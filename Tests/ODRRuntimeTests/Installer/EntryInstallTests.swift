import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Entry-level installs against a real loopback server: only the entries a store lacks travel, as
/// byte ranges; bad bytes, servers without ranges, tampered installed files and full disks each
/// end in a typed error or a correct install, never in wrong files.
struct EntryInstallTests {
    /// A catalog with one tag `level` of `count` incompressible (stored) files of `size` bytes,
    /// `level/file-00.bin` ..., built as version 1.
    static func levelFixture(count: Int = 8, size: Int = 64 << 10) async throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: #"{ "catalogID": "delta", "tags": { "level": { "include": ["level"] } } }"#)
        for index in 0..<count {
            try fixture.write(name(index), deterministicBytes(count: size, seed: UInt64(100 + index)))
        }
        try await fixture.build()
        return fixture
    }

    static func name(_ index: Int) -> String { "level/file-\(index < 10 ? "0" : "")\(index).bin" }

    /// Installs the current version's `level` tag into `store` over `catalogURL`.
    static func installLevel(store: ResourceStore, catalogURL: URL, configure: (inout PackInstaller) -> Void = { _ in })
        async throws -> (CatalogSnapshot, InstallSummary) {
        let engine = try TransferEngine()
        let snapshot = try await CatalogClient(catalogURL: catalogURL, store: store, transport: engine).refresh()
        var installer = PackInstaller(store: store, transport: engine)
        configure(&installer)
        let summary = try await installer.install(try snapshot.packs(forTags: ["level"]), from: snapshot)
        return (snapshot, summary)
    }

    static func expectFiles(_ fixture: CatalogFixture, count: Int, store: ResourceStore, snapshot: CatalogSnapshot) throws {
        for index in 0..<count {
            let url = try store.url(forResource: name(index), in: snapshot)
            #expect(try Data(contentsOf: url) == fixture.contents(of: name(index)), "\(name(index))")
        }
    }

    static func inode(_ url: URL) throws -> UInt64? {
        (try FileManager.default.attributesOfItem(atPath: url.path)[.systemFileNumber] as? NSNumber)?.uint64Value
    }

    /// A manager over `server` (no free-space watermark) that installed `tag` with a request it ended.
    static func manager(installing tag: String, from server: CatalogServer, into directory: TemporaryDirectory) async throws -> ResourceManager {
        var configuration = ResourceManager.Configuration(catalogURL: server.baseURL, storeDirectory: directory.url)
        configuration.freeSpaceWatermark = 0
        let manager = try ResourceManager(configuration: configuration)
        try await manager.prepare()
        let first = ResourceRequest(tags: [tag], manager: manager)
        try await first.beginAccessingResources()
        try first.endAccessingResources()
        return manager
    }

    @Test func anUpdateDownloadsOnlyTheChangedFileAsOneRange() async throws {
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (v1, _) = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            let changed = deterministicBytes(count: 64 << 10, seed: 999)
            try fixture.write(Self.name(3), changed)
            try await fixture.build()
            server.clearRequests()

            let engine = try TransferEngine()
            let v2 = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: engine).refresh()
            let pack = try #require(v2.packs(forTags: ["level"]).first)
            let entry = try #require(v2.lookup.expectedEntries(inPack: pack.id).first { $0.name == Self.name(3) })
            // What the store reports it would download is what then travels.
            let planned = try PackInstaller(store: store, transport: engine).downloadBytes(of: [pack], in: v2)[pack.id]
            let summary = try await PackInstaller(store: store, transport: engine).install([pack], from: v2)
            await server.waitUntilIdle()

            let packRequests = server.requests().filter { $0.path.hasPrefix("/packs/") }
            #expect(packRequests.count == 1)
            #expect(packRequests.allSatisfy { $0.range != nil && $0.status == 206 })
            let sent = packRequests.reduce(0) { $0 + $1.bytesSent }
            // The entry's local header and data, nothing more (it is not the last entry).
            #expect(sent > Int(entry.storedSize) && sent < Int(entry.storedSize) + 512, "\(sent) bytes for a \(entry.storedSize)-byte entry")
            #expect(summary.downloadedBytes == Int64(sent))
            #expect(planned == Int64(sent))
            #expect(summary.fetchedFiles == 1 && summary.reusedFiles == 7 && summary.requests == 1)
            try Self.expectFiles(fixture, count: 8, store: store, snapshot: v2)
            // Unchanged files are the old pack's files, linked, not copies.
            let old = try #require(v1.packs(forTags: ["level"]).first)
            #expect(try Self.inode(store.packURL(id: old.id).appending(path: Self.name(0)))
                    == Self.inode(store.packURL(id: pack.id).appending(path: Self.name(0))))
            #expect(try store.verify().isEmpty)
            #expect(directory.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
        }
    }

    @Test func aTamperedInstalledFileIsNotReused() async throws {
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (v1, _) = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            // Someone changes an installed file behind the store's back, keeping its size.
            let victim = try store.url(forResource: Self.name(5), in: v1)
            chmod(victim.path, 0o644)
            var bytes = try Data(contentsOf: victim)
            bytes[100] ^= 0xFF
            try bytes.write(to: victim)
            try fixture.write(Self.name(1), deterministicBytes(count: 64 << 10, seed: 4242))
            try await fixture.build()

            let (v2, summary) = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            #expect(summary.fetchedFiles == 2, "the changed file and the tampered one travel")
            #expect(summary.reusedFiles == 6)
            try Self.expectFiles(fixture, count: 8, store: store, snapshot: v2)
            #expect(try Self.inode(victim) != Self.inode(store.url(forResource: Self.name(5), in: v2)))
        }
    }

    @Test func aCorruptRangeIsRefusedAndOnlyThatEntryIsFetchedAgain() async throws {
        // Entry 1 is small (its range is shorter than the fault's offset, so it arrives intact);
        // entry 6 is large and far from it, so the two changes are two ranges.
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            _ = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            try fixture.write(Self.name(1), Data("a small change\n".utf8))
            try fixture.write(Self.name(6), deterministicBytes(count: 64 << 10, seed: 777))
            try await fixture.build()
            let engine = try TransferEngine()
            let v2 = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: engine).refresh()
            let pack = try #require(v2.packs(forTags: ["level"]).first)
            server.clearRequests()
            server.injectFaults(.corrupt(atOffset: 20_000), path: "/packs/\(pack.id).zip")
            var installer = PackInstaller(store: store, transport: engine)
            installer.maximumConcurrentRanges = 1
            let error = await #expect(throws: ResourceError.self) { try await installer.install([pack], from: v2) }
            #expect(error?.code == .integrity)
            #expect(try store.pack(id: pack.id)?.isInstalled != true)
            #expect(throws: ResourceError.self) { try store.url(forResource: Self.name(6), in: v2) }
            await server.waitUntilIdle()
            #expect(server.requests().filter { $0.path.hasPrefix("/packs/") }.count == 2)

            server.clearRequests()
            let summary = try await installer.install([pack], from: v2)
            await server.waitUntilIdle()
            let again = server.requests().filter { $0.path.hasPrefix("/packs/") }
            let entry6 = try #require(v2.lookup.expectedEntries(inPack: pack.id).first { $0.name == Self.name(6) })
            #expect(again.count == 1, "\(again)")
            #expect(again.first?.range?.hasPrefix("bytes=\(entry6.headerOffset)-") == true, "\(again)")
            #expect(summary.fetchedFiles == 1 && summary.resumedBytes > 0)
            try Self.expectFiles(fixture, count: 8, store: store, snapshot: v2)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func aDamagedEntryInAWholeDownloadCostsOnlyTheRestNextTime() async throws {
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let engine = try TransferEngine()
            let v1 = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: engine).refresh()
            let pack = try #require(v1.packs(forTags: ["level"]).first)
            let entries = v1.lookup.expectedEntries(inPack: pack.id).sorted { $0.headerOffset < $1.headerOffset }
            // One flipped byte inside entry 6's data, in the first (whole-archive) download.
            server.injectFaults(.corrupt(atOffset: Int(entries[6].headerOffset) + 1000), path: "/packs/\(pack.id).zip")
            let error = await #expect(throws: ResourceError.self) {
                try await PackInstaller(store: store, transport: engine).install([pack], from: v1)
            }
            #expect(error?.code == .integrity)
            #expect(try store.pack(id: pack.id)?.isInstalled != true)

            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: engine).install([pack], from: v1)
            await server.waitUntilIdle()
            // Entries 0-5 were verified before the damaged one and stayed: one range from entry 6 on.
            let again = server.requests().filter { $0.path.hasPrefix("/packs/") }
            #expect(again.count == 1 && again.first?.range?.hasPrefix("bytes=\(entries[6].headerOffset)-") == true, "\(again)")
            #expect(summary.fetchedFiles == 2)
            try Self.expectFiles(fixture, count: 8, store: store, snapshot: v1)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func aServerThatIgnoresRangesGetsOneWholeDownloadAndTheUpdateInstalls() async throws {
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        var packID = ""
        let log = try await withPlainHTTPServer(serving: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            _ = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            try fixture.write(Self.name(2), deterministicBytes(count: 64 << 10, seed: 31337))
            try await fixture.build()
            // This server validates by Last-Modified alone, to the second: date the new catalog.json
            // later, or a refresh within the same second would be told it is unchanged.
            try FileManager.default.setAttributes([.modificationDate: Date().addingTimeInterval(5)],
                                                  ofItemAtPath: fixture.catalog.appending(path: "catalog.json").path)

            let (v2, summary) = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            let pack = try #require(v2.packs(forTags: ["level"]).first)
            packID = pack.id
            // The range was answered with the whole file (200): nothing of it was used; the pack was
            // then fetched whole, once, and every entry checked.
            #expect(summary.downloadedBytes == pack.archiveBytes)
            #expect(summary.requests == 1)
            try Self.expectFiles(fixture, count: 8, store: store, snapshot: v2)
            #expect(try store.verify().isEmpty)
            #expect(directory.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
        }
        // Two GETs of the new pack: the range (answered whole, cut off at once) and the whole archive.
        #expect(log.components(separatedBy: "\"GET /packs/\(packID).zip ").count - 1 == 2, "\(log)")
    }

    @Test func aPackInUseKeepsItsFilesWhileTheNewVersionAssembles() async throws {
        let fixture = try await Self.levelFixture(count: 4)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let manager = try ResourceManager(configuration: .init(catalogURL: server.baseURL, storeDirectory: directory.url))
            try await manager.prepare()
            let request = ResourceRequest(tags: ["level"], manager: manager)
            try await request.beginAccessingResources()
            let oldFile = try #require(request.url(forResource: "file-00", withExtension: "bin", subdirectory: "level"))
            let oldPack = try #require(manager.store.installedPackIDs().first)

            try fixture.write(Self.name(3), deterministicBytes(count: 64 << 10, seed: 5))
            try await fixture.build()
            let (v2, summary) = try await Self.installLevel(store: manager.store, catalogURL: server.baseURL)
            #expect(summary.reusedFiles == 3)
            // The old pack is superseded but in use: its files stay, and purging cannot take it.
            #expect(try Data(contentsOf: oldFile) == fixture.contents(of: Self.name(0)))
            #expect(try !manager.purgePlan(bytes: 1 << 40).deletions.map(\.packID).contains(oldPack))
            #expect(try manager.store.installedPackIDs().contains(oldPack))
            #expect(try Data(contentsOf: oldFile) == fixture.contents(of: Self.name(0)))

            // Once its request ends it can go; the new pack's linked files stay readable.
            try request.endAccessingResources()
            #expect(try manager.purgePlan(bytes: 1 << 40).deletions.map(\.packID).contains(oldPack))
            try await manager.store.removePack(id: oldPack, reason: .superseded)
            #expect(!FileManager.default.fileExists(atPath: oldFile.path))
            try Self.expectFiles(fixture, count: 4, store: manager.store, snapshot: v2)
        }
    }

    @Test func theManagerReportsAndShowsTheDeltaItDownloads() async throws {
        let fixture = try await Self.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let manager = try await Self.manager(installing: "level", from: server, into: directory)
            #expect(try manager.downloadSize(forTags: ["level"]) == 0)

            try fixture.write(Self.name(5), deterministicBytes(count: 64 << 10, seed: 55))
            try await fixture.build()
            #expect(try await manager.checkForUpdates() == 2)
            #expect(manager.currentVersion == 2)
            let v2 = try fixture.manifest(2)
            let entries = try #require(v2.packs.first.map { v2.expectedEntries(inPack: $0.id) }).sorted { $0.headerOffset < $1.headerOffset }
            let changed = try #require(entries.firstIndex { $0.name == Self.name(5) })
            let range = entries[changed + 1].headerOffset - entries[changed].headerOffset
            #expect(try manager.downloadSize(forTags: ["level"]) == range)
            #expect(manager.gauge().first { $0.name == "level" }?.downloadBytes == range)

            // The request's progress counts the pack's archive bytes; the entries reused from the
            // installed version count as done as soon as the plan is made, so only the changed
            // entry's bytes remain to arrive.
            let pack = try #require(v2.packs.first)
            let reused = entries.filter { $0.name != Self.name(5) }.reduce(Int64(0)) { $0 + $1.storedSize }
            let second = ResourceRequest(tags: ["level"], manager: manager)
            let updates = second.progressUpdates
            async let begin: Void = second.beginAccessingResources()
            var values: [ResourceRequest.ProgressSnapshot] = []
            for await update in updates { values.append(update) }
            try await begin
            #expect(second.progress.totalUnitCount == pack.archiveBytes + 1)
            #expect(second.progress.fractionCompleted == 1)
            let firstCounted = try #require(values.first { $0.completedBytes > 0 })
            #expect(firstCounted.completedBytes >= reused, "reused entries count as done before any byte arrives")
            #expect(values.last?.completedBytes == pack.archiveBytes)
            let url = try #require(second.url(forResource: Self.name(5)))
            #expect(try Data(contentsOf: url) == fixture.contents(of: Self.name(5)))
        }
    }

    @Test(.enabled(if: SmallDisk.isAvailable, "needs root to mount a small tmpfs"))
    func aFullDiskDuringAssemblyIsOutOfSpaceAndLeavesNothing() async throws {
        let fixture = try await Self.levelFixture(count: 6, size: 1 << 20)
        let disk = try SmallDisk(bytes: 3 << 20)
        defer { disk.unmount() }
        try await withTestServer(root: fixture.catalog) { server in
            let storeURL = disk.url.appending(path: "store")
            let store = try ResourceStore(directory: storeURL)
            let error = await #expect(throws: ResourceError.self) {
                _ = try await Self.installLevel(store: store, catalogURL: server.baseURL)
            }
            #expect(error?.code == .outOfSpace, "\(String(describing: error))")
            #expect(try store.installedPackIDs().isEmpty)
            let staging = try FileManager.default.contentsOfDirectory(atPath: storeURL.appending(path: "staging").path)
            #expect(staging.isEmpty, "\(staging)")
            #expect(try store.verify().isEmpty)
        }
    }
}
