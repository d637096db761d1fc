import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// Entries the pack writer cuts into chunks: stored chunks are plain ranges, deflated ones inflate
/// on their own, and the archive stays a standard ZIP.
struct ChunkedPackTests {
    static func options() throws -> PackWriter.Options {
        var options = PackWriter.Options()
        options.chunkThreshold = 64 << 10
        options.chunkSizes = try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536)
        return options
    }

    static func entries() -> [(String, Data)] {
        [
            ("big/level.json", PackFixtures.text(count: 1_000_000, seed: 9)),
            ("big/movie.bin", PackFixtures.noise(count: 600_000, seed: 5)),
            ("small/notes.json", PackFixtures.text(count: 60_000, seed: 2)),
        ]
    }

    /// The stored bytes of each chunk of `entry`, cut from the archive.
    static func storedChunks(of entry: PackEntry, in archive: Data) -> [Data] {
        let dataStart = Int(entry.headerOffset) + 30 + entry.name.utf8.count
        var offset = dataStart
        return entry.chunks.map { chunk in
            defer { offset += Int(chunk.storedSize) }
            return archive.subdata(in: offset..<(offset + Int(chunk.storedSize)))
        }
    }

    @Test func chunksTileTheirEntriesAndEachInflatesOnItsOwn() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(Self.entries(), in: dir, options: try Self.options())
        let archive = try Data(contentsOf: url)
        let byName = Dictionary(uniqueKeysWithValues: summary.entries.map { ($0.name, $0) })
        let contents = Dictionary(uniqueKeysWithValues: Self.entries())
        #expect(byName["small/notes.json"]?.chunks.isEmpty == true)
        for name in ["big/level.json", "big/movie.bin"] {
            let entry = try #require(byName[name])
            let content = try #require(contents[name])
            #expect(entry.chunks.count > 10, "\(name)")
            try FileChunk.validate(entry.chunks, size: entry.size, storedSize: entry.storedSize, method: entry.method, path: name, field: name)
            var offset = 0
            for (i, (chunk, stored)) in zip(entry.chunks, Self.storedChunks(of: entry, in: archive)).enumerated() {
                let expected = content.subdata(in: offset..<(offset + Int(chunk.size)))
                offset += Int(chunk.size)
                #expect(chunk.sha256 == ContentHash.sha256Hex(of: expected))
                if entry.method == .stored {
                    #expect(stored == expected)
                } else {
                    #expect(try chunk.inflate(stored, last: i == entry.chunks.count - 1) == expected)
                }
            }
        }
        #expect(byName["big/level.json"]?.method == .deflate)
        #expect(byName["big/movie.bin"]?.method == .stored)
        // The cuts are those of the chunker over the content alone.
        var chunker = FastCDC(try Self.options().chunkSizes)
        var sizes: [Int64] = []
        try #require(contents["big/movie.bin"]).withUnsafeBytes { chunker.consume($0) { sizes.append($0) } }
        if let last = chunker.finish() { sizes.append(last) }
        #expect(byName["big/movie.bin"]?.chunks.map(\.size) == sizes)
    }

    @Test func aChunkedPackIsAStandardZipThatUnzipAndPythonRead() throws {
        let dir = try TemporaryDirectory()
        let (url, _) = try PackFixtures.writePack(Self.entries(), in: dir, options: try Self.options())
        let test = try runCommand("unzip", ["-t", url.path])
        #expect(test.status == 0, "\(test.stdout) \(test.stderr)")
        let script = """
            import hashlib, json, sys, zipfile
            with zipfile.ZipFile(sys.argv[1]) as z:
                print(json.dumps({i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}))
            """
        let python = try runCommand("python3", ["-c", script, url.path])
        #expect(python.status == 0, "\(python.stderr)")
        let hashes = try JSONDecoder().decode([String: String].self, from: Data(python.stdout.utf8))
        for (name, data) in Self.entries() { #expect(hashes[name] == ContentHash.sha256Hex(of: data), "\(name)") }
    }

    @Test func knownChunksGiveTheSameBytesAsChunkingAgain() throws {
        let dir = try TemporaryDirectory()
        let (first, summary) = try PackFixtures.writePack(Self.entries(), in: dir, name: "one.zip", options: try Self.options())
        let url = dir.appending("two.zip")
        let writer = try PackWriter(creating: url, options: try Self.options())
        for (name, data) in Self.entries() {
            let source = dir.appending("source-\(name.replacingOccurrences(of: "/", with: "-"))")
            try data.write(to: source)
            let known = summary.entries.first { $0.name == name }?.chunks
            _ = try writer.addEntry(named: name, contentsOf: source, knownChunks: known)
        }
        let second = try writer.finish()
        #expect(try Data(contentsOf: first) == Data(contentsOf: url))
        #expect(second == summary)
    }

    @Test func aChunkThatDoesNotEndAtAFlushPointIsRefused() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(Self.entries(), in: dir, options: try Self.options())
        let archive = try Data(contentsOf: url)
        let entry = try #require(summary.entries.first { $0.name == "big/level.json" })
        let stored = Self.storedChunks(of: entry, in: archive)
        // Two chunks read as one (a wrong table): the flush marker is there, but the size is not.
        var merged = entry.chunks[0]
        merged.storedSize += entry.chunks[1].storedSize
        var error = #expect(throws: FormatError.self) { try merged.inflate(stored[0] + stored[1], last: false) }
        #expect(error?.code == .sizeMismatch)
        // A chunk cut short of its flush.
        var short = entry.chunks[0]
        short.storedSize -= 2
        error = #expect(throws: FormatError.self) { try short.inflate(stored[0].prefix(stored[0].count - 2), last: false) }
        #expect(error?.code == .corruptData)
        // A middle chunk claimed as the last: it does not end the stream.
        error = #expect(throws: FormatError.self) { try entry.chunks[1].inflate(stored[1], last: true) }
        #expect(error?.code == .corruptData)
        // Garbage.
        error = #expect(throws: FormatError.self) {
            try FileChunk(size: 10, storedSize: 8, sha256: entry.sha256).inflate(Data([0xFF, 0xFF, 0xFF, 0xFF, 0, 0, 0xFF, 0xFF]), last: false)
        }
        #expect(error?.code == .corruptData)
    }

    @Test func verifyChunksChecksEachChunkAgainstTheArchive() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(Self.entries(), in: dir, options: try Self.options())
        for entry in summary.entries where !entry.chunks.isEmpty {
            var file = FileRecord(path: entry.name, pack: summary.sha256, entry: entry.name, sha256: entry.sha256, storedSize: entry.storedSize,
                                  size: entry.size, headerOffset: entry.headerOffset, method: entry.method, chunks: entry.chunks)
            try FileChunk.verifyChunks(of: file, inArchiveAt: url)
            file.chunks[3].sha256 = String(repeating: "0", count: 64)
            let error = #expect(throws: FormatError.self) { try FileChunk.verifyChunks(of: file, inArchiveAt: url) }
            #expect(error?.code == .hashMismatch)
            #expect(error?.field == "\(entry.name)#3")
        }
    }
}
