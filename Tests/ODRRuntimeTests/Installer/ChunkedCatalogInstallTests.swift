import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Catalogs with chunked files (format 4, or 5 when split) install over real HTTP with this
/// runtime, which does not reuse chunks yet: a chunked file installs whole, checked against its
/// SHA-256 as any other.
struct ChunkedCatalogInstallTests {
    static let rules = """
        {
          "catalogID": "chunked-game",
          "tags": { "small": { "include": ["small"] }, "big": { "include": ["big"] } },
          "limits": { "chunkThreshold": "64 KiB" }
        }
        """
    static let paths = ["big/archive.pak", "big/world.json", "small/notes.txt"]

    static func fixture() throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: rules)
        try fixture.write("big/archive.pak", deterministicBytes(count: 700_000, seed: 23))
        var world = ""
        for i in 0..<20_000 { world += "{\"cell\": \(i), \"biome\": \"\(["sea", "forest", "desert"][i % 3])\", \"height\": \(i * 7 % 113)}\n" }
        try fixture.write("big/world.json", Data(world.utf8))
        try fixture.write("small/notes.txt", Data("notes\n".utf8))
        return fixture
    }

    static func sizes() throws -> FastCDC.Parameters { try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536) }

    @Test(arguments: [false, true])
    func aChunkedCatalogInstallsOverHTTP(split: Bool) async throws {
        let fixture = try Self.fixture()
        try await fixture.build(splitMetadata: split, chunkSizes: try Self.sizes())
        let manifest = try fixture.manifest(1)
        #expect(manifest.formatVersion == 4)
        let big = manifest.files.filter { $0.path.hasPrefix("big/") }
        #expect(big.count == 2 && big.allSatisfy { $0.chunks.count > 10 })
        #expect(Set(big.map(\.method)) == [.stored, .deflate])
        #expect(manifest.files.first { $0.path == "small/notes.txt" }?.chunks.isEmpty == true)
        if split {
            let entry = try #require(try fixture.index().version(1))
            #expect(try SplitManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: entry.manifest))).formatVersion == 5)
        }
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, snapshot, summary) = try await InstallerTests.install(["small", "big"], from: server.baseURL, store: storeDirectory.url)
            #expect(snapshot.version == 1)
            #expect(!summary.installed.isEmpty)
            try InstallerTests.expectInstalled(Self.paths, fixture: fixture, store: store, snapshot: snapshot)
            #expect(try store.verify().isEmpty)
        }
    }

    /// A chunked entry whose bytes were changed on the server is refused by the file's SHA-256, as
    /// before chunking: `integrity`, nothing installed.
    @Test func aTamperedChunkedEntryIsRefusedByTheFilesHash() async throws {
        let fixture = try Self.fixture()
        try await fixture.build(chunkSizes: try Self.sizes())
        let manifest = try fixture.manifest(1)
        let file = try #require(manifest.files.first { $0.path == "big/archive.pak" })
        let pack = fixture.catalog.appending(path: "packs/\(file.pack).zip")
        var bytes = try Data(contentsOf: pack)
        // Inside the third chunk of the stored entry: past its local header and two chunks.
        let offset = Int(file.headerOffset) + 30 + file.entry.utf8.count + Int(file.chunks[0].storedSize + file.chunks[1].storedSize) + 10
        bytes[offset] ^= 0xFF
        try bytes.write(to: pack)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let engine = try TransferEngine()
            let snapshot = try await CatalogClient(catalogURL: server.baseURL, store: store, transport: engine).refresh()
            let error = await #expect(throws: ResourceError.self) {
                try await PackInstaller(store: store, transport: engine).install(try snapshot.packs(forTags: ["big"]), from: snapshot)
            }
            #expect(error?.code == .integrity)
            #expect(throws: ResourceError.self) { try store.url(forResource: "big/archive.pak", in: snapshot) }
        }
    }
}
