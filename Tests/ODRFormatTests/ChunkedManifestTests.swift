import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// Manifests with chunked files: format version 4 (5 when split), the chunk table in JSON, in the
/// compact form and in the per-pack file tables, and the refusals of tables that do not tile.
struct ChunkedManifestTests {
    static let digestA = String(repeating: "1", count: 64), digestB = String(repeating: "2", count: 64)

    /// The split tests' sample manifest, with both files chunked.
    static func chunkedManifest() -> VersionManifest {
        var manifest = SplitMetadataTests.manifest()
        manifest.files[0].chunks = [FileChunk(size: 200, storedSize: 100, sha256: digestA), FileChunk(size: 100, storedSize: 50, sha256: digestB)]
        manifest.files[1].chunks = [FileChunk(size: 30, storedSize: 30, sha256: digestA), FileChunk(size: 30, storedSize: 30, sha256: digestB)]
        manifest.formatVersion = VersionManifest.chunkedFormatVersion
        return manifest
    }

    @Test func aChunkedManifestHasFormat4AndItsTablesInJSON() throws {
        let manifest = Self.chunkedManifest()
        #expect(VersionManifest.formatVersion(forAxes: [], files: manifest.files) == 4)
        let data = try manifest.encoded()
        let json = try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
        #expect(json["formatVersion"] as? Int == 4)
        let files = try #require(json["files"] as? [[String: Any]])
        let chunks = try #require(files[0]["chunks"] as? [[String: Any]])
        #expect(chunks.count == 2 && chunks[0]["size"] as? Int == 200 && chunks[0]["storedSize"] as? Int == 100 && chunks[0]["sha256"] as? String == Self.digestA)
        let decoded = try VersionManifest.decode(from: data)
        #expect(decoded == manifest)
        #expect(try decoded.encoded() == data)
    }

    @Test func anUnchunkedManifestKeepsItsVersionAndHasNoChunksKey() throws {
        let data = try sampleManifest().encoded()
        #expect(sampleManifest().formatVersion == 1)
        #expect(!String(decoding: data, as: UTF8.self).contains("chunks"))
    }

    @Test func chunksInAnOlderFormatVersionAreRefused() throws {
        for version in [1, 2] {
            var manifest = Self.chunkedManifest()
            manifest.formatVersion = version
            if version == 2 { manifest.variantAxes = [] }
            let error = #expect(throws: FormatError.self) { try manifest.validate() }
            #expect(error?.code == .invalidValue)
            #expect(error?.field == "files[0].chunks")
        }
    }

    @Test func aVersionNoReaderKnowsIsRefusedAsUnsupported() throws {
        var text = String(decoding: try Self.chunkedManifest().encoded(), as: UTF8.self)
        let before = text
        text = text.replacingOccurrences(of: "\"formatVersion\" : 4", with: "\"formatVersion\" : 6")
        #expect(text != before)
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: Data(text.utf8)) }
        #expect(error?.code == .unsupportedFormatVersion)
    }

    @Test func aTableThatDoesNotTileItsFileIsRefusedInJSON() throws {
        var manifest = Self.chunkedManifest()
        manifest.files[0].chunks[1].size = 99
        var error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: try CatalogJSON.encode(manifest)) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "files[0].chunks")
        manifest = Self.chunkedManifest()
        manifest.files[1].chunks[0].storedSize = 29
        manifest.files[1].chunks[1].storedSize = 31
        error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: try CatalogJSON.encode(manifest)) }
        #expect(error?.field == "files[1].chunks[0].storedSize")
    }

    @Test func filesSharingAnEntryMustAgreeAboutItsChunks() throws {
        var manifest = Self.chunkedManifest()
        var twin = manifest.files[0]
        twin.path = "Levels/1/twin.json"
        twin.chunks = [FileChunk(size: 300, storedSize: 150, sha256: Self.digestA)]
        manifest.files.insert(twin, at: 1)
        let error = #expect(throws: FormatError.self) { try manifest.validate() }
        #expect(error?.code == .duplicate)
    }

    @Test func theCompactFormKeepsChunksInLayout4AndOthersInLayout3() throws {
        let manifest = Self.chunkedManifest()
        let compact = try manifest.compactEncoded()
        #expect(compact[4] == 4)
        let decoded = try VersionManifest(compact: compact)
        #expect(decoded == manifest)
        #expect(decoded.makeIndex().files(atPath: "Levels/1/map.json").first?.chunks == manifest.files[0].chunks)
        #expect(try sampleManifest().compactEncoded()[4] == 3)
        for length in 0..<compact.count {
            #expect(throws: FormatError.self) { try VersionManifest(compact: compact.prefix(length)) }
        }
    }

    @Test func aCompactFormWithATableThatDoesNotTileIsRefused() throws {
        // The checksum matches (the writer computed it), so only the table's own check can refuse it.
        for breakage in [{ (m: inout VersionManifest) in m.files[0].chunks[0].size = 201 },
                         { (m: inout VersionManifest) in m.files[1].chunks[0].storedSize = 31 },
                         { (m: inout VersionManifest) in m.files[0].chunks[0].size = 0 }] {
            var manifest = Self.chunkedManifest()
            breakage(&manifest)
            let error = #expect(throws: FormatError.self) { try VersionManifest(compact: try manifest.compactEncoded()) }
            #expect(error?.code == .corruptData)
        }
    }

    @Test func aSplitChunkedManifestHasFormat5AndItsTablesLayout2() throws {
        let manifest = Self.chunkedManifest()
        let served = try SplitMetadataTests.Served(manifest)
        #expect(served.manifest.formatVersion == 5)
        #expect(try served.assemble() == manifest)
        let table = try served.table(of: manifest.packs[0].id)
        let compact = try SplitMetadata.inflate(try served.fetch(table.path), file: table.path)
        #expect(compact[4] == 2)
        // A whole-manifest reader refuses it as a version, as readers of format 3 only do.
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: try served.manifest.encoded()) }
        #expect(error?.code == .unsupportedFormatVersion)
        // And a split manifest without chunks stays format 3, its tables layout 1.
        let plain = try SplitMetadataTests.Served(SplitMetadataTests.manifest())
        #expect(plain.manifest.formatVersion == 3)
        let plainTable = try plain.table(of: manifest.packs[0].id)
        #expect(try SplitMetadata.inflate(try plain.fetch(plainTable.path), file: plainTable.path)[4] == 1)
    }

    @Test func aSplitManifestWhoseVersionDisagreesWithItsTablesIsRefused() throws {
        var served = try SplitMetadataTests.Served(Self.chunkedManifest())
        served.manifest.formatVersion = 3
        let error = #expect(throws: FormatError.self) { try served.assemble() }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "formatVersion")
        // The part a client uses is held to the same rule.
        let scoped = #expect(throws: FormatError.self) {
            try SplitMetadata.scoped(served.manifest, tags: ["level2"]) { try served.fetch($0) }
        }
        #expect(scoped?.code == .invalidValue)
        #expect(scoped?.field == "formatVersion")
        served.manifest.formatVersion = 5
        #expect(try SplitMetadata.scoped(served.manifest, tags: ["level2"]) { try served.fetch($0) }.manifest.formatVersion == 4)
    }

    @Test func aFileTableWithATableThatDoesNotTileIsRefused() throws {
        let manifest = Self.chunkedManifest()
        var files = manifest.files.filter { $0.pack == manifest.packs[1].id }
        files[0].chunks[0].size = 31
        files[0].chunks[0].storedSize = 31
        let data = try PackFileTable(pack: manifest.packs[1].id, files: files).encoded()
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: data) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "the file table.chunks")
        // A count past the limit is refused before anything is allocated for it.
        var bytes = ByteWriter()
        bytes.append(Array("ODRT".utf8))
        bytes.bytes.append(2)
        try bytes.sha256(manifest.packs[1].id)
        bytes.varint(UInt64(1))
        bytes.string("a")
        bytes.bytes.append(0)
        try bytes.sha256(Self.digestA)
        for _ in 0..<3 { bytes.varint(UInt64(1)) }
        bytes.bytes.append(0)
        bytes.varint(UInt64(1) << 40)
        let bomb = try SplitMetadata.served(compact: Data(bytes.bytes))
        let refused = #expect(throws: FormatError.self) { try PackFileTable.decode(from: bomb) }
        #expect(refused?.code == .corruptData)
    }
}
