import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// What a `SIGKILL` in the middle of one large entry costs: the real `odr fetch` kills itself once
/// half of the pack arrived (`ODR_CRASH_AT=download`), and the next fetch may download at most what
/// had not arrived plus 256 KiB, for a stored and for a deflated entry.
struct KilledFetchLossTests {
    /// The most bytes a kill may cost beyond what had not arrived yet (docs/STORE.md).
    static let lossBound: Int64 = 256 << 10

    @Test(arguments: [false, true])
    func aFetchKilledInsideALargeEntryLosesAtMost256KiB(compressible: Bool) async throws {
        let fixture = try CatalogFixture(rules: #"{ "catalogID": "loss", "tags": { "big": { "include": ["big"] } } }"#)
        // 9 MiB of random bytes (stored), or 16 MiB of random nibbles (deflated to about half). The
        // kill then comes half way through a MiB of the stored entry, where an unflushed 1 MiB
        // write buffer would hold half a MiB.
        var contents = deterministicBytes(count: compressible ? 16 << 20 : 9 << 20, seed: 2201)
        if compressible { contents = Data(contents.map { $0 & 0x0F }) }
        try fixture.write("big/level.bin", contents)
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        let pack = try #require(manifest.packs.first)
        let entry = try #require(manifest.expectedEntries(inPack: pack.id).first)
        #expect(entry.method == (compressible ? .deflate : .stored))
        #expect(pack.archiveBytes > 6 << 20)

        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let arguments = ["fetch", "--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path, "big"]
            let crashed = try await ODRExecutable.run(arguments, environment: ["ODR_CRASH_AT": "download"])
            #expect(crashed.killedBySignal && crashed.status == SIGKILL, "\(crashed.stderr)")

            await server.waitUntilIdle()
            server.clearRequests()
            let second = try await ODRExecutable.run(arguments)
            #expect(second.status == 0, "\(second.stderr)")
            await server.waitUntilIdle()
            // The kill came once at least half of the archive had reached the installer, so the
            // second fetch needs at most the other half; a byte more than the bound is a byte lost.
            let requests = server.requests().filter { $0.path == "/packs/\(pack.id).zip" }
            let sent = requests.reduce(Int64(0)) { $0 + Int64($1.bytesSent) }
            #expect(sent <= pack.archiveBytes - pack.archiveBytes / 2 + Self.lossBound,
                    "\(sent) bytes sent again for an archive of \(pack.archiveBytes): \(requests)")
            #expect(requests.allSatisfy { $0.range != nil }, "\(requests)")

            let path = try await ODRExecutable.run(["path", "--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path, "big/level.bin"])
            #expect(path.status == 0, "\(path.stderr)")
            let installed = URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(try Data(contentsOf: installed) == contents)
            let verify = try await ODRExecutable.run(["verify", "--store", storeDirectory.url.path])
            #expect(verify.status == 0, "\(verify.stdout)")
            #expect(storeDirectory.allFiles().filter { $0.hasPrefix("staging/") || $0.contains(".odr-parts") }.isEmpty)
        }
    }
}
