import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Large files update by their changed chunks, against a real loopback server, real SQLite, and
/// catalogs built by the builder with a small `limits.chunkThreshold`: only chunks the store does
/// not hold travel, as byte ranges; bad bytes from the server end in `integrity` with nothing
/// installed and the next attempt fetching only what is missing; a damaged held chunk is fetched.
struct ChunkedInstallTests {
    static let big = "world/world.pak"
    static let text = "world/world.db"
    static let small = "world/readme.txt"

    /// A catalog with one tag `world`: an incompressible (stored) file of `bigBytes`, a text-like
    /// (deflated) file of `textBytes` (none for 0), and a small file; files of 1 MiB and more are
    /// chunked (average chunk 128 KiB).
    static func fixture(bigBytes: Int = 3 << 20, textBytes: Int = 0) async throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: #"""
            { "catalogID": "chunks", "tags": { "world": { "include": ["world"] } }, "limits": { "chunkThreshold": "1 MiB" } }
            """#)
        try fixture.write(big, deterministicBytes(count: bigBytes, seed: 11))
        if textBytes > 0 { try fixture.write(text, textLike(count: textBytes, seed: 12)) }
        try fixture.write(small, Data("hello\n".utf8))
        try await fixture.build()
        return fixture
    }

    /// Lines of words from a small vocabulary: compresses like a text database.
    static func textLike(count: Int, seed: UInt64) -> Data {
        var generator = SeededGenerator(seed: seed)
        let words = ["level", "tile", "door", "key", "enemy", "spawn", "health", "quest", "chest", "gold", "npc", "trigger"]
        var text = ""
        while text.utf8.count < count {
            text += words[Int.random(in: 0..<words.count, using: &generator)] + "=\(Int.random(in: 0..<1000, using: &generator))"
            text += Int.random(in: 0..<8, using: &generator) == 0 ? "\n" : " "
        }
        return Data(text.utf8.prefix(count))
    }

    /// `data` with `bytes` at `offset`: inserted, or overwriting as many bytes when `overwrite`.
    static func edit(_ data: Data, at offset: Int, _ bytes: Data, overwrite: Bool) -> Data {
        var result = data
        if overwrite {
            result.replaceSubrange(offset..<(offset + bytes.count), with: bytes)
        } else {
            result.insert(contentsOf: bytes, at: offset)
        }
        return result
    }

    static func refresh(_ store: ResourceStore, _ server: CatalogServer) async throws -> (CatalogSnapshot, PackRecord) {
        let snapshot = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: TransferEngine()).refresh()
        return (snapshot, try #require(snapshot.packs(forTags: ["world"]).first))
    }

    /// Writes `contents` to the asset `path`, builds the fixture's next version and refreshes
    /// `store` to it: the version and its pack of `world`.
    static func publish(_ path: String, _ contents: Data, of fixture: CatalogFixture,
                        refreshing store: ResourceStore, from server: CatalogServer) async throws -> (CatalogSnapshot, PackRecord) {
        try fixture.write(path, contents)
        try await fixture.build()
        return try await refresh(store, server)
    }

    /// Refreshes and installs the current version's pack of `world`: the version later ones update.
    @discardableResult
    static func installCurrentVersion(_ store: ResourceStore, _ server: CatalogServer) async throws -> (CatalogSnapshot, PackRecord) {
        let (snapshot, pack) = try await refresh(store, server)
        _ = try await PackInstaller(store: store, transport: TransferEngine()).install([pack], from: snapshot)
        return (snapshot, pack)
    }

    static func packRequests(_ server: CatalogServer) -> [ServedRequest] { server.requests().filter { $0.path.hasPrefix("/packs/") } }

    static func file(_ path: String, of fixture: CatalogFixture, in store: ResourceStore, _ snapshot: CatalogSnapshot) throws -> Bool {
        try Data(contentsOf: store.url(forResource: path, in: snapshot)) == fixture.contents(of: path)
    }

    /// The chunks of `path` in `snapshot`, with their positions in the archive.
    static func chunks(of path: String, in snapshot: CatalogSnapshot) throws -> [ChunkedEntryPlan.Chunk] {
        let pack = try #require(snapshot.packs(forTags: ["world"]).first)
        let record = try #require(snapshot.lookup.files(inPack: pack.id).first { $0.path == path })
        let entry = PackEntryExpectation(name: record.entry, method: record.method, storedSize: record.storedSize, size: record.size,
                                         headerOffset: record.headerOffset, sha256: record.sha256)
        return try #require(ChunkedEntryPlan.locate(record.chunks, in: entry))
    }

    @Test func anUpdateOfALargeFileMovesOnlyItsChangedChunksAsRanges() async throws {
        let fixture = try await Self.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (v1, pack1) = try await Self.installCurrentVersion(store, server)
            #expect(try Self.chunks(of: Self.big, in: v1).count > 8)

            // 10 KiB inserted at a quarter, 1000 bytes overwritten at three quarters.
            var changed = try fixture.contents(of: Self.big)
            changed = Self.edit(changed, at: 3 << 18, deterministicBytes(count: 1000, seed: 99), overwrite: true)
            changed = Self.edit(changed, at: 1 << 18, deterministicBytes(count: 10 << 10, seed: 98), overwrite: false)
            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: store, from: server)
            server.clearRequests()

            let installer = PackInstaller(store: store, transport: try TransferEngine())
            let planned = try installer.downloadBytes(of: [pack2], in: v2)[pack2.id]
            let summary = try await installer.install([pack2], from: v2)
            await server.waitUntilIdle()

            let requests = Self.packRequests(server)
            let sent = requests.reduce(0) { $0 + $1.bytesSent }
            #expect(requests.allSatisfy { $0.range != nil && $0.status == 206 }, "\(requests)")
            // Each change touches a chunk or two (512 KiB at most each): far below the 3 MiB file.
            #expect(sent > 10 << 10 && sent < 2 << 20, "\(sent) bytes for a 10 KiB insertion and a 1000-byte change")
            #expect(summary.downloadedBytes == Int64(sent) && planned == Int64(sent))
            #expect(summary.reusedBytes > 1 << 20 && summary.fetchedFiles == 1 && summary.reusedFiles == 1)
            #expect(try Self.file(Self.big, of: fixture, in: store, v2) && Self.file(Self.small, of: fixture, in: store, v2))
            #expect(try store.verify().isEmpty)
            #expect(directory.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
            // The new pack lends its chunks in turn.
            let table = try Self.chunks(of: Self.big, in: v2)
            #expect(try store.heldChunks(withSHA256: table.map(\.sha256), excluding: pack1.id).count == Set(table.map(\.sha256)).count)
        }
    }

    @Test func aTextFileWithSmallEditsMovesFewChunksOfItsDeflatedEntry() async throws {
        let fixture = try await Self.fixture(bigBytes: 16, textBytes: 4 << 20)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (v1, pack1) = try await Self.installCurrentVersion(store, server)
            let record = try #require(v1.lookup.files(inPack: pack1.id).first { $0.path == Self.text })
            #expect(record.method == .deflate && record.chunks.count > 8)

            var changed = try fixture.contents(of: Self.text)
            for offset in [300_000, 2_000_000, 3_900_000] {
                changed = Self.edit(changed, at: offset, Data(String(repeating: "x", count: 100).utf8), overwrite: true)
            }
            let (v2, pack2) = try await Self.publish(Self.text, changed, of: fixture, refreshing: store, from: server)
            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            await server.waitUntilIdle()
            let sent = Self.packRequests(server).reduce(0) { $0 + $1.bytesSent }
            let stored = try #require(v2.lookup.files(inPack: pack2.id).first { $0.path == Self.text }).storedSize
            #expect(sent < Int(stored) / 2, "\(sent) of \(stored) stored bytes for three edits of 100 bytes")
            #expect(summary.downloadedBytes == Int64(sent))
            #expect(try Self.file(Self.text, of: fixture, in: store, v2))
            #expect(try store.verify().isEmpty)
        }
    }

    @Test func withoutAHeldChunkTheFileDownloadsAsBefore() async throws {
        let fixture = try await Self.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            // An empty store holds no chunk: the pack is one plain GET, as for any pack.
            let (v1, pack) = try await Self.refresh(store, server)
            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack], from: v1)
            await server.waitUntilIdle()
            let requests = Self.packRequests(server)
            #expect(requests.count == 1 && requests.first?.range == nil, "\(requests)")
            #expect(summary.downloadedBytes == pack.archiveBytes && summary.requests == 1)
            #expect(!directory.allFiles().contains { $0.contains(".chunked") })
        }
    }

    /// The plan of chunked entry `path` of `pack` in `snapshot` from what `store` holds.
    static func plan(of path: String, _ pack: PackRecord, in snapshot: CatalogSnapshot, store: ResourceStore, directory: TemporaryDirectory) throws -> ChunkedEntryPlan {
        let installer = PackInstaller(store: store, transport: try TransferEngine())
        let entry = try #require(snapshot.lookup.expectedEntries(inPack: pack.id).first { $0.name == path })
        return try #require(try installer.chunkedEntries([entry], tables: installer.chunkTables(of: pack, in: snapshot.lookup), of: pack,
                                                          journal: StagingJournal(url: directory.url.appending(path: "unused")),
                                                          policy: RangePolicy(), source: snapshot.catalogURL, opening: false).first?.plan)
    }

    /// The server flips a byte inside a chunk of the second range: `integrity`, nothing installed, the
    /// chunks before it kept; the next attempt fetches neither them nor the first range again.
    @Test func aChunkThatDoesNotMatchItsDigestIsRefusedAndTheNextAttemptFetchesOnlyTheRest() async throws {
        let fixture = try await Self.fixture(bigBytes: 4 << 20)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            try await Self.installCurrentVersion(store, server)
            // A small change near the start and 1.5 MiB of new bytes after the middle: two ranges,
            // the second longer than the first.
            var changed = try fixture.contents(of: Self.big)
            changed = Self.edit(changed, at: 200_000, deterministicBytes(count: 500, seed: 5), overwrite: true)
            changed = Self.edit(changed, at: 2_200_000, deterministicBytes(count: 1_500_000, seed: 6), overwrite: true)
            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: store, from: server)
            let plan = try Self.plan(of: Self.big, pack2, in: v2, store: store, directory: directory)
            try #require(plan.fetches.count == 2 && plan.fetches[1].range.count > plan.fetches[0].range.count + 300_000)
            server.clearRequests()
            // Past the first response's end: the fault waits for the second, 300 KB into it.
            let faultOffset = plan.fetches[0].range.count + 300_000
            server.injectFaults(.corrupt(atOffset: faultOffset), path: "/packs/\(pack2.id).zip")
            let error = await #expect(throws: ResourceError.self) {
                try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            }
            #expect(error?.code == .integrity)
            #expect(try store.pack(id: pack2.id)?.isInstalled != true)
            #expect(throws: ResourceError.self) { try store.url(forResource: Self.big, in: v2) }
            await server.waitUntilIdle()
            #expect(Self.packRequests(server).count == 2, "the refused range ends the attempt")
            // The chunks verified before the refused one are on disk, counted in the next plan.
            let next = try PackInstaller(store: store, transport: TransferEngine()).downloadBytes(of: [pack2], in: v2)[pack2.id] ?? 0
            #expect(next < Int64(plan.fetches[1].range.count) - 200_000, "\(next) bytes left of \(plan.fetchBytes)")

            // The work file and its journal line survive the failed attempt.
            let work = directory.url.appending(path: "staging/\(pack2.id).chunked/\(plan.entry.headerOffset)")
            let journal = try String(contentsOf: directory.url.appending(path: "staging/\(pack2.id).journal"), encoding: .utf8)
            #expect(FileManager.default.fileExists(atPath: work.path) && journal.contains("chunks "), "\(journal)")

            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            await server.waitUntilIdle()
            let again = Self.packRequests(server)
            let sent = again.reduce(0) { $0 + $1.bytesSent }
            #expect(again.count == 1 && summary.downloadedBytes == Int64(sent) && Int64(sent) == next, "\(again)")
            #expect(summary.resumedBytes > 200_000)
            #expect(try Self.file(Self.big, of: fixture, in: store, v2))
            #expect(try store.verify().isEmpty)
        }
    }

    /// A work file damaged between two attempts: the recorded chunks are hashed again, the file is
    /// cut at the first that does not match, and the chunks from there on are fetched again.
    @Test func aDamagedWorkFileIsCutAtItsFirstBadChunk() async throws {
        let fixture = try await Self.fixture(bigBytes: 4 << 20)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            try await Self.installCurrentVersion(store, server)
            let changed = Self.edit(try fixture.contents(of: Self.big), at: 1_000_000, deterministicBytes(count: 1_500_000, seed: 9), overwrite: true)
            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: store, from: server)
            let plan = try Self.plan(of: Self.big, pack2, in: v2, store: store, directory: directory)
            // Cut near the end of the one range: most chunks are written before it fails.
            server.injectFaults(.corrupt(atOffset: plan.fetches[0].range.count - 1000), path: "/packs/\(pack2.id).zip")
            await #expect(throws: ResourceError.self) { try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2) }
            let work = directory.url.appending(path: "staging/\(pack2.id).chunked/\(plan.entry.headerOffset)")
            let written = try Data(contentsOf: work)
            #expect(written.count > 1_000_000)
            // Damage a byte inside the first chunk written (in the entry's first megabyte, a chunk from disk).
            var damaged = written
            damaged[100] ^= 0xFF
            try damaged.write(to: work)

            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            await server.waitUntilIdle()
            // Nothing of the large file was kept (the damaged chunk is its first); only the small
            // file verified by the first attempt (6 bytes).
            #expect(summary.resumedBytes == 6)
            #expect(try Self.file(Self.big, of: fixture, in: store, v2))
            #expect(try store.verify().isEmpty)
        }
    }

    /// The server sends a deflated chunk whose last byte is changed, so it no longer ends at a
    /// flush point: `integrity` (with the format's `corrupt-data` as cause), nothing installed.
    @Test func aDeflatedChunkThatDoesNotEndAtAFlushPointIsRefused() async throws {
        let fixture = try await Self.fixture(bigBytes: 16, textBytes: 3 << 20)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            try await Self.installCurrentVersion(store, server)
            let changed = Self.edit(try fixture.contents(of: Self.text), at: 1_000_000, Data(String(repeating: "y", count: 100).utf8), overwrite: true)
            let (v2, pack2) = try await Self.publish(Self.text, changed, of: fixture, refreshing: store, from: server)
            let table = try Self.chunks(of: Self.text, in: v2)
            let installer = PackInstaller(store: store, transport: try TransferEngine())
            let plan = try Self.plan(of: Self.text, pack2, in: v2, store: store, directory: directory)
            let fetch = try #require(plan.fetches.first)
            // The last byte of the first fetched chunk: its flush marker's final 0xff.
            let markerEnd = Int(table[fetch.chunks.lowerBound].archive.upperBound - fetch.range.lowerBound) - 1
            server.clearRequests()
            server.injectFaults(.corrupt(atOffset: markerEnd), path: "/packs/\(pack2.id).zip")
            let error = await #expect(throws: ResourceError.self) { try await installer.install([pack2], from: v2) }
            #expect(error?.code == .integrity)
            #expect((error?.cause as? FormatError)?.code == .corruptData, "\(String(describing: error))")
            #expect(try store.pack(id: pack2.id)?.isInstalled != true)

            // The next attempt fetches the refused chunk's range again, and installs.
            server.clearRequests()
            _ = try await installer.install([pack2], from: v2)
            await server.waitUntilIdle()
            #expect(Self.packRequests(server).first?.range?.hasPrefix("bytes=\(fetch.range.lowerBound)-") == true)
            #expect(try Self.file(Self.text, of: fixture, in: store, v2))
        }
    }

    /// A held chunk on disk was changed behind the store's back: that chunk is fetched as its own
    /// range instead, the install succeeds, and the new file is right.
    @Test func aCorruptedHeldChunkIsFetchedInstead() async throws {
        let fixture = try await Self.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (v1, _) = try await Self.installCurrentVersion(store, server)
            // Someone flips a byte 2 MiB into the installed file, keeping its size.
            let victim = try store.url(forResource: Self.big, in: v1)
            chmod(victim.path, 0o644)
            var bytes = try Data(contentsOf: victim)
            bytes[2 << 20] ^= 0xFF
            try bytes.write(to: victim)
            // The new version changes the start of the file only.
            let changed = Self.edit(try fixture.contents(of: Self.big), at: 1000, Data("changed".utf8), overwrite: true)
            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: store, from: server)
            server.clearRequests()
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            await server.waitUntilIdle()
            let requests = Self.packRequests(server)
            let damaged = try #require(Self.chunks(of: Self.big, in: v2).first { $0.fileOffset <= 2 << 20 && 2 << 20 < $0.fileOffset + $0.size })
            #expect(requests.count == 2, "the changed chunk, then the damaged one: \(requests)")
            #expect(requests.contains { $0.range == "bytes=\(damaged.archive.lowerBound)-\(damaged.archive.upperBound - 1)" }, "\(requests)")
            #expect(summary.downloadedBytes == Int64(requests.reduce(0) { $0 + $1.bytesSent }))
            #expect(try Self.file(Self.big, of: fixture, in: store, v2))
        }
    }

    /// The connection closes in the middle of a chunk range: the transfer continues where the bytes
    /// stopped, each byte is used once, and the file is right.
    @Test func aRangeCutInTheMiddleContinuesWhereItStopped() async throws {
        let fixture = try await Self.fixture(bigBytes: 4 << 20)
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            try await Self.installCurrentVersion(store, server)
            let changed = Self.edit(try fixture.contents(of: Self.big), at: 1_000_000, deterministicBytes(count: 1_000_000, seed: 8), overwrite: true)
            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: store, from: server)
            let plan = try Self.plan(of: Self.big, pack2, in: v2, store: store, directory: directory)
            try #require(plan.fetches.count == 1 && plan.fetches[0].range.count > 900_000)
            server.clearRequests()
            server.injectFaults(.truncate(afterBytes: 500_000), path: "/packs/\(pack2.id).zip")
            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack2], from: v2)
            await server.waitUntilIdle()
            let requests = Self.packRequests(server)
            #expect(requests.count == 2, "\(requests)")
            #expect(requests.last?.range?.hasPrefix("bytes=\(plan.fetches[0].range.lowerBound + 500_000)-") == true, "\(requests)")
            // Each byte of the range was sent once, and each counts as downloaded where it arrived;
            // the bytes the continuation did not ask for again are resumed too.
            #expect(Int64(requests.reduce(0) { $0 + $1.bytesSent }) == plan.fetchBytes)
            #expect(summary.downloadedBytes == plan.fetchBytes)
            #expect(summary.resumedBytes == 500_000)
            #expect(try Self.file(Self.big, of: fixture, in: store, v2))
            #expect(try store.verify().isEmpty)
        }
    }

    /// The manager's sizes (`downloadSize(forTags:)`, the gauge) count only the chunks that travel,
    /// and the request that installs the update moves exactly that.
    @Test func theManagersSizesCountOnlyTheChunksNotHeld() async throws {
        let fixture = try await Self.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let manager = try await EntryInstallTests.manager(installing: "world", from: server, into: directory)

            try fixture.write(Self.big, Self.edit(try fixture.contents(of: Self.big), at: 2 << 20, Data("a small change".utf8), overwrite: true))
            try await fixture.build()
            #expect(try await manager.checkForUpdates() == 2)
            let size = try manager.downloadSize(forTags: ["world"])
            #expect(size > 0 && size < 1 << 20, "\(size) bytes for a 14-byte change in a 3 MiB file")
            #expect(manager.gauge().first { $0.name == "world" }?.downloadBytes == size)

            server.clearRequests()
            let second = ResourceRequest(tags: ["world"], manager: manager)
            try await second.beginAccessingResources()
            await server.waitUntilIdle()
            #expect(Int64(Self.packRequests(server).reduce(0) { $0 + $1.bytesSent }) == size)
            let url = try #require(second.url(forResource: "world", withExtension: "pak", subdirectory: "world"))
            #expect(try Data(contentsOf: url) == fixture.contents(of: Self.big))
            try second.endAccessingResources()
        }
    }

    /// A request holds the old version while the new one is assembled from its chunks: the old
    /// file keeps its bytes.
    @Test func theOldVersionStaysReadableWhileTheNewOneIsAssembledFromIt() async throws {
        let fixture = try await Self.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let manager = try ResourceManager(configuration: .init(catalogURL: server.baseURL, storeDirectory: directory.url))
            try await manager.prepare()
            let request = ResourceRequest(tags: ["world"], manager: manager)
            try await request.beginAccessingResources()
            let oldFile = try #require(request.url(forResource: "world", withExtension: "pak", subdirectory: "world"))
            let old = try fixture.contents(of: Self.big)

            let changed = Self.edit(old, at: 1 << 20, deterministicBytes(count: 4096, seed: 3), overwrite: false)

            let (v2, pack2) = try await Self.publish(Self.big, changed, of: fixture, refreshing: manager.store, from: server)
            // The size the manager reports is the chunks' ranges, not the file.
            let planned = try PackInstaller(store: manager.store, transport: TransferEngine()).downloadBytes(of: [pack2], in: v2)[pack2.id] ?? 0
            #expect(planned > 0 && planned < 1 << 20)
            let summary = try await PackInstaller(store: manager.store, transport: TransferEngine()).install([pack2], from: v2)
            #expect(summary.downloadedBytes == planned)
            #expect(try Data(contentsOf: oldFile) == old)
            #expect(try Self.file(Self.big, of: fixture, in: manager.store, v2))
            try request.endAccessingResources()
        }
    }
}
