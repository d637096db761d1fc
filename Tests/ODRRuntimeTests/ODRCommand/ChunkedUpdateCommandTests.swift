import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// `odr status` and `odr update` count what an update of a chunked file really moves: the chunks
/// the store does not hold, not the whole file (issue 23, "everything that reports sizes counts
/// chunks"). The real `odr` runs against a catalog served over loopback.
struct ChunkedUpdateCommandTests {
    /// Small chunks keep the files small: 8 KiB minimum, 32 KiB average, 128 KiB maximum.
    static func chunkSizes() throws -> FastCDC.Parameters {
        try FastCDC.Parameters(minimumSize: 8 << 10, averageSize: 32 << 10, maximumSize: 128 << 10)
    }

    /// The bytes of the chunks of `path` in `next` that no file of `previous` holds, computed from
    /// the manifests alone; `nil` unless they are one run of consecutive chunks (one range, so no
    /// merging of ranges changes the figure).
    static func missingChunkBytes(of path: String, previous: VersionManifest, next: VersionManifest) throws -> Int64? {
        let held = Set(previous.files.flatMap { $0.chunks.map(\.sha256) })
        let table = try #require(next.files.first { $0.path == path }).chunks
        let missing = table.indices.filter { !held.contains(table[$0].sha256) }
        guard let first = missing.first, let last = missing.last, missing.count == last - first + 1 else { return nil }
        return missing.reduce(0) { $0 + table[$1].storedSize }
    }

    /// A chunked assembly resumes in a later run: `odr fetch` killed when half of a file's chunks
    /// are assembled (`ODR_CRASH_AT=chunks`), the next `odr fetch` fetches only the chunks after
    /// them. Before, opening the store deleted `staging/<id>.chunked` and the next run fetched
    /// every changed chunk again.
    @Test func aChunkedAssemblyKilledHalfwayResumesInTheNextRun() async throws {
        let fixture = try CatalogFixture(rules: #"""
            { "catalogID": "chunks", "tags": { "world": { "include": ["world"] } }, "limits": { "chunkThreshold": "256 KiB" } }
            """#)
        let original = deterministicBytes(count: 2 << 20, seed: 41)
        try fixture.write(ChunkedInstallTests.big, original)
        try await fixture.build(chunkSizes: Self.chunkSizes())
        let crashed = try TemporaryDirectory(prefix: "odr-store"), control = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            func fetch(_ store: TemporaryDirectory, crashing: Bool = false) async throws -> (ODRExecutable.Outcome, Int64) {
                await server.waitUntilIdle()
                server.clearRequests()
                let outcome = try await ODRExecutable.run(["fetch", "--catalog", server.baseURL.absoluteString, "--store", store.url.path, "world"],
                                                          environment: crashing ? ["ODR_CRASH_AT": "chunks"] : [:])
                await server.waitUntilIdle()
                return (outcome, Int64(ChunkedInstallTests.packRequests(server).reduce(0) { $0 + $1.bytesSent }))
            }
            for store in [crashed, control] { #expect(try await fetch(store).0.status == 0) }
            // Changes spread over the whole file: a few hundred bytes every 128 KiB.
            var changed = original
            for offset in stride(from: 60_000, to: changed.count - 1000, by: 128 << 10) {
                changed = ChunkedInstallTests.edit(changed, at: offset, deterministicBytes(count: 300, seed: UInt64(offset)), overwrite: true)
            }
            try fixture.write(ChunkedInstallTests.big, changed)
            try await fixture.build(chunkSizes: Self.chunkSizes())

            let (full, fullBytes) = try await fetch(control)
            #expect(full.status == 0, "\(full.stderr)")
            let (killed, _) = try await fetch(crashed, crashing: true)
            #expect(killed.killedBySignal && killed.status == SIGKILL, "\(killed.stderr)")
            let (resumed, resumedBytes) = try await fetch(crashed)
            #expect(resumed.status == 0, "\(resumed.stderr)")
            // About half of what the uninterrupted update fetched: the chunks after the kill.
            #expect(resumedBytes <= fullBytes * 3 / 4, "fetched \(resumedBytes) bytes again; the whole update fetches \(fullBytes)")
            let path = try await ODRExecutable.run(["path", "--catalog", server.baseURL.absoluteString, "--store", crashed.url.path, ChunkedInstallTests.big])
            #expect(try Data(contentsOf: URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))) == changed)
        }
    }

    @Test func statusAndUpdateCountOnlyTheChangedChunksOfALargeFile() async throws {
        let fixture = try CatalogFixture(rules: #"""
            { "catalogID": "chunks", "tags": { "world": { "include": ["world"] } }, "limits": { "chunkThreshold": "256 KiB" } }
            """#)
        // A stored (incompressible) file and a deflated (text-like) one, both chunked.
        try fixture.write(ChunkedInstallTests.big, deterministicBytes(count: 1 << 20, seed: 31))
        try fixture.write(ChunkedInstallTests.text, ChunkedInstallTests.textLike(count: 1 << 20, seed: 32))
        try fixture.write(ChunkedInstallTests.small, Data("hello\n".utf8))
        try await fixture.build(chunkSizes: Self.chunkSizes())
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path]
            let first = try await ODRExecutable.run(["fetch"] + common + ["world"])
            #expect(first.status == 0, "\(first.stderr)")

            // One region of each large file changes.
            let big = try fixture.contents(of: ChunkedInstallTests.big)
            try fixture.write(ChunkedInstallTests.big,
                              ChunkedInstallTests.edit(big, at: 400_000, deterministicBytes(count: 3000, seed: 33), overwrite: true))
            let text = try fixture.contents(of: ChunkedInstallTests.text)
            try fixture.write(ChunkedInstallTests.text,
                              ChunkedInstallTests.edit(text, at: 600_000, Data(String(repeating: "quest=7 ", count: 40).utf8), overwrite: true))
            try await fixture.build(chunkSizes: Self.chunkSizes())
            let v1 = try fixture.manifest(1), v2 = try fixture.manifest(2)
            let bigBytes = try #require(try Self.missingChunkBytes(of: ChunkedInstallTests.big, previous: v1, next: v2))
            let textBytes = try #require(try Self.missingChunkBytes(of: ChunkedInstallTests.text, previous: v1, next: v2))
            let expected = bigBytes + textBytes
            let wholeFiles = v2.files.filter { $0.path != ChunkedInstallTests.small }.reduce(0) { $0 + $1.storedSize }
            #expect(bigBytes > 0 && textBytes > 0 && expected < wholeFiles / 8, "\(expected) of \(wholeFiles) bytes")

            struct Update: Decodable { var currentVersion: Int; var tags: [String]; var downloadBytes: Int64 }
            let update = try await ODRExecutable.run(["update"] + common + ["--json", "--dry-run"])
            #expect(update.status == 0, "\(update.stderr)")
            let updateReport = try JSONDecoder().decode(Update.self, from: Data(update.stdout.utf8))
            #expect(updateReport.currentVersion == 2 && updateReport.tags == ["world"])
            #expect(updateReport.downloadBytes == expected, "odr update: \(updateReport.downloadBytes), the missing chunks: \(expected)")

            struct Status: Decodable { struct Tag: Decodable { var name: String; var downloadBytes: Int64 }; var tags: [Tag] }
            let status = try await ODRExecutable.run(["status"] + common + ["--json"])
            #expect(status.status == 0, "\(status.stderr)")
            let tags = try JSONDecoder().decode(Status.self, from: Data(status.stdout.utf8)).tags
            #expect(tags.map(\.name) == ["world"] && tags.first?.downloadBytes == expected, "odr status: \(tags), the missing chunks: \(expected)")

            // The fetch moves what they said.
            await server.waitUntilIdle()
            server.clearRequests()
            let second = try await ODRExecutable.run(["fetch"] + common + ["world"])
            #expect(second.status == 0, "\(second.stderr)")
            await server.waitUntilIdle()
            let packRequests = ChunkedInstallTests.packRequests(server)
            #expect(packRequests.allSatisfy { $0.range != nil }, "\(packRequests)")
            #expect(Int64(packRequests.reduce(0) { $0 + $1.bytesSent }) == expected)
            let after = try await ODRExecutable.run(["status"] + common + ["--json"])
            #expect(try JSONDecoder().decode(Status.self, from: Data(after.stdout.utf8)).tags.first?.downloadBytes == 0)
            let path = try await ODRExecutable.run(["path"] + common + [ChunkedInstallTests.big])
            let installed = URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(try Data(contentsOf: installed) == fixture.contents(of: ChunkedInstallTests.big))
        }
    }
}
