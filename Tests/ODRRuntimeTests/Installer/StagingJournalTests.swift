import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The staging journal is outside input: whatever a damaged or crafted journal says, the next
/// fetch over loopback installs the right bytes, and only a line that fits its entry is used.
struct StagingJournalTests {
    /// The entry the crafted journals talk about, and how many of its bytes the partial file holds.
    static let cut = EntryInstallTests.name(3)
    static let heldBytes = 1000

    /// A journal that places the partial entry somewhere it cannot be (or names a path that is
    /// not a clean one), and validators that would inject a header: each is ignored.
    @Test(arguments: [
        "data 9223372036854775807 \(cut)\n",           // Int64.max: the sum with the size overflowed
        "data 9223372036854775000 \(cut)\n",
        "data 99999999999999999999999 \(cut)\n",       // does not fit in 64 bits
        "data -30 \(cut)\n",
        "data +30 \(cut)\n",
        "data 0 \(cut)\n",                             // inside an earlier entry
        "data 1099511627776 \(cut)\n",                 // past the archive
        "data 30 ../../../\(cut)\n",                   // a name that is not a clean path
        "data 30 /\(cut)\n",
        "data 30\n",
        String(repeating: "x", count: 1 << 20),        // one line of garbage, no newline
    ])
    func aCraftedJournalLineIsIgnoredAndTheFetchInstallsVerifiedBytes(line: String) async throws {
        let fixture = try await EntryInstallTests.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (snapshot, pack) = try await Self.snapshot(store: store, server: server)
            try Self.stage(fixture, pack: pack, journal: line, in: directory)

            let summary = try await PackInstaller(store: store, transport: TransferEngine()).install([pack], from: snapshot)
            #expect(summary.installed == [pack.id])
            // The cut entry started over: nothing of it was taken on the journal's word.
            #expect(summary.resumedBytes == 0)
            try EntryInstallTests.expectFiles(fixture, count: 8, store: store, snapshot: snapshot)
            #expect(try store.verify().isEmpty)
            #expect(!FileManager.default.fileExists(atPath: directory.appending("staging/\(pack.id).journal").path))
        }
    }

    /// The control: the same partial file with a journal line that fits is continued, not fetched
    /// again; validators that would break the request into two headers are not sent as `If-Range`.
    @Test(arguments: ["", "validators {\"entityTag\":\"\\\"x\\\"\\r\\nX-Injected: 1\"}\n"])
    func aJournalLineThatFitsItsEntryResumesIt(validators: String) async throws {
        let fixture = try await EntryInstallTests.levelFixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (snapshot, pack) = try await Self.snapshot(store: store, server: server)
            let entry = try #require(snapshot.lookup.expectedEntries(inPack: pack.id).first { $0.name == Self.cut })
            let dataOffset = try Self.dataOffset(of: entry, in: fixture.catalog.appending(path: pack.archivePath))
            try Self.stage(fixture, pack: pack, journal: validators + "data \(dataOffset) \(Self.cut)\n", in: directory)

            var installer = PackInstaller(store: store, transport: try TransferEngine())
            installer.rangePolicy = RangePolicy(requestCostBytes: 0)
            let summary = try await installer.install([pack], from: snapshot)
            #expect(summary.resumedBytes == Int64(Self.heldBytes))
            await server.waitUntilIdle()
            let ranges = server.requests().filter { $0.path.hasPrefix("/packs/") }.compactMap(\.range)
            #expect(ranges.contains { $0.hasPrefix("bytes=\(dataOffset + Int64(Self.heldBytes))-") }, "\(ranges)")
            // Other ranges may carry the validators the first response brought, never the crafted ones.
            #expect(!server.requests().contains { $0.ifRange?.hasPrefix("\"x\"") == true })
            try EntryInstallTests.expectFiles(fixture, count: 8, store: store, snapshot: snapshot)
            #expect(try store.verify().isEmpty)
        }
    }

    @Test(arguments: [
        ("data 4096 a/b.bin", StagingJournal.DataLine(dataOffset: 4096, name: "a/b.bin")),
        ("data 0 with space.bin", StagingJournal.DataLine(dataOffset: 0, name: "with space.bin")),
        ("data 9223372036854775808 a.bin", nil),
        ("data -1 a.bin", nil),
        ("data 1e3 a.bin", nil),
        ("data  12 a.bin", nil),
        ("data 12 a/../b", nil),
        ("data 12 ", nil),
        ("validators {}", nil),
    ] as [(String, StagingJournal.DataLine?)])
    func dataLinesParseOnlyWhenEveryFieldIsValid(line: String, expected: StagingJournal.DataLine?) {
        #expect(StagingJournal.DataLine(Substring(line)) == expected)
    }

    /// A deflated entry's kept archive bytes (`.odr-parts`): continued when they are right; refused
    /// with `integrity` when one byte is wrong, after which the next fetch takes the entry whole.
    @Test(arguments: [false, true])
    func aCutDeflatedEntryContinuesFromItsKeptBytesOnlyWhenTheyAreRight(damaged: Bool) async throws {
        let fixture = try CatalogFixture(rules: #"{ "catalogID": "parts", "tags": { "level": { "include": ["level"] } } }"#)
        let contents = Data(deterministicBytes(count: 2 << 20, seed: 2202).map { $0 & 0x0F })
        try fixture.write("level/map.bin", contents)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: directory.url)
            let (snapshot, pack) = try await Self.snapshot(store: store, server: server)
            let entry = try #require(snapshot.lookup.expectedEntries(inPack: pack.id).first)
            #expect(entry.method == .deflate)
            var kept = try Data(contentsOf: fixture.catalog.appending(path: pack.archivePath))[Int(entry.headerOffset)...].prefix(300_000)
            if damaged { kept[kept.startIndex + 200_000] ^= 0xFF }
            let part = directory.appending("staging/\(pack.id).d/.odr-parts/\(entry.headerOffset)")
            try FileManager.default.createDirectory(at: part.deletingLastPathComponent(), withIntermediateDirectories: true)
            try kept.write(to: part)

            let installer = PackInstaller(store: store, transport: try TransferEngine())
            if damaged {
                let error = await #expect(throws: ResourceError.self) { try await installer.install([pack], from: snapshot) }
                #expect(error?.code == .integrity)
                #expect(!FileManager.default.fileExists(atPath: part.path))
                #expect(try store.pack(id: pack.id)?.isInstalled != true)
            }
            server.clearRequests()
            let summary = try await installer.install([pack], from: snapshot)
            #expect(summary.resumedBytes == (damaged ? 0 : 300_000))
            await server.waitUntilIdle()
            let ranges = server.requests().filter { $0.path.hasPrefix("/packs/") }.map(\.range)
            #expect(ranges == [damaged ? nil : "bytes=\(entry.headerOffset + 300_000)-\(pack.archiveBytes - 1)"], "\(ranges)")
            #expect(try Data(contentsOf: store.url(forResource: "level/map.bin", in: snapshot)) == contents)
            #expect(try store.verify().isEmpty)
            #expect(directory.allFiles().filter { $0.hasPrefix("staging/") || $0.contains(".odr-parts") }.isEmpty)
        }
    }

    // MARK: Helpers

    static func snapshot(store: ResourceStore, server: CatalogServer) async throws -> (CatalogSnapshot, PackRecord) {
        let snapshot = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: TransferEngine()).refresh()
        let packs = try snapshot.packs(forTags: ["level"])
        #expect(packs.count == 1)
        return (snapshot, try #require(packs.first))
    }

    /// Leaves what an interrupted attempt would: the first ``heldBytes`` of ``cut`` in staging, and `journal`.
    static func stage(_ fixture: CatalogFixture, pack: PackRecord, journal: String, in directory: TemporaryDirectory) throws {
        let partial = directory.appending("staging/\(pack.id).d/\(cut)")
        try FileManager.default.createDirectory(at: partial.deletingLastPathComponent(), withIntermediateDirectories: true)
        try fixture.contents(of: cut).prefix(heldBytes).write(to: partial)
        try Data(journal.utf8).write(to: directory.appending("staging/\(pack.id).journal"))
    }

    /// Where `entry`'s data starts in the archive: after its local header's name and extra field.
    static func dataOffset(of entry: PackEntryExpectation, in archive: URL) throws -> Int64 {
        let bytes = try Data(contentsOf: archive)
        let header = Int(entry.headerOffset)
        let nameLength = Int(bytes[header + 26]) | Int(bytes[header + 27]) << 8
        let extraLength = Int(bytes[header + 28]) | Int(bytes[header + 29]) << 8
        return entry.headerOffset + 30 + Int64(nameLength + extraLength)
    }
}
