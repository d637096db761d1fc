import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The store's caches of metadata (compact manifests, split manifests, bins and tables) are
/// checked against what they are stored under before use; a damaged or replaced one is dropped,
/// fetched or re-derived again in the same call, and logged (`odr log`, kind `repair`).
struct StoreCacheTrustTests {
    /// `manifests/<sha>.odrm` replaced by the valid compact form of another manifest (here, one
    /// whose record of a path names another file's bytes): refused, the stored JSON read instead,
    /// the file written again, and a repair line logged. Before, the store served the other manifest.
    @Test func aCompactManifestPutInAnothersPlaceIsRefusedAndRewritten() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let root = try TemporaryDirectory(prefix: "odr-odrm")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: root.url)
        let folder = root.appending("manifests")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".odrm") }
        let name = try #require(files.first)
        #expect(files.count == 1)
        let digest = String(name.dropLast(".odrm".count))

        // Another manifest: the record of small/map.json points at the bytes of small/notes.txt.
        var other = snapshot.manifest
        var records = other.files
        let map = try #require(records.firstIndex { $0.path == "small/map.json" })
        let notes = try #require(records.first { $0.path == "small/notes.txt" })
        records[map] = FileRecord(path: records[map].path, pack: notes.pack, entry: notes.entry, sha256: notes.sha256, storedSize: notes.storedSize,
                                  size: notes.size, headerOffset: notes.headerOffset, method: notes.method, variant: notes.variant)
        other.files = records
        let otherJSON = try other.encoded()
        for forged in [try other.compactEncoded(), try other.compactEncoded(source: ContentHash.sha256Hex(of: otherJSON))] {
            try forged.write(to: folder.appending(path: name))
            let reopened = try ResourceStore(directory: root.url)
            let read = try #require(try reopened.manifest(catalogURL: fixture.catalog, version: snapshot.version))
            #expect(read.files.first { $0.path == "small/map.json" }?.sha256 != notes.sha256)
            #expect(read == snapshot.manifest)
            // Written again, recording what it stands for.
            #expect(try VersionManifest(compactFileAt: folder.appending(path: name), source: digest) == snapshot.manifest)
            #expect(try reopened.events().contains { $0.kind == .repair && $0.packID == "manifests/\(name)" })
            let url = try reopened.url(forResource: "small/map.json", in: snapshot)
            #expect(try Data(contentsOf: url) == fixture.contents(of: "small/map.json"))
        }
        #expect(try store.verify().isEmpty)
    }

    /// A damaged cached split manifest is dropped, and the request that needs it (a tag the stored
    /// part does not describe) fetches it again in the same call; before, that request failed
    /// with a false `invalid-tag` and only the next one succeeded.
    @Test func aDamagedCachedSplitManifestIsFetchedAgainInTheSameCall() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let root = try TemporaryDirectory(prefix: "odr-splithead")
        try await withTestServer(root: fixture.catalog) { server in
            _ = try await InstallerTests.install(["small"], from: server.baseURL, store: root.url)
            let meta = root.appending("manifests/meta")
            let heads = try FileManager.default.contentsOfDirectory(atPath: meta.path).filter { $0.hasSuffix(".splitmanifest") }
            #expect(heads.count == 1)
            for head in heads {
                var bytes = try Data(contentsOf: meta.appending(path: head))
                bytes[bytes.count / 2] ^= 0x20
                try bytes.write(to: meta.appending(path: head))
            }
            let (store, snapshot, summary) = try await InstallerTests.install(["big"], from: server.baseURL, store: root.url)
            #expect(!summary.installed.isEmpty)
            try InstallerTests.expectInstalled(["big/music.bin"], fixture: fixture, store: store, snapshot: snapshot)
            #expect(try store.events().contains { $0.kind == .repair && $0.packID.hasSuffix(".splitmanifest") })
            // The cache holds the head again, whole.
            let again = try FileManager.default.contentsOfDirectory(atPath: meta.path).filter { $0.hasSuffix(".splitmanifest") }
            #expect(again == heads)
            #expect(try CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine()).storedSnapshot()?.split != nil)
        }
    }
}
