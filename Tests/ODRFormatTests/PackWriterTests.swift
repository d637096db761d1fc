import Foundation
import ODRFormat
import ODRTestSupport
import Testing

struct PackWriterTests {
    @Test func smallPackRoundTripsThroughStreamingReader() throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries()
        let (url, summary) = try PackFixtures.writePack(entries, in: dir)
        let sink = MemorySink()
        try PackArchive(contentsOf: url).verify(expecting: summary.entries.map(\.expectation), archiveSHA256: summary.sha256, sink: sink)
        for (name, data) in entries { #expect(Data(sink.contents[name] ?? []) == data, "\(name)") }
        #expect(summary.archiveBytes == Int64(try Data(contentsOf: url).count))
        #expect(summary.sha256 == ContentHash.sha256Hex(of: try Data(contentsOf: url)))
    }

    @Test func compressibleEntriesAreDeflatedAndMediaIsStored() throws {
        let dir = try TemporaryDirectory()
        let (_, summary) = try PackFixtures.writePack(PackFixtures.mixedEntries(), in: dir)
        let methods = Dictionary(uniqueKeysWithValues: summary.entries.map { ($0.name, $0.method) })
        #expect(methods["a/map.json"] == .deflate)
        #expect(methods["c/level.json"] == .deflate)
        #expect(methods["b/texture.png"] == .stored)
        #expect(methods["c/sound.ogg"] == .stored)
        #expect(methods["a/empty.txt"] == .stored)
        let json = try #require(summary.entries.first { $0.name == "c/level.json" })
        #expect(json.storedSize < json.size / 5)
    }

    @Test func sameInputGivesByteIdenticalPacks() throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries()
        let (first, a) = try PackFixtures.writePack(entries, in: dir, name: "one.zip")
        let (second, b) = try PackFixtures.writePack(entries, in: dir, name: "two.zip")
        #expect(try Data(contentsOf: first) == Data(contentsOf: second))
        #expect(a == b)
    }

    @Test func entriesFromFilesMatchEntriesFromData() throws {
        let dir = try TemporaryDirectory()
        let entries = PackFixtures.mixedEntries()
        for (name, data) in entries {
            let file = dir.appending("src/" + name)
            try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
            try data.write(to: file)
        }
        let writer = try PackWriter(creating: dir.appending("files.zip"))
        for (name, _) in entries { _ = try writer.addEntry(named: name, contentsOf: dir.appending("src/" + name)) }
        let fromFiles = try writer.finish()
        let (_, fromData) = try PackFixtures.writePack(entries, in: dir)
        #expect(fromFiles == fromData)
    }

    @Test func largePackUsesZip64PastTheThresholdAndStillRoundTrips() throws {
        let dir = try TemporaryDirectory()
        var options = PackWriter.Options()
        options.zip64Threshold = 100_000  // sizes and offsets past this use ZIP64 records
        let entries = PackFixtures.mixedEntries()
        let (url, summary) = try PackFixtures.writePack(entries, in: dir, options: options)
        let bytes = try Data(contentsOf: url)
        // The ZIP64 end-of-central-directory record is present.
        #expect(bytes.range(of: Data([0x50, 0x4B, 0x06, 0x06])) != nil)
        let listed = try PackArchive(contentsOf: url).entries()
        #expect(listed.map(\.size) == summary.entries.map(\.size))
        #expect(listed.map(\.headerOffset) == summary.entries.map(\.headerOffset))
        let sink = MemorySink()
        try PackArchive(contentsOf: url).verify(expecting: summary.entries.map(\.expectation), archiveSHA256: summary.sha256, sink: sink)
        for (name, data) in entries { #expect(Data(sink.contents[name] ?? []) == data) }
    }

    @Test func manyEntriesPastTheCountThresholdUseZip64() throws {
        let dir = try TemporaryDirectory()
        var options = PackWriter.Options()
        options.zip64Threshold = 50
        let entries = (0..<60).map { (String(format: "f/%03d.txt", $0), Data("file \($0)\n".utf8)) }
        let (url, summary) = try PackFixtures.writePack(entries, in: dir, options: options)
        #expect(try PackArchive(contentsOf: url).entries().count == 60)
        try PackArchive(contentsOf: url).verify(expecting: summary.entries.map(\.expectation), archiveSHA256: summary.sha256)
    }

    @Test func entriesOutOfOrderAreRefused() throws {
        let dir = try TemporaryDirectory()
        let writer = try PackWriter(creating: dir.appending("p.zip"))
        _ = try writer.addEntry(named: "b.txt", data: Data("b".utf8))
        let error = #expect(throws: FormatError.self) { try writer.addEntry(named: "a.txt", data: Data("a".utf8)) }
        #expect(error?.code == .invalidOperation)
    }

    @Test func unsafeEntryNameIsRefusedByTheWriter() throws {
        let dir = try TemporaryDirectory()
        let writer = try PackWriter(creating: dir.appending("p.zip"))
        let error = #expect(throws: FormatError.self) { try writer.addEntry(named: "../x", data: Data()) }
        #expect(error?.code == .unsafeEntryName)
    }

    @Test func existingFileIsNeverOverwritten() throws {
        let dir = try TemporaryDirectory()
        try Data("keep".utf8).write(to: dir.appending("p.zip"))
        let error = #expect(throws: FormatError.self) { try PackWriter(creating: dir.appending("p.zip")) }
        #expect(error?.code == .io)
        #expect(try Data(contentsOf: dir.appending("p.zip")) == Data("keep".utf8))
    }

    @Test func unfinishedWriterRemovesItsPartialFile() throws {
        let dir = try TemporaryDirectory()
        do {
            let writer = try PackWriter(creating: dir.appending("p.zip"))
            _ = try writer.addEntry(named: "a.txt", data: Data("a".utf8))
        }
        #expect(dir.allFiles().isEmpty)
    }
}
