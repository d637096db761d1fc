import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// Split metadata and compact manifests crafted outside the project: numbers with more than one
/// encoding, counts the bytes could not hold, and records that stop decoding where they go wrong.
struct HostileMetadataTests {
    /// The compact bytes of a one-file table (layout 1) whose file's size is the varint `size`.
    static func table(size: [UInt8], count: UInt64 = 1, path: String = "a.txt", after: [UInt8] = []) -> Data {
        var out = ByteWriter()
        out.append(PackFileTable.magic)
        out.bytes.append(PackFileTable.layout)
        out.append([UInt8](repeating: 0xAB, count: 32))
        out.varint(count)
        out.string(path)
        out.bytes.append(0)
        out.append([UInt8](repeating: 1, count: 32))
        out.varint(UInt64(1))
        out.append(size)
        out.varint(UInt64(0))
        out.bytes.append(0)
        out.append(after)
        return Data(out.bytes)
    }

    /// The varint at the start of `bytes`, as the compact reader reads it.
    static func varint(_ bytes: [UInt8]) -> Result<UInt64, FormatError> {
        bytes.withUnsafeBytes { raw in
            var reader = CompactReader(bytes: raw)
            do throws(FormatError) { return .success(try reader.varint()) } catch { return .failure(error) }
        }
    }

    /// The count at the start of `bytes` of items taking at least `minimumBytes` each.
    static func length(_ bytes: [UInt8], minimumBytes: Int) -> Result<Int, FormatError> {
        bytes.withUnsafeBytes { raw in
            var reader = CompactReader(bytes: raw)
            do throws(FormatError) { return .success(try reader.length(minimumBytes: minimumBytes)) } catch { return .failure(error) }
        }
    }

    @Test func theCanonicalVarintDecodes() throws {
        let decoded = try PackFileTable.decode(from: try SplitMetadata.served(compact: Self.table(size: [0x85, 0x01])))
        #expect(decoded.files.map(\.size) == [133])
    }

    /// A tenth byte above 1 held bits past the 64th, which were dropped (5 + 2^64 read as 5); a
    /// trailing zero group is a second encoding of the same number. FORMAT.md: `corrupt-data`.
    @Test(arguments: [
        [0x85] + [UInt8](repeating: 0x80, count: 8) + [0x02],  // 5 + 2^64: the high bit dropped
        [0x85] + [UInt8](repeating: 0x80, count: 8) + [0x7E],  // 5 + bits 64...69
        [0x85, 0x00],  // 5, overlong
        [0x80, 0x00],  // 0, overlong
        [0x85, 0x80, 0x80, 0x00],  // 5 in four bytes
    ] as [[UInt8]])
    func aVarintWithMoreThanOneEncodingOrOver64BitsIsCorrupt(size: [UInt8]) throws {
        let error = #expect(throws: FormatError.self) {
            try PackFileTable.decode(from: try SplitMetadata.served(compact: Self.table(size: size)))
        }
        #expect(error?.code == .corruptData)
    }

    /// The compact manifest reads its varints with the same reader: an overlong number there is
    /// refused too, checksum or not.
    @Test func theCompactReaderRefusesOverlongNumbersEverywhere() throws {
        for bytes in [[0x85, 0x00], [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x03]] as [[UInt8]] {
            #expect(throws: FormatError.self) { try Self.varint(bytes).get() }
            if case .failure(let error) = Self.varint(bytes) { #expect(error.code == .corruptData) }
        }
        #expect(try Self.varint([0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]).get() == UInt64.max)
    }

    /// A count is checked against what the bytes left could hold at the fewest bytes an item
    /// takes, not one byte an item: 1,000 file records cannot fit in 1,000 bytes.
    @Test func aCountTheBytesCannotHoldIsRefusedBeforeAnythingIsAllocated() throws {
        var out = ByteWriter()
        out.varint(UInt64(1000))
        out.append([UInt8](repeating: 0, count: 1000))
        let error = #expect(throws: FormatError.self) { try Self.length(out.bytes, minimumBytes: PackFileTable.minimumFileBytes).get() }
        #expect(error?.code == .corruptData)
        // Padded with as many records' worth of bytes, the same table reads its count.
        var padded = ByteWriter()
        padded.varint(UInt64(10))
        padded.append([UInt8](repeating: 0, count: 10 * PackFileTable.minimumFileBytes))
        #expect(try Self.length(padded.bytes, minimumBytes: PackFileTable.minimumFileBytes).get() == 10)
    }

    /// The bin says how many files the table holds; a table claiming more is refused on its
    /// count, before its records are decoded (the second one here would be `corrupt-data`).
    @Test func aTableClaimingMoreFilesThanItsBinIsRefusedOnItsCount() throws {
        let full = SplitMetadataTests.manifest()
        let served = try SplitMetadataTests.Served(full)
        let (_, entry) = try served.table(of: full.packs[0].id)
        let original = try PackFileTable.decode(from: served.files[try served.table(of: full.packs[0].id).path]!)
        var out = ByteWriter()
        out.append(PackFileTable.magic)
        out.bytes.append(PackFileTable.layout)
        try out.sha256(original.pack)
        out.varint(UInt64(entry.fileCount + 1))
        out.append([UInt8](repeating: 0x07, count: 64 * (entry.fileCount + 1)))
        let data = try SplitMetadata.served(compact: Data(out.bytes))
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: data, expected: entry, file: "t") }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("lists \(entry.fileCount + 1) files, but the bin says") == true)
    }

    /// A record that fails its own checks stops decoding there: the damaged bytes after it are
    /// never read (before, every record was decoded first, and the table failed as corrupt).
    @Test func decodingStopsAtTheFirstBadRecord() throws {
        let compact = Self.table(size: [0x01], count: 2, path: "../escape", after: [UInt8](repeating: 0xFF, count: 40))
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: try SplitMetadata.served(compact: compact)) }
        #expect(error?.code == .invalidPath)
    }

    /// Sixteen tables of 48 MiB each are each within the per-file limit, but together over the
    /// budget of metadata a client holds at once: refused from their pins, before any is fetched.
    @Test func metadataOverTheHeldBudgetIsRefusedFromItsPins() throws {
        let pin = { (size: Int64) in MetadataPin(sha256: String(repeating: "a", count: 64), size: size) }
        let error = #expect(throws: FormatError.self) { try SplitMetadata.checkBudget(Array(repeating: pin(48 << 20), count: 16)) }
        #expect(error?.code == .sizeMismatch && error?.field == "maximumHeldBytes")
        #expect(error?.message.contains("SplitMetadata.maximumHeldBytes") == true)
        #expect(throws: FormatError.self) { try SplitMetadata.checkBudget([pin(1 << 20)], holding: SplitMetadata.maximumHeldBytes) }
        try SplitMetadata.checkBudget(Array(repeating: pin(200 << 10), count: 300))
    }

    /// A split manifest over its byte limit is refused on its size, before its JSON is decoded
    /// (before, it was decoded whole twice and refused only for its bin count).
    @Test func aSplitManifestOverItsByteLimitIsRefusedBeforeDecoding() throws {
        let data = CatalogFixture.splitManifestJSON(bins: 200_000, catalogID: "hostile")
        #expect(data.count > SplitManifest.maximumBytes)
        let error = #expect(throws: FormatError.self) { try PublishedManifest.decode(from: data) }
        #expect(error?.code == .sizeMismatch && error?.field == "maximumBytes")
        #expect(error?.message.contains("SplitManifest.maximumBytes") == true)
    }

    /// More bins than the format allows are counted in the pass that checks the keys and refused
    /// there, naming the limit; a manifest within it still decodes.
    @Test func aSplitManifestWithMoreBinsThanTheFormatAllowsIsRefusedFromItsShape() throws {
        let data = CatalogFixture.splitManifestJSON(bins: SplitManifest.maximumBinCount + 1, catalogID: "hostile")
        let error = #expect(throws: FormatError.self) { try PublishedManifest.decode(from: data) }
        #expect(error?.code == .invalidValue && error?.field == "bins")
        #expect(error?.message.contains("found \(SplitManifest.maximumBinCount + 1), refused before decoding") == true)
        guard case .split(let split) = try PublishedManifest.decode(from: CatalogFixture.splitManifestJSON(bins: 4, catalogID: "hostile")) else {
            Issue.record("a split manifest of 4 bins did not decode as one")
            return
        }
        #expect(split.bins.count == 4)
    }

    /// Tables that together list more files than one request decodes are refused on their counts:
    /// from the bins' counts before any is fetched, and by a table's own count before any of its
    /// records is decoded (before, its records were decoded until one failed).
    @Test func fileRecordsOverTheBudgetAreRefusedOnTheirCounts() throws {
        let error = #expect(throws: FormatError.self) {
            try SplitMetadata.checkRecordBudget([SplitMetadata.maximumFileRecords / 2, SplitMetadata.maximumFileRecords / 2 + 1])
        }
        #expect(error?.code == .sizeMismatch && error?.field == "maximumFileRecords")
        #expect(error?.message.contains("SplitMetadata.maximumFileRecords") == true)
        try SplitMetadata.checkRecordBudget([SplitMetadata.maximumFileRecords / 2, SplitMetadata.maximumFileRecords / 2])
        #expect(throws: FormatError.self) { try SplitMetadata.checkRecordBudget([.max, .max]) }

        // A table whose count its bytes could hold (38 bytes a record), one over the budget.
        let count = SplitMetadata.maximumFileRecords + 1
        var out = ByteWriter()
        out.append(PackFileTable.magic)
        out.bytes.append(PackFileTable.layout)
        out.append([UInt8](repeating: 0xAB, count: 32))
        out.varint(UInt64(count))
        out.append(deterministicBytes(count: count * PackFileTable.minimumFileBytes, seed: 4003))
        let tableError = #expect(throws: FormatError.self) {
            try PackFileTable.decode(from: try SplitMetadata.served(compact: Data(out.bytes)))
        }
        #expect(tableError?.code == .sizeMismatch && tableError?.field == "maximumFileRecords")
    }
}
