import Foundation
@testable import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Builds with `limits.chunkThreshold`: which files are chunked, determinism, the build cache's
/// chunk tables, and what verify, diff and the report say about chunks.
struct ChunkedBuildTests {
    static let rules = #"{"catalogID": "chunks", "tags": {"big": ["big"], "small": ["small"]}, "limits": {"chunkThreshold": "64 KiB"}}"#
    static func sizes() throws -> FastCDC.Parameters { try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536) }

    static func text(lines: Int, seed: Int) -> Data {
        var text = ""
        for i in 0..<lines { text += "{\"cell\": \(i + seed), \"biome\": \"\(["sea", "forest", "desert"][i % 3])\", \"height\": \(i * 7 % 113)}\n" }
        return Data(text.utf8)
    }

    static func fixture(rules: String = ChunkedBuildTests.rules) throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", rules)
        try fixture.write("big/archive.pak", deterministicBytes(count: 500_000, seed: 1))
        try fixture.write("big/world.json", text(lines: 15_000, seed: 0))
        try fixture.write("small/notes.txt", "notes")
        try fixture.write("small/under.bin", deterministicBytes(count: 60_000, seed: 2))
        return fixture
    }

    @discardableResult
    func build(_ fixture: BuildFixture, output: URL? = nil, cached: Bool = false) async throws -> BuildReport {
        let sizes = try Self.sizes()
        return try await fixture.build(output: output, cached: cached) { $0.packOptions.chunkSizes = sizes }
    }

    @Test func theThresholdIsParsedAndZeroTurnsChunkingOff() throws {
        #expect(TagRules.Limits().chunkThreshold == 8 << 20)
        for (value, expected) in [(#""64 KiB""#, Int64(64 << 10)), ("1048576", 1 << 20), ("0", 0), (#""0""#, 0)] {
            let rules = try TagRules.parse(Data(#"{"tags": {"a": ["a"]}, "limits": {"chunkThreshold": \#(value)}}"#.utf8))
            #expect(rules.limits.chunkThreshold == expected, "\(value)")
        }
        for value in ["-1", #""lots""#, "1.5", "true"] {
            let error = #expect(throws: BuildError.self) {
                try TagRules.parse(Data(#"{"tags": {"a": ["a"]}, "limits": {"chunkThreshold": \#(value)}}"#.utf8))
            }
            #expect(error?.code == .invalidValue)
            #expect(error?.key == "limits.chunkThreshold")
        }
    }

    @Test func filesAtOrOverTheThresholdAreChunkedAndTheCatalogVerifies() async throws {
        let fixture = try Self.fixture()
        let report = try await build(fixture)
        let manifest = try fixture.manifest(1)
        #expect(manifest.formatVersion == 4)
        let byPath = Dictionary(uniqueKeysWithValues: manifest.files.map { ($0.path, $0) })
        #expect(byPath["big/archive.pak"]?.method == .stored && byPath["big/archive.pak"]!.chunks.count > 10)
        #expect(byPath["big/world.json"]?.method == .deflate && byPath["big/world.json"]!.chunks.count > 10)
        #expect(byPath["small/under.bin"]?.chunks.isEmpty == true)
        #expect(byPath["small/notes.txt"]?.chunks.isEmpty == true)
        let summary = try CatalogVerifier(catalog: fixture.catalog).verify()
        #expect(summary.packs == manifest.packs.count)
        for pack in manifest.packs {
            let result = try run("unzip", ["-t", fixture.catalog.packURL(id: pack.id).path])
            #expect(result.status == 0, "\(result.output)")
        }
        let chunking = try #require(report.chunking)
        #expect(chunking.files == 2)
        #expect(chunking.chunks == byPath["big/archive.pak"]!.chunks.count + byPath["big/world.json"]!.chunks.count)
        #expect(chunking.changedChunks == chunking.chunks)
        #expect(report.rendered().contains("chunked files: 2"))
        // A first build has no previous version: no "changed since" line.
        #expect(chunking.againstPrevious == false)
        #expect(!report.rendered().contains("changed since"))
        #expect(try CatalogInspection(catalog: fixture.catalog).rendered().contains("chunked files (format 4): 2"))
    }

    @Test func chunkingIsDeterministicAndOffWithAThresholdOfZero() async throws {
        let fixture = try Self.fixture()
        let first = fixture.directory.appending("first"), second = fixture.directory.appending("second")
        try await build(fixture, output: first)
        let sizes = try Self.sizes()
        try await fixture.build(output: second, cached: false) {
            $0.packOptions.chunkSizes = sizes
            $0.concurrency = 1
        }
        #expect(try fixture.snapshot(of: first) == fixture.snapshot(of: second))

        let off = try Self.fixture(rules: Self.rules.replacingOccurrences(of: #""64 KiB""#, with: "0"))
        let report = try await build(off)
        let manifest = try off.manifest(1)
        #expect(manifest.formatVersion == 1)
        #expect(manifest.files.allSatisfy { $0.chunks.isEmpty })
        #expect(report.chunking == nil)
    }

    @Test func turningChunkingOnRewritesThePacksThatGainChunks() async throws {
        let fixture = try Self.fixture(rules: Self.rules.replacingOccurrences(of: #""64 KiB""#, with: "0"))
        try await build(fixture)
        try fixture.write("odr.json", Self.rules)
        let report = try await build(fixture)
        #expect(report.publishedNewVersion)
        let manifest = try fixture.manifest(2)
        #expect(manifest.files.contains { !$0.chunks.isEmpty })
        #expect(report.packs.first { $0.tags == ["small"] }?.reused == true)
        #expect(report.packs.first { $0.tags == ["big"] }?.reused == false)
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
    }

    @Test func theBuildCacheKeepsChunkTablesAndAPackWrittenAgainUsesThem() async throws {
        let fixture = try Self.fixture()
        try await build(fixture, cached: true)
        let v1 = try fixture.manifest(1)
        let world = try #require(v1.files.first { $0.path == "big/world.json" })
        // The cache holds the tables, by content and chunk sizes.
        let cached = BuildCache.load(from: fixture.cache).chunkTables(for: try Self.sizes())
        #expect(cached[world.sha256]?.map(\.size) == world.chunks.map(\.size))
        #expect(cached[world.sha256]?.map(\.sha256) == world.chunks.map(\.sha256))

        // Another file of the pack changes, so the pack is written again; the unchanged world.json
        // keeps its chunks, which the writer took from the cache (the same cuts, the same bytes).
        try fixture.write("big/archive.pak", deterministicBytes(count: 500_000, seed: 99))
        let report = try await build(fixture, cached: true)
        #expect(report.hashedFiles == 1)
        let v2 = try fixture.manifest(2)
        #expect(v2.files.first { $0.path == "big/world.json" }?.chunks == world.chunks)
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
    }

    @Test func diffAndTheReportCountTheChunksAnEditChanges() async throws {
        let fixture = try Self.fixture()
        try await build(fixture)
        var archive = deterministicBytes(count: 500_000, seed: 1)
        archive[250_000] ^= 0xFF
        try fixture.write("big/archive.pak", archive)
        let report = try await build(fixture)
        let v2 = try fixture.manifest(2)
        let file = try #require(v2.files.first { $0.path == "big/archive.pak" })
        let diff = try CatalogDiff(catalog: fixture.catalog, from: 1, to: 2)
        let entry = try #require(diff.chunkedFiles?.first)
        #expect(diff.chunkedFiles?.count == 1)
        #expect(entry.path == "big/archive.pak" && entry.chunks == file.chunks.count)
        // One byte changed: one chunk (FastCDC re-synchronizes at once for an overwrite).
        #expect(entry.changedChunks == 1)
        #expect(entry.bytesToMove > 0 && entry.bytesToMove <= 65536)
        #expect(diff.rendered().contains("big/archive.pak: 1 of \(file.chunks.count) chunks changed"))
        #expect(report.chunking?.changedChunks == 1)
        #expect(report.rendered().contains("1 chunk(s) changed since the previous version"))
        #expect(report.chunking?.bytesToMove == entry.bytesToMove)
        // The headline counts the chunks too: far less than the pack's plan without them, which
        // would fetch the whole changed entry.
        let v1 = try fixture.manifest(1)
        let plan = v2.packs.filter { pack in !v1.packs.contains { $0.id == pack.id } }.reduce(Int64(0)) { sum, pack in
            sum + PackFetchPlan.make(entries: ManifestIndex(v2).expectedEntries(inPack: pack.id), archiveBytes: pack.archiveBytes,
                                     held: Set(v1.files.map(\.sha256))).fetchBytes
        }
        #expect(plan >= file.storedSize)
        #expect(diff.downloadBytes == plan - (file.storedSize - entry.bytesToMove))
        #expect(diff.downloadBytes < file.storedSize / 2)
        // Only `big` changed, so a client holding it downloads the same.
        let big = try #require(diff.changedTags.first { $0.name == "big" })
        #expect(big.downloadBytes == diff.downloadBytes)
    }
}
