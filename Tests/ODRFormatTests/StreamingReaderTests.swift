import Foundation
import ODRFormat
import ODRTestSupport
import Testing

struct StreamingReaderTests {
    /// Feeds `bytes` in chunks of `chunk` bytes and extracts into `destination`.
    static func extract(_ bytes: Data, _ entries: [PackEntryExpectation], sha: String?, chunk: Int, into destination: URL) throws -> DirectoryExtractor {
        let extractor = try DirectoryExtractor(destination: destination)
        let reader = PackStreamReader(entries: entries, archiveSHA256: sha, sink: extractor)
        var offset = 0
        while offset < bytes.count {
            let end = min(offset + chunk, bytes.count)
            try reader.consume(bytes[offset..<end])
            offset = end
        }
        try reader.finish()
        return extractor
    }

    @Test func oneByteAtATimeGivesTheSameFilesAsWhole() throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries().map { ($0.0, $0.1.prefix(20_000)) }
        let (url, summary) = try PackFixtures.writePack(entries.map { ($0, Data($1)) }, in: dir)
        let bytes = try Data(contentsOf: url)
        let expectations = summary.entries.map(\.expectation)
        _ = try Self.extract(bytes, expectations, sha: summary.sha256, chunk: 1, into: dir.appending("bytewise"))
        _ = try Self.extract(bytes, expectations, sha: summary.sha256, chunk: bytes.count, into: dir.appending("whole"))
        for (name, data) in entries {
            let bytewise = try Data(contentsOf: dir.appending("bytewise/" + name))
            #expect(bytewise == data)
            #expect(try Data(contentsOf: dir.appending("whole/" + name)) == bytewise)
        }
    }

    @Test(arguments: [7, 4096, 65_537])
    func oddChunkSizesExtractTheSameBytes(chunk: Int) throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries()
        let (url, summary) = try PackFixtures.writePack(entries, in: dir)
        let extractor = try Self.extract(try Data(contentsOf: url), summary.entries.map(\.expectation), sha: summary.sha256, chunk: chunk, into: dir.appending("out"))
        #expect(extractor.extracted == entries.map(\.0))
        for (name, data) in entries { #expect(try Data(contentsOf: dir.appending("out/" + name)) == data) }
    }

    @Test func randomAccessReadsOneEntry() throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries()
        let (url, summary) = try PackFixtures.writePack(entries, in: dir)
        let archive = try PackArchive(contentsOf: url)
        let entry = try #require(summary.entries.first { $0.name == "c/level.json" })
        #expect(try archive.contents(of: entry.expectation) == entries.first { $0.0 == "c/level.json" }!.1)
        let range = try archive.recordRange(of: entry.expectation)
        #expect(range.lowerBound == entry.headerOffset)
        #expect(range.count == 30 + "c/level.json".utf8.count + Int(entry.storedSize))
    }

    @Test func emptyPackRoundTrips() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack([], in: dir)
        try PackArchive(contentsOf: url).verify(expecting: [], archiveSHA256: summary.sha256)
        #expect(try runCommand("python3", ["-c", "import zipfile,sys; assert zipfile.ZipFile(sys.argv[1]).namelist() == []", url.path]).status == 0)
    }
}
