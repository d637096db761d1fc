#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat
import ODRTestSupport
import Testing

struct PackRangeReaderTests {
    /// A five-entry pack: deflated text and stored noise, alternating.
    struct Pack {
        static let contents: [(String, Data)] = [
            ("a/one.json", PackFixtures.text(count: 40_000, seed: 1)),
            ("b/two.bin", PackFixtures.noise(count: 30_000, seed: 2)),
            ("c/three.json", PackFixtures.text(count: 60_000, seed: 3)),
            ("d/four.bin", PackFixtures.noise(count: 25_000, seed: 4)),
            ("e/five.json", PackFixtures.text(count: 20_000, seed: 5)),
        ]

        let bytes: Data
        let entries: [PackEntryExpectation]

        init(in dir: TemporaryDirectory) throws {
            let (url, summary) = try PackFixtures.writePack(Self.contents, in: dir)
            bytes = try Data(contentsOf: url)
            entries = summary.entries.map(\.expectation)
            #expect(entries.map(\.method) == [.deflate, .stored, .deflate, .stored, .deflate])
        }

        func content(_ index: Int) -> Data { Self.contents[index].1 }

        /// From entry `first`'s local header to the next header after entry `last`, or the archive's end.
        func range(_ first: Int, through last: Int) -> Range<Int64> {
            entries[first].headerOffset..<(last + 1 < entries.count ? entries[last + 1].headerOffset : Int64(bytes.count))
        }

        /// The data offset read from the local header's own name and extra lengths.
        func dataOffset(_ index: Int) -> Int64 {
            let header = Int(entries[index].headerOffset)
            let nameLength = Int(bytes[header + 26]) | Int(bytes[header + 27]) << 8
            let extraLength = Int(bytes[header + 28]) | Int(bytes[header + 29]) << 8
            return Int64(header + 30 + nameLength + extraLength)
        }
    }

    /// Records the calls a reader makes; forwards them to `next` when given.
    final class RecordingSink: PackRangeSink {
        var events: [String] = []
        var dataOffsets: [String: Int64] = [:]
        var contents: [String: Data] = [:]
        private var current = Data()
        private let next: (any PackRangeSink)?

        init(forwardingTo next: (any PackRangeSink)? = nil) { self.next = next }

        func entryDataStarts(_ entry: PackEntryExpectation, at dataOffset: Int64) throws {
            events.append("starts \(entry.name)")
            dataOffsets[entry.name] = dataOffset
            try next?.entryDataStarts(entry, at: dataOffset)
        }
        func beginEntry(_ entry: PackEntryExpectation) throws {
            events.append("begin \(entry.name)")
            current = Data()
            try next?.beginEntry(entry)
        }
        func resumeEntry(_ entry: PackEntryExpectation, heldBytes: Int64) throws {
            events.append("resume \(entry.name) \(heldBytes)")
            current = Data()
            try next?.resumeEntry(entry, heldBytes: heldBytes)
        }
        func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws {
            current.append(contentsOf: bytes)
            try next?.writeEntryData(bytes)
        }
        func endEntry(_ entry: PackEntryExpectation) throws {
            events.append("end \(entry.name)")
            contents[entry.name] = current
            try next?.endEntry(entry)
        }
    }

    /// Feeds `bytes[range]` (plus `extra` bytes after it) in chunks of `chunk` bytes, then finishes.
    @discardableResult
    static func read(_ bytes: Data, range: Range<Int64>, targets: [PackRangeReader.Target], sink: any PackRangeSink,
                     chunk: Int = 1 << 16, extra: Int = 0) throws -> PackRangeReader {
        let reader = try PackRangeReader(range: range, targets: targets, sink: sink)
        let slice = bytes[Int(range.lowerBound)..<(Int(range.upperBound) + extra)]
        var offset = slice.startIndex
        while offset < slice.endIndex {
            let end = offset + min(chunk, slice.endIndex - offset)
            try reader.consume(slice[offset..<end])
            offset = end
        }
        try reader.finish()
        return reader
    }

    static func hash(_ data: Data) -> StreamingSHA256 {
        var sha = StreamingSHA256()
        data.withUnsafeBytes { sha.update($0) }
        return sha
    }

    // MARK: - Extracting

    @Test func aRangeOfTwoEntriesExtractsExactlyThose() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let out = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: out.url)
        let range = pack.range(1, through: 2)
        let reader = try Self.read(pack.bytes, range: range, targets: [.init(entry: pack.entries[2]), .init(entry: pack.entries[1])], sink: extractor)
        #expect(reader.completed == ["b/two.bin", "c/three.json"])
        #expect(reader.bytesConsumed == Int64(range.count))
        #expect(extractor.extracted == ["b/two.bin", "c/three.json"])
        #expect(out.allFiles() == ["b/two.bin", "c/three.json"])
        #expect(try Data(contentsOf: out.appending("b/two.bin")) == pack.content(1))
        #expect(try Data(contentsOf: out.appending("c/three.json")) == pack.content(2))
    }

    @Test func anUnwantedEntryInAMergedRangeIsNotWritten() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        // The unwanted entry is not even read: damaging its data changes nothing.
        var bytes = pack.bytes
        bytes[Int(pack.dataOffset(2)) + 100] ^= 0xFF
        let out = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: out.url)
        let reader = try Self.read(bytes, range: pack.range(1, through: 3),
                                   targets: [.init(entry: pack.entries[1]), .init(entry: pack.entries[3])], sink: extractor)
        #expect(reader.completed == ["b/two.bin", "d/four.bin"])
        #expect(out.allFiles() == ["b/two.bin", "d/four.bin"])
        #expect(!FileManager.default.fileExists(atPath: out.appending("c").path))
        #expect(try Data(contentsOf: out.appending("d/four.bin")) == pack.content(3))
    }

    @Test func aRangeToTheArchiveEndSkipsTheCentralDirectory() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let range = pack.range(3, through: 4)
        #expect(range.upperBound == Int64(pack.bytes.count))
        let sink = RecordingSink()
        let reader = try Self.read(pack.bytes, range: range, targets: [.init(entry: pack.entries[3]), .init(entry: pack.entries[4])], sink: sink)
        #expect(reader.completed == ["d/four.bin", "e/five.json"])
        #expect(reader.bytesConsumed == Int64(range.count))
        #expect(sink.contents == ["d/four.bin": pack.content(3), "e/five.json": pack.content(4)])
    }

    @Test(arguments: [1, 7, 4096, Int.max])
    func chunkSizesDoNotChangeTheResult(chunk: Int) throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let out = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: out.url)
        let wanted = [1, 2, 4]
        let reader = try Self.read(pack.bytes, range: pack.range(0, through: 4),
                                   targets: wanted.map { .init(entry: pack.entries[$0]) }, sink: extractor, chunk: chunk)
        #expect(reader.completed == wanted.map { Pack.contents[$0].0 })
        #expect(out.allFiles() == wanted.map { Pack.contents[$0].0 })
        for index in wanted {
            #expect(try Data(contentsOf: out.appending(Pack.contents[index].0)) == pack.content(index))
        }
    }

    @Test func entryDataStartsReportsTheOffsetOfTheFirstDataByte() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let sink = RecordingSink()
        try Self.read(pack.bytes, range: pack.range(0, through: 4), targets: pack.entries.map { .init(entry: $0) }, sink: sink, chunk: 5)
        for (index, entry) in pack.entries.enumerated() {
            #expect(sink.dataOffsets[entry.name] == pack.dataOffset(index), "\(entry.name)")
        }
        #expect(Array(sink.events.prefix(3)) == ["starts a/one.json", "begin a/one.json", "end a/one.json"])
    }

    // MARK: - Resuming

    @Test(arguments: [0, 1, 12_345, 25_000])
    func aStoredEntryResumesAfterTheBytesHeld(held: Int) throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let entry = pack.entries[3]
        let out = try TemporaryDirectory()
        try FileManager.default.createDirectory(at: out.appending("d"), withIntermediateDirectories: true)
        let prefix = pack.content(3).prefix(held)
        try prefix.write(to: out.appending("d/four.bin"))
        let dataOffset = pack.dataOffset(3)
        let resume = PackRangeReader.Resume(dataOffset: dataOffset, heldBytes: Int64(held), heldHash: Self.hash(prefix))
        let extractor = try DirectoryExtractor(destination: out.url)
        let sink = RecordingSink(forwardingTo: extractor)
        let reader = try Self.read(pack.bytes, range: (dataOffset + Int64(held))..<pack.range(3, through: 3).upperBound,
                                   targets: [.init(entry: entry, resume: resume)], sink: sink)
        #expect(reader.completed == ["d/four.bin"])
        #expect(sink.events == ["resume d/four.bin \(held)", "end d/four.bin"])
        #expect(try Data(contentsOf: out.appending("d/four.bin")) == pack.content(3))
    }

    @Test func anInterruptedRangeResumesFromThePartialFile() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let out = try TemporaryDirectory()
        let range = pack.range(1, through: 3)
        let targets: [PackRangeReader.Target] = [.init(entry: pack.entries[1]), .init(entry: pack.entries[3])]

        // The first attempt stops 10,000 bytes into d/four.bin's data.
        let first = try DirectoryExtractor(destination: out.url)
        let journal = RecordingSink(forwardingTo: first)
        let reader = try PackRangeReader(range: range, targets: targets, sink: journal)
        let cut = Int(pack.dataOffset(3)) + 10_000
        try reader.consume(pack.bytes[Int(range.lowerBound)..<cut])
        #expect(throws: FormatError.self) { try reader.finish() }
        first.closeKeepingExtracted()
        let partial = try Data(contentsOf: out.appending("d/four.bin"))
        #expect(partial == pack.content(3).prefix(10_000))

        // The second asks only for the rest of d/four.bin.
        let dataOffset = try #require(journal.dataOffsets["d/four.bin"])
        let resume = PackRangeReader.Resume(dataOffset: dataOffset, heldBytes: Int64(partial.count), heldHash: Self.hash(partial))
        let second = try DirectoryExtractor(destination: out.url)
        try Self.read(pack.bytes, range: (dataOffset + Int64(partial.count))..<range.upperBound,
                      targets: [.init(entry: pack.entries[3], resume: resume)], sink: second)
        #expect(out.allFiles() == ["b/two.bin", "d/four.bin"])
        #expect(try Data(contentsOf: out.appending("b/two.bin")) == pack.content(1))
        #expect(try Data(contentsOf: out.appending("d/four.bin")) == pack.content(3))
    }

    @Test(arguments: ["wrong held hash", "damaged held bytes"])
    func aResumeThatDoesNotAddUpIsAHashMismatch(problem: String) throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let out = try TemporaryDirectory()
        try FileManager.default.createDirectory(at: out.appending("d"), withIntermediateDirectories: true)
        var held = pack.content(3).prefix(5_000)
        let heldHash: StreamingSHA256
        if problem == "wrong held hash" {
            heldHash = Self.hash(pack.content(3).prefix(4_999) + Data([0]))
        } else {
            held[held.startIndex + 77] ^= 0x01
            heldHash = Self.hash(held)  // hashed from the file, as a runtime would
        }
        try held.write(to: out.appending("d/four.bin"))
        let dataOffset = pack.dataOffset(3)
        let extractor = try DirectoryExtractor(destination: out.url)
        let sink = RecordingSink(forwardingTo: extractor)
        let error = #expect(throws: FormatError.self) {
            try Self.read(pack.bytes, range: (dataOffset + 5_000)..<Int64(pack.bytes.count),
                          targets: [.init(entry: pack.entries[3], resume: .init(dataOffset: dataOffset, heldBytes: 5_000, heldHash: heldHash))],
                          sink: sink)
        }
        #expect(error?.code == .hashMismatch)
        #expect(!sink.events.contains("end d/four.bin"))
        #expect(extractor.extracted.isEmpty)
    }

    // MARK: - Refusing

    @Test func aDeflatedEntryWhoseBytesAreNotTheManifestsIsAHashMismatchAndTheNextStillVerifies() throws {
        // Deflated entries are hashed on a thread of their own: the digest of each is still its
        // own, a wrong one is still refused by name, and the hasher goes on to the next entry.
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let other = pack.entries[0]
        let wrong = PackEntryExpectation(name: other.name, method: other.method, storedSize: other.storedSize, size: other.size,
                                         headerOffset: other.headerOffset, sha256: ContentHash.sha256Hex(of: pack.content(2)))
        let out = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: out.url)
        let error = #expect(throws: FormatError.self) {
            try Self.read(pack.bytes, range: pack.range(0, through: 0), targets: [.init(entry: wrong)], sink: extractor)
        }
        #expect(error?.code == .hashMismatch)
        #expect(error?.field == "a/one.json")
        #expect(extractor.extracted.isEmpty)
        let sink = RecordingSink()
        _ = try Self.read(pack.bytes, range: pack.range(0, through: 4), targets: pack.entries.map { .init(entry: $0) }, sink: sink, chunk: 7_001)
        for index in 0..<5 { #expect(sink.contents[Pack.contents[index].0] == pack.content(index)) }
    }

    @Test func aFlippedByteInAStoredEntryIsAHashMismatch() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        var bytes = pack.bytes
        bytes[Int(pack.dataOffset(1)) + 29_000] ^= 0x20
        let out = try TemporaryDirectory()
        let extractor = try DirectoryExtractor(destination: out.url)
        let error = #expect(throws: FormatError.self) {
            try Self.read(bytes, range: pack.range(0, through: 1), targets: [.init(entry: pack.entries[0]), .init(entry: pack.entries[1])], sink: extractor)
        }
        #expect(error?.code == .hashMismatch)
        #expect(error?.field == "b/two.bin")
        #expect(extractor.extracted == ["a/one.json"])
        extractor.removeCurrentEntry()
        #expect(out.allFiles() == ["a/one.json"])
    }

    @Test(arguments: [10, 500, 2_000])
    func aFlippedByteInADeflatedEntryIsRefused(position: Int) throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        var bytes = pack.bytes
        #expect(Int64(position) < pack.entries[2].storedSize)
        bytes[Int(pack.dataOffset(2)) + position] ^= 0x20
        let sink = RecordingSink()
        let error = #expect(throws: FormatError.self) {
            try Self.read(bytes, range: pack.range(2, through: 2), targets: [.init(entry: pack.entries[2])], sink: sink)
        }
        // Depending on where the bit lands, zlib rejects the stream, the output runs long or short, or only the hash differs.
        let refusals: [FormatError.Code] = [.corruptData, .hashMismatch, .sizeMismatch]
        #expect(error.map { refusals.contains($0.code) } == true, "\(String(describing: error))")
        #expect(sink.contents.isEmpty)
    }

    @Test func aWrongNameInTheLocalHeaderIsAnEntryMismatch() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        var bytes = pack.bytes
        let nameStart = Int(pack.entries[1].headerOffset) + 30
        #expect(bytes[nameStart + 2] == UInt8(ascii: "t"))
        bytes[nameStart + 2] = UInt8(ascii: "T")  // "b/Two.bin": a clean name, but not this entry's
        let out = try TemporaryDirectory()
        let error = #expect(throws: FormatError.self) {
            try Self.read(bytes, range: pack.range(1, through: 1), targets: [.init(entry: pack.entries[1])], sink: DirectoryExtractor(destination: out.url))
        }
        #expect(error?.code == .entryMismatch)
        #expect(out.allFiles().isEmpty)
    }

    @Test func aRangeThatDoesNotStartAtALocalHeaderIsMalformed() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        var entry = pack.entries[1]
        entry.headerOffset += 1
        let error = #expect(throws: FormatError.self) {
            try Self.read(pack.bytes, range: entry.headerOffset..<pack.entries[2].headerOffset, targets: [.init(entry: entry)], sink: RecordingSink())
        }
        #expect(error?.code == .malformedArchive)
    }

    @Test func aRangeCutShortIsTruncatedAndNamesTheEntry() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let range = pack.range(1, through: 2)
        let reader = try PackRangeReader(range: range, targets: [.init(entry: pack.entries[1]), .init(entry: pack.entries[2])], sink: RecordingSink())
        try reader.consume(pack.bytes[Int(range.lowerBound)..<(Int(range.upperBound) - 100)])
        let error = #expect(throws: FormatError.self) { try reader.finish() }
        #expect(error?.code == .truncated)
        #expect(error?.field == "c/three.json")
        #expect(reader.completed == ["b/two.bin"])
    }

    @Test func bytesBeyondTheRangeAreMalformedAndTheReaderStops() throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let range = pack.range(1, through: 1)
        let reader = try PackRangeReader(range: range, targets: [.init(entry: pack.entries[1])], sink: RecordingSink())
        try reader.consume(pack.bytes[Int(range.lowerBound)..<Int(range.upperBound)])
        let error = #expect(throws: FormatError.self) {
            try reader.consume(pack.bytes[Int(range.upperBound)..<(Int(range.upperBound) + 1)])
        }
        #expect(error?.code == .malformedArchive)
        let again = #expect(throws: FormatError.self) { try reader.finish() }
        #expect(again?.code == .invalidOperation)
    }

    @Test(arguments: ["before the range", "at the range's end", "deflated resume", "more held than stored", "twice"])
    func impossibleTargetsAreRefusedUpFront(problem: String) throws {
        let dir = try TemporaryDirectory()
        let pack = try Pack(in: dir)
        let range = pack.range(1, through: 2)
        let targets: [PackRangeReader.Target] = switch problem {
        case "before the range": [.init(entry: pack.entries[0])]
        case "at the range's end": [.init(entry: pack.entries[3])]
        case "deflated resume": [.init(entry: pack.entries[2], resume: .init(dataOffset: pack.dataOffset(2), heldBytes: 10, heldHash: StreamingSHA256()))]
        case "more held than stored": [.init(entry: pack.entries[1], resume: .init(dataOffset: pack.dataOffset(1), heldBytes: 30_001, heldHash: StreamingSHA256()))]
        default: [.init(entry: pack.entries[1]), .init(entry: pack.entries[1])]
        }
        let error = #expect(throws: FormatError.self) { try PackRangeReader(range: range, targets: targets, sink: RecordingSink()) }
        #expect(error?.code == .invalidOperation)
    }

    /// A local header with an empty name must end in a refusal: the header is complete after its
    /// fixed part, which a collector waiting for more name bytes would never notice.
    @Test(.timeLimit(.minutes(1)))
    func aHeaderWithAnEmptyNameIsRefusedByBothReaders() throws {
        var zip = ZipFixture()
        zip.add("", Data("payload".utf8))
        let (bytes, entries) = zip.build()
        let stream = PackStreamReader(entries: entries, sink: DiscardingSink())
        let streamError = #expect(throws: FormatError.self) { try stream.consume(bytes); try stream.finish() }
        #expect(streamError?.code == .unsafeEntryName)
        let rangeError = #expect(throws: FormatError.self) {
            try Self.read(bytes, range: 0..<Int64(bytes.count), targets: [.init(entry: entries[0])], sink: RecordingSink())
        }
        #expect(rangeError?.code == .unsafeEntryName)
    }

    // MARK: - DirectoryExtractor.resumeEntry

    @Test func resumeEntryRefusesASymbolicLinkInPlaceOfTheFile() throws {
        let dir = try TemporaryDirectory()
        let outside = dir.appending("outside.bin")
        try Data(repeating: 7, count: 10).write(to: outside)
        let out = dir.appending("out")
        try FileManager.default.createDirectory(at: out.appending(path: "d"), withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: out.appending(path: "d/four.bin"), withDestinationURL: outside)
        let extractor = try DirectoryExtractor(destination: out)
        let entry = PackEntryExpectation(name: "d/four.bin", method: .stored, storedSize: 20, size: 20, headerOffset: 0, sha256: String(repeating: "0", count: 64))
        let error = #expect(throws: FormatError.self) { try extractor.resumeEntry(entry, heldBytes: 10) }
        #expect(error?.code == .unsafeEntryName)
        #expect(error?.field == "d/four.bin")
        #expect(throws: FormatError.self) { try extractor.writeEntryData(UnsafeRawBufferPointer(start: nil, count: 0)) }
        #expect(try Data(contentsOf: outside) == Data(repeating: 7, count: 10))
    }

    @Test func resumeEntryRefusesASymbolicLinkedDirectoryAndAFIFO() throws {
        let dir = try TemporaryDirectory()
        let out = dir.appending("out")
        try FileManager.default.createDirectory(at: dir.appending("elsewhere"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: out, withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(at: out.appending(path: "d"), withDestinationURL: dir.appending("elsewhere"))
        try Data(count: 10).write(to: dir.appending("elsewhere/four.bin"))
        #expect(mkfifo(out.appending(path: "fifo.bin").path, 0o644) == 0)
        let extractor = try DirectoryExtractor(destination: out)
        for name in ["d/four.bin", "fifo.bin"] {
            let entry = PackEntryExpectation(name: name, method: .stored, storedSize: 20, size: 20, headerOffset: 0, sha256: String(repeating: "0", count: 64))
            let error = #expect(throws: FormatError.self) { try extractor.resumeEntry(entry, heldBytes: 10) }
            #expect(error?.code == .unsafeEntryName, "\(name)")
        }
    }

    @Test func resumeEntryRefusesAFileOfAnotherSize() throws {
        let dir = try TemporaryDirectory()
        try FileManager.default.createDirectory(at: dir.appending("d"), withIntermediateDirectories: true)
        try Data(repeating: 1, count: 10).write(to: dir.appending("d/four.bin"))
        let extractor = try DirectoryExtractor(destination: dir.url)
        let entry = PackEntryExpectation(name: "d/four.bin", method: .stored, storedSize: 20, size: 20, headerOffset: 0, sha256: String(repeating: "0", count: 64))
        let error = #expect(throws: FormatError.self) { try extractor.resumeEntry(entry, heldBytes: 11) }
        #expect(error?.code == .sizeMismatch)
        try extractor.resumeEntry(entry, heldBytes: 10)
        try Data(repeating: 2, count: 10).withUnsafeBytes { try extractor.writeEntryData($0) }
        extractor.closeKeepingExtracted()
        #expect(try Data(contentsOf: dir.appending("d/four.bin")) == Data(repeating: 1, count: 10) + Data(repeating: 2, count: 10))
    }
}
