import Foundation
import ODRFormat
import ODRTestSupport
import Testing

/// Every hostile archive is refused with its own code, and nothing lands outside the destination.
struct HostileArchiveTests {
    /// Extracts `bytes` into `root/out`, expecting a failure; returns the error and the files
    /// found under `root` afterwards (which must all be under `out/`).
    func refuse(_ bytes: Data, _ entries: [PackEntryExpectation], sha: String? = nil, chunk: Int = 1 << 16) throws -> (FormatError?, [String]) {
        let root = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: root.appending("out"))
        let reader = PackStreamReader(entries: entries, archiveSHA256: sha, sink: extractor)
        var caught: FormatError?
        do {
            var offset = 0
            while offset < bytes.count {
                try reader.consume(bytes[offset..<min(offset + chunk, bytes.count)])
                offset += chunk
            }
            try reader.finish()
        } catch let error as FormatError {
            caught = error
            extractor.removeExtracted()
        }
        let files = root.allFiles()
        return (caught, files)
    }

    func hostileCase(_ name: String, mode: UInt32 = 0o100644, flags: UInt16 = 0x0800) -> (Data, [PackEntryExpectation]) {
        var zip = ZipFixture()
        zip.add("ok.txt", Data("fine".utf8))
        zip.add(name, Data("payload".utf8), mode: mode, flags: flags)
        return zip.build()
    }

    @Test(arguments: [
        ("/tmp/absolute.txt", "absolute"),
        ("../escape.txt", "dot-dot"),
        ("a/../../escape.txt", "nested dot-dot"),
        ("a\\..\\escape.txt", "backslash"),
        ("nul\u{0}.txt", "NUL byte"),
    ])
    func unsafeNamesAreRefused(name: String, label: String) throws {
        let (bytes, entries) = hostileCase(name)
        let (error, files) = try refuse(bytes, entries)
        #expect(error?.code == .unsafeEntryName, "\(label): \(String(describing: error))")
        #expect(files.allSatisfy { $0.hasPrefix("out/") }, "\(label): \(files)")
        #expect(files.isEmpty, "a refused pack leaves nothing behind: \(files)")
    }

    @Test(arguments: [(UInt32(0o120777), "symlink"), (0o020644, "character device"), (0o060644, "block device"), (0o010644, "fifo")])
    func specialFileModesAreRefused(mode: UInt32, label: String) throws {
        let (bytes, entries) = hostileCase("link", mode: mode)
        let (error, files) = try refuse(bytes, entries)
        #expect(error?.code == .unsupportedEntryType, "\(label): \(String(describing: error))")
        #expect(files.isEmpty)
    }

    @Test func duplicateNamesAreRefused() throws {
        var zip = ZipFixture()
        zip.add("same.txt", Data("one".utf8))
        zip.add("same.txt", Data("two".utf8))
        let (bytes, entries) = zip.build()
        let (error, files) = try refuse(bytes, entries)
        #expect(error?.code == .duplicateEntry)
        #expect(files.isEmpty)
    }

    @Test func entryNotInTheManifestIsRefused() throws {
        var zip = ZipFixture()
        zip.add("a.txt", Data("a".utf8))
        zip.add("extra.txt", Data("sneaky".utf8))
        let (bytes, entries) = zip.build()
        let (error, files) = try refuse(bytes, Array(entries.prefix(1)))
        #expect(error?.code == .unexpectedEntry)
        #expect(files.isEmpty)
    }

    @Test func missingEntryIsRefused() throws {
        var zip = ZipFixture()
        zip.add("a.txt", Data("a".utf8))
        let (bytes, entries) = zip.build()
        let ghost = PackEntryExpectation(name: "b.txt", method: .stored, storedSize: 1, size: 1, headerOffset: 40, sha256: String(repeating: "0", count: 64))
        let (error, _) = try refuse(bytes, entries + [ghost])
        #expect(error?.code == .unexpectedEntry)
    }

    @Test func encryptedOrDataDescriptorEntriesAreRefused() throws {
        for flags: UInt16 in [0x0801, 0x0808] {
            let (bytes, entries) = hostileCase("flagged.txt", flags: flags)
            let (error, files) = try refuse(bytes, entries)
            #expect(error?.code == .unsupportedFeature, "flags \(flags)")
            #expect(files.isEmpty)
        }
    }

    @Test func decompressionBombIsStoppedAtTheDeclaredSize() throws {
        let dir = try TemporaryDirectory()
        // 4 MiB of zeros deflates to a few KiB; then the header and manifest claim it is 1,000 bytes.
        let (url, summary) = try PackFixtures.writePack([("bomb.bin", Data(count: 4 << 20))], in: dir)
        var bytes = try Data(contentsOf: url)
        var entry = summary.entries[0].expectation
        #expect(entry.method == .deflate)
        entry.size = 1000
        bytes.replaceSubrange(22..<26, with: [0xE8, 0x03, 0, 0])  // local header: uncompressed size
        let (error, files) = try refuse(bytes, [entry])
        #expect(error?.code == .sizeMismatch)
        #expect(error?.message.contains("decompression bomb") == true, "\(String(describing: error))")
        #expect(files.isEmpty)
    }

    /// A damaged deflated entry is reported as not matching its manifest, never as a bomb.
    @Test(arguments: [40, 200, 1000, 3000])
    func oneFlippedByteInADeflatedEntryIsAMismatchNotABomb(offset: Int) throws {
        let dir = try TemporaryDirectory()
        let text = Data((0..<20_000).map { "level \($0 % 97) tile \($0 % 13)\n" }.joined().utf8)
        let (url, summary) = try PackFixtures.writePack([("map.txt", text)], in: dir)
        let entry = summary.entries[0].expectation
        #expect(entry.method == .deflate)
        var bytes = try Data(contentsOf: url)
        let dataStart = 30 + "map.txt".utf8.count
        try #require(offset < Int(entry.storedSize))
        bytes[dataStart + offset] ^= 0x01
        let (error, files) = try refuse(bytes, [entry])
        let message = error?.message ?? ""
        #expect(!message.contains("bomb"), "\(message)")
        if error?.code == .sizeMismatch || error?.code == .hashMismatch {
            #expect(message.contains("does not match its manifest"), "\(message)")
        }
        #expect(files.isEmpty)
    }

    @Test func sizeLieInTheHeaderIsRefused() throws {
        var zip = ZipFixture()
        zip.add("a.txt", Data("hello".utf8))
        let (bytes, entries) = zip.build()
        var lie = entries
        lie[0].size = 4
        lie[0].storedSize = 4
        let (error, _) = try refuse(bytes, lie)
        #expect(error?.code == .entryMismatch)
    }

    @Test(arguments: [1, 100, 4096])
    func truncatedArchiveIsRefused(cut: Int) throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(PackFixtures.mixedEntries(), in: dir)
        let bytes = try Data(contentsOf: url)
        let (error, files) = try refuse(bytes.prefix(bytes.count - cut), summary.entries.map(\.expectation), sha: summary.sha256)
        #expect(error?.code == .truncated || error?.code == .malformedArchive, "\(String(describing: error))")
        #expect(files.isEmpty)
        let (midError, _) = try refuse(bytes.prefix(bytes.count / 2), summary.entries.map(\.expectation), sha: summary.sha256)
        #expect(midError?.code == .truncated)
    }

    @Test func flippedByteInStoredDataIsAHashMismatch() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(PackFixtures.mixedEntries(), in: dir)
        var bytes = try Data(contentsOf: url)
        let texture = try #require(summary.entries.first { $0.name == "b/texture.png" })
        let index = Int(texture.headerOffset) + 30 + texture.name.utf8.count + 1000
        bytes[index] ^= 0xFF
        let (error, files) = try refuse(bytes, summary.entries.map(\.expectation), sha: summary.sha256)
        #expect(error?.code == .hashMismatch)
        #expect(error?.field == "b/texture.png")
        #expect(files.isEmpty)
    }

    @Test func flippedByteInDeflatedDataIsRefused() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack(PackFixtures.mixedEntries(), in: dir)
        var bytes = try Data(contentsOf: url)
        let json = try #require(summary.entries.first { $0.name == "c/level.json" })
        bytes[Int(json.headerOffset) + 30 + json.name.utf8.count + Int(json.storedSize) / 2] ^= 0x55
        let (error, files) = try refuse(bytes, summary.entries.map(\.expectation), sha: summary.sha256)
        let codes: Set<FormatError.Code> = [.hashMismatch, .corruptData, .sizeMismatch]
        #expect(error.map { codes.contains($0.code) } == true, "\(String(describing: error))")
        #expect(files.isEmpty)
    }

    @Test func wrongArchiveHashIsRefused() throws {
        let dir = try TemporaryDirectory()
        let (url, summary) = try PackFixtures.writePack([("a.txt", Data("a".utf8))], in: dir)
        let (error, _) = try refuse(try Data(contentsOf: url), summary.entries.map(\.expectation), sha: String(repeating: "f", count: 64))
        #expect(error?.code == .hashMismatch)
    }

    @Test func preexistingSymlinkInDestinationIsNotFollowed() throws {
        let root = try TemporaryDirectory()
        let outside = root.appending("outside")
        try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
        let destination = root.appending("out")
        try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: destination.appending(path: "dir"), withDestinationURL: outside)
        var zip = ZipFixture()
        zip.add("dir/file.txt", Data("x".utf8))
        let (bytes, entries) = zip.build()
        let reader = PackStreamReader(entries: entries, sink: try DirectoryExtractor(destination: destination))
        let error = #expect(throws: FormatError.self) { try reader.consume(bytes); try reader.finish() }
        #expect(error?.code == .unsafeEntryName)
        #expect(try FileManager.default.contentsOfDirectory(atPath: outside.path).isEmpty)
    }
}
