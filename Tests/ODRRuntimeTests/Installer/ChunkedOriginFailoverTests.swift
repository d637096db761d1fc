import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Chunk ranges fail over between origins as entry ranges do: bytes refused because a chunk does
/// not match its SHA-256 send the next attempt to another origin. Two real loopback servers, the
/// primary serving a tampered copy of the pack.
struct ChunkedOriginFailoverTests {
    @Test func aTamperedChunkFromThePrimaryIsFetchedFromTheMirror() async throws {
        let fixture = try await ChunkedInstallTests.fixture()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let store = try ResourceStore(directory: directory.url)
        try await withTestServer(root: fixture.catalog) { mirror in
            try await ChunkedInstallTests.installCurrentVersion(store, mirror)
            // Version 2 changes one region of the big file.
            let big = try fixture.contents(of: ChunkedInstallTests.big)
            try fixture.write(ChunkedInstallTests.big,
                              ChunkedInstallTests.edit(big, at: 1_500_000, deterministicBytes(count: 2000, seed: 41), overwrite: true))
            try await fixture.build()
            let (v2, pack2) = try await ChunkedInstallTests.refresh(store, mirror)
            let plan = try ChunkedInstallTests.plan(of: ChunkedInstallTests.big, pack2, in: v2, store: store, directory: directory)
            let range = try #require(plan.fetches.first).range
            try #require(range.count > 1000)

            // The primary: the same catalog, its new pack tampered inside the chunks that travel.
            let tampered = try OriginFailoverTests.copy(of: fixture.catalog)
            let archive = tampered.appending(pack2.archivePath)
            var bytes = try Data(contentsOf: archive)
            let offset = Int(range.lowerBound) + range.count / 2
            bytes[offset] ^= 0xFF
            try bytes.write(to: archive)

            try await withTestServer(root: tampered.url) { primary in
                let snapshot = try await CatalogClient(catalogURL: primary.baseURL, store: store, transport: TransferEngine()).refresh()
                #expect(snapshot.version == 2)
                mirror.clearRequests()
                var installer = PackInstaller(store: store, transport: try TransferEngine())
                let origins = OriginSet([primary.baseURL, mirror.baseURL])
                installer.origins = origins
                let switches = Locked<[TransferOriginSwitch]>([])
                installer.originSwitched = { _, change in switches.withLock { $0.append(change) } }
                let summary = try await installer.install([pack2], from: snapshot)

                #expect(try ChunkedInstallTests.file(ChunkedInstallTests.big, of: fixture, in: store, snapshot))
                #expect(try store.verify().isEmpty)
                await primary.waitUntilIdle()
                await mirror.waitUntilIdle()
                let path = "/" + pack2.archivePath
                let fromPrimary = primary.requests().filter { $0.path == path }
                let fromMirror = mirror.requests().filter { $0.path == path }
                // The primary sent the planned ranges once, its tampered chunk was refused, and the
                // mirror sent ranges only: at most what the primary's range held, never the file.
                #expect(fromPrimary.count == plan.fetches.count && fromPrimary.allSatisfy { $0.range != nil }, "\(fromPrimary)")
                #expect(!fromMirror.isEmpty && fromMirror.allSatisfy { $0.range != nil && $0.status == 206 }, "\(fromMirror)")
                let mirrorBytes = fromMirror.reduce(0) { $0 + $1.bytesSent }
                #expect(mirrorBytes > 0 && mirrorBytes <= range.count, "the mirror sent \(mirrorBytes) of the \(range.count)-byte range")
                #expect(summary.installed == [pack2.id])
                // The log says the mirror served the pack (`odr log`).
                let logged = try store.events().filter { $0.packID == pack2.id }
                #expect(logged.contains { $0.reason.contains("downloaded from") && $0.reason.contains(mirror.baseURL.absoluteString) }, "\(logged)")
                #expect(switches.withLock { $0 }.contains { $0.reason == .integrity && $0.to.absoluteString.hasPrefix(mirror.baseURL.absoluteString) })
                // The primary is avoided for the next transfers.
                #expect(origins.order().first == 1)
            }
        }
    }
}
