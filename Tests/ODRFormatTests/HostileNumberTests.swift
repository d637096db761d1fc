import Foundation
import ODRFormat
import ODRTestSupport
import Testing

/// Sizes, offsets and counts from outside that no real archive or manifest has: each is refused
/// with a typed error where it enters, never by trapping on an overflow.
struct HostileNumberTests {
    /// A pack written with ZIP64 end records (a threshold of 1 forces them), its bytes and entries.
    static func zip64Pack(in dir: TemporaryDirectory) throws -> (bytes: Data, entries: [PackEntryExpectation]) {
        var options = PackWriter.Options()
        options.zip64Threshold = 1
        let (url, summary) = try PackFixtures.writePack([("a.txt", Data("alpha".utf8)), ("b.txt", Data("beta".utf8))], in: dir, options: options)
        return (try Data(contentsOf: url), summary.entries.map(\.expectation))
    }

    static func put(_ value: UInt64, at offset: Int, in bytes: inout Data) {
        for i in 0..<8 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt64(i))) }
    }

    /// Every reader of whole archives and of archive ends: the file reader, the streaming reader
    /// and the range reader checking the central directory. Returns each one's error.
    static func errorsOfEveryReader(_ bytes: Data, _ entries: [PackEntryExpectation], in dir: TemporaryDirectory) throws -> [String: FormatError?] {
        let url = dir.appending("hostile.zip")
        try bytes.write(to: url)
        var errors: [String: FormatError?] = [:]
        let archive = try PackArchive(contentsOf: url)
        errors["entries"] = #expect(throws: FormatError.self) { _ = try archive.entries() }
        errors["verify"] = #expect(throws: FormatError.self) { try archive.verify(expecting: entries, archiveSHA256: nil) }
        errors["range"] = #expect(throws: FormatError.self) {
            let reader = try PackRangeReader(range: 0..<Int64(bytes.count), targets: entries.map { .init(entry: $0) },
                                             sink: PackRangeReaderTests.RecordingSink(), checkingDirectoryOf: entries)
            try reader.consume(bytes)
            try reader.finish()
        }
        return errors
    }

    @Test func theZIP64FixtureIsReadableAsWritten() throws {
        let dir = try TemporaryDirectory()
        let (bytes, entries) = try Self.zip64Pack(in: dir)
        let url = dir.appending("good.zip")
        try bytes.write(to: url)
        #expect(try PackArchive(contentsOf: url).entries().map(\.name) == ["a.txt", "b.txt"])
        try PackArchive(contentsOf: url).verify(expecting: entries, archiveSHA256: nil)
    }

    /// The ZIP64 locator's offset of the ZIP64 end record is any 64-bit number; 2^63 and above
    /// trapped when converted to Int64, 2^63-1 when the record's size was added to it.
    @Test(arguments: [UInt64(1) << 63, (UInt64(1) << 63) - 1, UInt64.max, (UInt64(1) << 63) + 5])
    func aZIP64LocatorPointingAnywhereIsMalformed(offset: UInt64) throws {
        let dir = try TemporaryDirectory()
        var (bytes, entries) = try Self.zip64Pack(in: dir)
        // The locator is the 20 bytes before the 22-byte end record; its offset field is at +8.
        Self.put(offset, at: bytes.count - 22 - 20 + 8, in: &bytes)
        for (reader, error) in try Self.errorsOfEveryReader(bytes, entries, in: dir) {
            #expect(error?.code == .malformedArchive, "\(reader): \(String(describing: error))")
        }
    }

    /// A ZIP64 end record declaring 2^64-1 entries, directory bytes and directory offset: clamped to
    /// Int64.max, then added to the directory's start, it trapped in the range reader.
    @Test(arguments: [32, 40, 48])  // entries, directory size, directory offset
    func aZIP64EndRecordDeclaringImpossibleSizesIsMalformed(field: Int) throws {
        let dir = try TemporaryDirectory()
        var (bytes, entries) = try Self.zip64Pack(in: dir)
        let record = bytes.count - 22 - 20 - 56
        Self.put(UInt64.max, at: record + field, in: &bytes)
        for (reader, error) in try Self.errorsOfEveryReader(bytes, entries, in: dir) {
            #expect(error?.code == .malformedArchive, "\(reader): \(String(describing: error))")
        }
    }

    /// Sizes just inside Int64 (so not refused as impossible) whose sum with the directory's
    /// offset overflows.
    @Test func aZIP64DirectorySizeNearInt64MaxIsMalformed() throws {
        let dir = try TemporaryDirectory()
        var (bytes, entries) = try Self.zip64Pack(in: dir)
        let record = bytes.count - 22 - 20 - 56
        Self.put(UInt64(Int64.max), at: record + 40, in: &bytes)
        for (reader, error) in try Self.errorsOfEveryReader(bytes, entries, in: dir) {
            #expect(error?.code == .malformedArchive, "\(reader): \(String(describing: error))")
        }
    }

    /// Entries whose declared offset or size is near Int64.max: reading them by offset is refused.
    @Test(arguments: [(Int64.max, Int64(5)), (Int64.max - 10, Int64(5)), (Int64(0), Int64.max)])
    func entriesNearInt64MaxAreRefusedByTheFileReader(headerOffset: Int64, storedSize: Int64) throws {
        let dir = try TemporaryDirectory()
        let (bytes, entries) = try Self.zip64Pack(in: dir)
        let url = dir.appending("pack.zip")
        try bytes.write(to: url)
        var entry = entries[0]
        entry.headerOffset = headerOffset
        entry.storedSize = storedSize
        entry.size = storedSize
        let archive = try PackArchive(contentsOf: url)
        let extracted = #expect(throws: FormatError.self) { _ = try archive.contents(of: entry) }
        #expect([.truncated, .entryMismatch].contains(extracted?.code), "\(String(describing: extracted))")
        let ranged = #expect(throws: FormatError.self) { _ = try archive.recordRange(of: entry) }
        #expect([.truncated, .entryMismatch].contains(ranged?.code), "\(String(describing: ranged))")
    }

    /// An archive that shrinks after it was opened (its size is read once): the header read comes
    /// back short, which trapped when parsed.
    @Test func anArchiveThatShrinksAfterOpeningIsTruncated() throws {
        let dir = try TemporaryDirectory()
        let (bytes, entries) = try Self.zip64Pack(in: dir)
        let url = dir.appending("shrinking.zip")
        try bytes.write(to: url)
        let archive = try PackArchive(contentsOf: url)
        let handle = try FileHandle(forWritingTo: url)
        try handle.truncate(atOffset: UInt64(entries[1].headerOffset + 10))
        try handle.close()
        let error = #expect(throws: FormatError.self) { _ = try archive.contents(of: entries[1]) }
        #expect(error?.code == .truncated)
    }

    /// A resume read from a damaged journal: a data offset near Int64.max (whose sum with the held
    /// bytes overflowed), a negative one, a negative held count.
    @Test(arguments: [(Int64.max, Int64(3)), (Int64.max - 3, Int64(5)), (Int64.min, Int64(0)), (Int64(100), Int64(-1))])
    func anImpossibleResumeIsAnInvalidOperation(dataOffset: Int64, heldBytes: Int64) throws {
        let dir = try TemporaryDirectory()
        let (bytes, entries) = try Self.zip64Pack(in: dir)
        let resume = PackRangeReader.Resume(dataOffset: dataOffset, heldBytes: heldBytes, heldHash: StreamingSHA256())
        let error = #expect(throws: FormatError.self) {
            _ = try PackRangeReader(range: 0..<Int64(bytes.count), targets: [.init(entry: entries[0], resume: resume)], sink: PackRangeReaderTests.RecordingSink())
        }
        #expect(error?.code == .invalidOperation, "\(String(describing: error))")
    }

    /// An expectation with a negative size: `0...storedSize` trapped when resuming it.
    @Test func resumingAnEntryOfNegativeSizeIsAnInvalidOperation() throws {
        var entry = PackEntryExpectation(name: "a.txt", method: .stored, storedSize: -1, size: -1, headerOffset: 0, sha256: String(repeating: "0", count: 64))
        let resume = PackRangeReader.Resume(dataOffset: 40, heldBytes: 0, heldHash: StreamingSHA256())
        let error = #expect(throws: FormatError.self) {
            _ = try PackRangeReader(range: 0..<100, targets: [.init(entry: entry, resume: resume)], sink: PackRangeReaderTests.RecordingSink())
        }
        #expect(error?.code == .invalidOperation)
        entry.storedSize = 5
        #expect(throws: FormatError.self) {
            _ = try PackRangeReader(range: 0..<100, targets: [.init(entry: entry, resume: resume)], sink: PackRangeReaderTests.RecordingSink())
        }
    }

    @Test func aRangeThatStartsBelowZeroIsAnInvalidOperation() throws {
        let error = #expect(throws: FormatError.self) {
            _ = try PackRangeReader(range: Int64.min..<Int64.max, targets: [], sink: PackRangeReaderTests.RecordingSink())
        }
        #expect(error?.code == .invalidOperation)
    }

    /// A catalog whose key rotations already reach set Int.max: rotating again trapped adding 1.
    @Test func rotatingPastTheLastKeySetIsAnInvalidValue() throws {
        let old = SigningKey.generate(), new = SigningKey.generate()
        var index = CatalogIndex(id: "game", serial: 1, distributions: ["live": 1], versions: [.init(number: 1, manifest: "versions/1.json")])
        index.keyRotations = [KeyRotation(version: Int.max, keys: [old.publicKey.hex], threshold: 1)]
        let error = #expect(throws: FormatError.self) { _ = try index.rotatingKeys(to: [new.publicKey], threshold: 1, signedBy: [old]) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "keyRotations")
    }

    // MARK: - Manifests

    /// A file whose header offset is near Int64.max: `headerOffset + storedSize` trapped in validation.
    @Test(arguments: [Int64.max, Int64.max - 100, Int64.max - 59])
    func aHeaderOffsetNearInt64MaxIsAnInvalidValue(offset: Int64) throws {
        var manifest = sampleManifest()
        manifest.files[1].headerOffset = offset
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: try JSONEncoder().encode(manifest)) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "files[1].headerOffset")
    }

    /// Packs whose sizes are each valid but add up to more than Int64.max: every sum of packs (a
    /// tag's, a request's, `odrpack inspect`'s total) would overflow, so the manifest is refused.
    @Test(arguments: ["archiveBytes", "installedBytes"])
    func packSizesThatAddUpBeyondInt64AreAnInvalidValue(key: String) throws {
        var manifest = sampleManifest()
        for i in manifest.packs.indices {
            if key == "archiveBytes" { manifest.packs[i].archiveBytes = Int64.max / 2 + 1 } else { manifest.packs[i].installedBytes = Int64.max / 2 + 1 }
        }
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: try JSONEncoder().encode(manifest)) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "packs")
        #expect(error?.message.contains(key) == true)
    }

    /// The largest sizes that still add up are accepted.
    @Test func theLargestSizesThatAddUpAreAccepted() throws {
        var manifest = sampleManifest()
        manifest.packs[0].archiveBytes = Int64.max / 2
        manifest.packs[1].archiveBytes = Int64.max / 2 + 1
        let decoded = try VersionManifest.decode(from: try JSONEncoder().encode(manifest))
        #expect(decoded.packs.map(\.archiveBytes).reduce(0, +) == Int64.max)
    }

    /// A compact manifest whose numbers no validated manifest has (the checksum is not a
    /// signature: the store's copy may be tampered with) is refused, not decoded into sizes
    /// that overflow later.
    @Test(arguments: ["negative pack size", "header offset beyond the pack", "pack sizes beyond Int64"])
    func aCompactManifestWithImpossibleNumbersIsCorrupt(problem: String) throws {
        var manifest = sampleManifest()
        switch problem {
        case "negative pack size": manifest.packs[0].installedBytes = -1
        case "header offset beyond the pack": manifest.files[1].headerOffset = Int64.max
        default: manifest.packs = manifest.packs.map { var pack = $0; pack.archiveBytes = Int64.max; return pack }
        }
        let data = try manifest.compactEncoded()
        let error = #expect(throws: FormatError.self) { _ = try VersionManifest(compact: data) }
        #expect(error?.code == .corruptData)
        #expect(try VersionManifest(compact: try sampleManifest().compactEncoded()) == sampleManifest())
    }
}
