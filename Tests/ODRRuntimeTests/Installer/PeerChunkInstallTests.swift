import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Chunk-level updates with a peer (issue 43): a device updating a large chunked file asks a peer
/// that already holds the new version for the changed chunks by their SHA-256, takes the unchanged
/// ones from its own disk, and the CDN sends nothing of the pack.
struct PeerChunkInstallTests {
    @Test(arguments: [false, true])
    func aChunkedUpdateTakesItsChangedChunksFromAPeer(deflated: Bool) async throws {
        let path = deflated ? ChunkedInstallTests.text : ChunkedInstallTests.big
        let fixture = deflated ? try await ChunkedInstallTests.fixture(bigBytes: 16, textBytes: 4 << 20) : try await ChunkedInstallTests.fixture()
        let holderFolder = try TemporaryDirectory(prefix: "odr-peer-chunks-a")
        let updaterFolder = try TemporaryDirectory(prefix: "odr-peer-chunks-b")
        try await withTestServer(root: fixture.catalog) { server in
            let holder = try ResourceStore(directory: holderFolder.url)
            let updater = try ResourceStore(directory: updaterFolder.url)
            try await ChunkedInstallTests.installCurrentVersion(holder, server)
            try await ChunkedInstallTests.installCurrentVersion(updater, server)
            // Version 2 changes the file in three places; the holder installs it from the CDN.
            var changed = try fixture.contents(of: path)
            for offset in [300_000, 2_000_000, 2_900_000] {
                changed = ChunkedInstallTests.edit(changed, at: offset, deterministicBytes(count: 1000, seed: UInt64(offset)), overwrite: true)
            }
            try fixture.write(path, changed)
            try await fixture.build()
            try await ChunkedInstallTests.installCurrentVersion(holder, server)
            let (v2, pack2) = try await ChunkedInstallTests.refresh(updater, server)
            let table = try ChunkedInstallTests.chunks(of: path, in: v2)
            let share = try await ShareServer.start(source: StoreShareSource(store: holder), port: 0, limits: .unlimited, logger: testServerLogger())
            server.clearRequests()
            var installer = PackInstaller(store: updater, transport: try TransferEngine())
            installer.peers = PeerSet([share.baseURL])
            let summary = try await installer.install([pack2], from: v2)
            await server.waitUntilIdle()
            await share.waitUntilIdle()
            let served = share.requests()
            await share.stop()

            let cdnBytes = ChunkedInstallTests.packRequests(server).reduce(0) { $0 + $1.bytesSent }
            #expect(cdnBytes == 0, "the CDN sent \(cdnBytes) pack bytes: \(ChunkedInstallTests.packRequests(server))")
            #expect(summary.downloadedBytes == 0)
            // The changed chunks (a few of the file's) came from the peer, the rest from disk.
            #expect(summary.peerBytes > 0 && summary.peerBytes < Int64(changed.count) / 2, "\(summary.peerBytes) of \(changed.count)")
            #expect(summary.bytesByPeer == [share.baseURL.absoluteString: summary.peerBytes])
            let stored = try #require(v2.lookup.files(inPack: pack2.id).first { $0.path == path }).storedSize
            #expect(summary.reusedBytes > stored / 2, "\(summary.reusedBytes) of \(stored) stored bytes reused")
            let digests = Set(table.map(\.sha256))
            let asked = served.map { String($0.target.dropFirst("/odr/v1/sha256/".count)) }
            #expect(!asked.isEmpty && asked.allSatisfy { digests.contains($0) }, "\(asked)")
            #expect(served.allSatisfy { $0.status == 200 })
            #expect(try ChunkedInstallTests.file(path, of: fixture, in: updater, v2))
            #expect(try updater.verify().isEmpty)
            #expect(updaterFolder.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
        }
    }
}
