import Foundation
@testable import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// `limits.chunkSizes` in odr.json: parsed like the other byte counts, each bad value a typed error
/// naming its key, applied by the build, and keying what a build reuses (cache tables and packs).
struct ChunkSizesRulesTests {
    static func rules(_ sizes: String) -> String {
        #"{"catalogID": "chunks", "tags": {"big": ["big"], "small": ["small"]}, "limits": {"chunkThreshold": "64 KiB", "chunkSizes": \#(sizes)}}"#
    }

    static func parse(_ sizes: String) throws -> TagRules { try TagRules.parse(Data(rules(sizes).utf8)) }

    @Test func sizesAreByteCountsAndOneLeftOutKeepsItsStandardValue() throws {
        #expect(TagRules.Limits().chunkSizes == nil)
        #expect(try TagRules.parse(Data(#"{"tags": {"a": ["a"]}}"#.utf8)).limits.chunkSizes == nil)
        let all = try Self.parse(#"{"min": "4 KiB", "average": 16384, "max": "64KiB"}"#).limits.chunkSizes
        #expect(all == (try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536)))
        let onlyMax = try Self.parse(#"{"max": "4 MiB"}"#).limits.chunkSizes
        #expect(onlyMax == (try FastCDC.Parameters(minimumSize: 64 << 10, averageSize: 256 << 10, maximumSize: 4 << 20)))
        let largest = try Self.parse(#"{"average": "4 MiB", "max": "16 MiB"}"#).limits.chunkSizes
        #expect(largest?.maximumSize == Int(FileChunk.maximumSize))
    }

    /// Each rule FastCDC and the format set, with the key the error names.
    @Test(arguments: [
        (#""256 KiB""#, "limits.chunkSizes", BuildError.Code.invalidValue),  // not an object
        (#"{"minimum": 4096}"#, "limits.chunkSizes.minimum", .unknownKey),
        (#"{"min": "lots"}"#, "limits.chunkSizes.min", .invalidValue),  // not a byte count
        (#"{"average": true}"#, "limits.chunkSizes.average", .invalidValue),
        (#"{"max": -1024}"#, "limits.chunkSizes.max", .invalidValue),
        (#"{"min": 0}"#, "limits.chunkSizes.min", .invalidValue),
        (#"{"min": 32}"#, "limits.chunkSizes.min", .invalidValue),  // FastCDC's smallest minimum is 64 B
        (#"{"average": 128}"#, "limits.chunkSizes.average", .invalidValue),  // its smallest average 256 B
        (#"{"max": 1000}"#, "limits.chunkSizes.max", .invalidValue),  // its smallest maximum 1 KiB
        (#"{"max": "17 MiB"}"#, "limits.chunkSizes.max", .invalidValue),  // over the format's 16 MiB
        (#"{"min": "256 KiB"}"#, "limits.chunkSizes", .invalidValue),  // min = average
        (#"{"average": "1 MiB"}"#, "limits.chunkSizes", .invalidValue),  // average = max
        (#"{"min": "8 KiB", "average": "4 KiB", "max": "16 KiB"}"#, "limits.chunkSizes", .invalidValue),
    ])
    func aBadSizeIsATypedErrorNamingItsKey(_ sizes: String, key: String, code: BuildError.Code) throws {
        let error = #expect(throws: BuildError.self) { try Self.parse(sizes) }
        #expect(error?.code == code, "\(sizes): \(String(describing: error))")
        #expect(error?.key == key, "\(sizes): \(String(describing: error))")
    }

    @Test func orderErrorsSayWhatTheSizesMustBe() throws {
        let error = #expect(throws: BuildError.self) { try Self.parse(#"{"average": "2 MiB"}"#) }
        #expect(error?.message.contains("min 65536 < average 2097152 < max 1048576") == true, "\(String(describing: error))")
        let cap = #expect(throws: BuildError.self) { try Self.parse(#"{"max": "32 MiB"}"#) }
        #expect(cap?.message.contains("16 MiB") == true, "\(String(describing: cap))")
    }

    /// odr.json's sizes cut as the same sizes given through the Swift API do, byte for byte.
    @Test func theBuildCutsWithTheSizesOfTheRulesFile() async throws {
        let fixture = try ChunkedBuildTests.fixture(rules: Self.rules(#"{"min": "4 KiB", "average": "16 KiB", "max": "64 KiB"}"#))
        try await fixture.build(cached: false)
        let chunks = try #require(try fixture.manifest(1).files.first { $0.path == "big/archive.pak" }).chunks
        #expect(chunks.count > 10 && chunks.dropLast().allSatisfy { (4096...65536).contains($0.size) }, "\(chunks.map(\.size))")

        let viaAPI = fixture.directory.appending("api")
        let sizes = try ChunkedBuildTests.sizes()
        try fixture.write("odr.json", ChunkedBuildTests.rules)
        try await fixture.build(output: viaAPI, cached: false) { $0.packOptions.chunkSizes = sizes }
        #expect(try fixture.snapshot() == fixture.snapshot(of: viaAPI))
    }

    /// Other sizes reuse neither the cache's chunk tables nor the earlier packs: the build writes what
    /// a clean build with the new sizes writes. The same sizes again reuse everything.
    @Test func otherSizesReuseNeitherCachedTablesNorEarlierPacks() async throws {
        let first = #"{"min": "4 KiB", "average": "16 KiB", "max": "64 KiB"}"#
        let second = #"{"min": "2 KiB", "average": "8 KiB", "max": "32 KiB"}"#
        let fixture = try ChunkedBuildTests.fixture(rules: Self.rules(first))
        try await fixture.build(cached: true)
        try fixture.write("odr.json", Self.rules(second))
        let report = try await fixture.build(cached: true)
        #expect(report.publishedNewVersion)
        #expect(report.packs.first { $0.tags == ["big"] }?.reused == false)
        #expect(report.packs.first { $0.tags == ["small"] }?.reused == true)
        // The same sizes again: version 2's packs fit them (version 1's, offered first, do not).
        let again = try await fixture.build(cached: true)
        #expect(again.packs.allSatisfy { $0.reused } && !again.publishedNewVersion)

        // A clean build of the same files with the second sizes, without a cache.
        let clean = fixture.directory.appending("clean")
        try await fixture.build(output: clean, cached: false)
        let rebuilt = try fixture.manifest(2), expected = try fixture.manifest(1, at: clean)
        for path in ["big/archive.pak", "big/world.json"] {
            let chunks = try #require(rebuilt.files.first { $0.path == path }).chunks
            #expect(chunks == expected.files.first { $0.path == path }?.chunks, "\(path)")
            #expect(chunks != (try fixture.manifest(1)).files.first { $0.path == path }?.chunks, "\(path)")
        }
        #expect(Set(rebuilt.packs.map(\.id)) == Set(expected.packs.map(\.id)))
        // The cache holds each file's tables under both sizes.
        let cache = BuildCache.load(from: fixture.cache)
        let world = try #require(rebuilt.files.first { $0.path == "big/world.json" })
        let firstSizes = try #require(try Self.parse(first).limits.chunkSizes), secondSizes = try #require(try Self.parse(second).limits.chunkSizes)
        #expect(cache.chunkTables(for: firstSizes)[world.sha256] != nil && cache.chunkTables(for: secondSizes)[world.sha256]?.map(\.size) == world.chunks.map(\.size))

        // Back to the first sizes: the packs of version 1 fit them again and are reused.
        try fixture.write("odr.json", Self.rules(first))
        let back = try await fixture.build(cached: true)
        #expect(back.packs.allSatisfy { $0.reused }, "\(back.packs.map { ($0.tags, $0.reused) })")
        // Without a cache, the cut is checked on the files themselves: the same answer.
        let uncached = try await fixture.build(cached: false)
        #expect(uncached.packs.allSatisfy { $0.reused } && !uncached.publishedNewVersion)
    }
}
