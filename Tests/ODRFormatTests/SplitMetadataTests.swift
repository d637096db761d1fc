import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// Split metadata (format 3): a manifest of bin pins, tag bins and per-pack file tables, and
/// every way a hostile server can serve them wrong.
struct SplitMetadataTests {
    /// The sample manifest with sizes a pack's files add up to (what the readers of tables check).
    static func manifest() -> VersionManifest {
        var manifest = sampleManifest()
        manifest.packs[1].installedBytes = 60
        manifest.tags[0].installedBytes = 360
        manifest.tags[1].installedBytes = 60
        return manifest
    }

    /// The two-axis variant manifest with entry counts and sizes its files add up to.
    static func variantManifest() -> VersionManifest {
        var manifest = ManifestVariantTests.twoAxisManifest()
        for i in manifest.packs.indices {
            let entries = manifest.expectedEntries(inPack: manifest.packs[i].id)
            manifest.packs[i].entryCount = entries.count
            manifest.packs[i].installedBytes = entries.reduce(0) { $0 + $1.size }
        }
        manifest.tags[0].installedBytes = manifest.packs.reduce(0) { $0 + $1.installedBytes }
        return manifest
    }

    /// A split catalog in memory: path -> bytes as served, and its split manifest.
    struct Served {
        var files: [String: Data] = [:]
        var manifest: SplitManifest

        init(_ full: VersionManifest, binCount: Int? = nil) throws {
            var files: [String: Data] = [:]
            manifest = try SplitMetadata.split(
                full, binCount: binCount,
                tablePin: { (table: PackFileTable) throws(FormatError) -> MetadataPin in
                    let data = try table.encoded()
                    let pin = MetadataPin(of: data)
                    files[SplitMetadata.tablePath(for: pin)] = data
                    return pin
                },
                binPin: { (bin: TagBin) throws(FormatError) -> MetadataPin in
                    let data = try bin.encoded()
                    let pin = MetadataPin(of: data)
                    files[SplitMetadata.binPath(for: pin)] = data
                    return pin
                })
            self.files = files
        }

        func fetch(_ path: String) throws -> Data {
            guard let data = files[path] else { throw FormatError(.io, "404: \(path)") }
            return data
        }

        func assemble() throws -> VersionManifest { try SplitMetadata.assemble(manifest) { try fetch($0) } }

        /// The table of `pack`, its pin and path, as the bins pin it.
        func table(of pack: String) throws -> (path: String, entry: BinPack) {
            for pin in manifest.bins {
                let bin = try TagBin.decode(from: try fetch(SplitMetadata.binPath(for: pin)))
                if let entry = bin.packs.first(where: { $0.pack.id == pack }) { return (SplitMetadata.tablePath(for: entry.table), entry) }
            }
            throw FormatError(.danglingReference, "no pack \(pack)")
        }
    }

    @Test func splitThenAssembleGivesTheSameManifest() throws {
        for full in [Self.manifest(), Self.variantManifest()] {
            for binCount in [1, 2, 4] {
                let served = try Served(full, binCount: binCount)
                #expect(served.manifest.bins.count == binCount)
                #expect(try served.assemble() == full)
                // The top manifest is JSON that a format 1/2 reader refuses as a version, not as bad JSON.
                let top = try served.manifest.encoded()
                #expect(try SplitManifest.decode(from: top) == served.manifest)
                guard case .split = try PublishedManifest.decode(from: top) else { Issue.record("not split"); continue }
            }
        }
    }

    @Test func splittingIsDeterministic() throws {
        let first = try Served(Self.manifest()), second = try Served(Self.manifest())
        #expect(first.files == second.files)
        #expect(try first.manifest.encoded() == second.manifest.encoded())
    }

    /// The placement rule of FORMAT.md, checked against Python's hashlib:
    /// `int.from_bytes(hashlib.sha256(name.encode()).digest()[:8], "big") % bins`.
    @Test func tagsAreBinnedAsDocumented() {
        #expect(SplitManifest.bin(ofTag: "level1", binCount: 256) == 75)
        #expect(SplitManifest.bin(ofTag: "level2", binCount: 256) == 166)
        #expect(SplitManifest.bin(ofTag: "t00000", binCount: 256) == 157)
        #expect(SplitManifest.bin(ofTag: "t00001", binCount: 4) == 0)
        #expect(SplitManifest.binCount(forTagCount: 0) == 1)
        #expect(SplitManifest.binCount(forTagCount: 64) == 1)
        #expect(SplitManifest.binCount(forTagCount: 65) == 2)
        #expect(SplitManifest.binCount(forTagCount: 10_000) == 256)
    }

    @Test func aFormat3ManifestIsRefusedByTheWholeManifestReader() throws {
        let top = try Served(Self.manifest()).manifest.encoded()
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: top) }
        #expect(error?.code == .unsupportedFormatVersion)
        #expect(error?.message.contains("--whole-manifest") == true)
    }

    @Test func filesForTagsListsTheirBinsAndTablesOnly() throws {
        let served = try Served(Self.manifest(), binCount: 4)
        let level2 = try SplitMetadata.files(forTags: ["level2"], of: served.manifest) { try served.fetch($0) }
        let pack = Self.manifest().packs[1].id
        #expect(level2.map(\.path) == [SplitMetadata.binPath(for: served.manifest.bins[2]), try served.table(of: pack).path])
        let both = try SplitMetadata.files(forTags: ["level1", "level2"], of: served.manifest) { try served.fetch($0) }
        #expect(both.count == 4)  // two bins, two tables (pack b once)
        #expect(Set(both.map(\.path)).count == 4)
        let error = #expect(throws: FormatError.self) { try SplitMetadata.files(forTags: ["nope"], of: served.manifest) { try served.fetch($0) } }
        #expect(error?.code == .danglingReference)
    }

    // MARK: Bad input

    @Test func aTableWhoseHashDiffersFromItsPinIsRefused() throws {
        var served = try Served(Self.manifest())
        let (path, _) = try served.table(of: Self.manifest().packs[0].id)
        var bytes = served.files[path]!
        bytes[bytes.count / 2] ^= 0x01
        served.files[path] = bytes
        let error = #expect(throws: FormatError.self) { try served.assemble() }
        #expect(error?.code == .hashMismatch)
        #expect(error?.field == path)
    }

    @Test func aTableLongerOrShorterThanItsPinIsRefused() throws {
        for change in [{ (data: inout Data) in data.append(0) }, { (data: inout Data) in data.removeLast() }] {
            var served = try Served(Self.manifest())
            let (path, _) = try served.table(of: Self.manifest().packs[0].id)
            change(&served.files[path]!)
            let error = #expect(throws: FormatError.self) { try served.assemble() }
            #expect(error?.code == .sizeMismatch)
        }
    }

    /// A bin that pins, for pack a, a table (with a valid pin) that names pack b.
    @Test func aTableNamingAnotherPackIsRefused() throws {
        let full = Self.manifest()
        let served = try Served(full)
        let (_, entryA) = try served.table(of: full.packs[0].id)
        let (pathB, _) = try served.table(of: full.packs[1].id)
        let bytes = served.files[pathB]!
        let error = #expect(throws: FormatError.self) {
            try PackFileTable.decode(from: bytes, pin: MetadataPin(of: bytes), expected: entryA, file: pathB)
        }
        #expect(error?.code == .danglingReference)
        #expect(error?.message.contains("another pack") == true)
    }

    /// A table that names pack a but lists the files of pack b (another tag set): its entries
    /// cannot add up to pack a's installed bytes.
    @Test func aTableListingAnotherPacksFilesIsRefused() throws {
        let full = Self.manifest()
        let served = try Served(full)
        let (_, entryA) = try served.table(of: full.packs[0].id)
        var forged = try PackFileTable.decode(from: served.files[try served.table(of: full.packs[1].id).path]!)
        forged.pack = full.packs[0].id
        let bytes = try forged.encoded()
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: bytes, pin: MetadataPin(of: bytes), expected: entryA) }
        #expect(error?.code == .danglingReference)
        #expect(error?.message.contains("not those of pack") == true)
    }

    @Test func aBinListingATagOfAnotherBinIsRefused() throws {
        // level1 belongs in bin 1 of 2 (and bin 3 of 4); claim it for bin 0.
        let full = Self.manifest()
        let served = try Served(full, binCount: 2)
        var bin = try TagBin.decode(from: served.files[SplitMetadata.binPath(for: served.manifest.bins[1])]!)
        #expect(bin.tags.map(\.name) == ["level1"])
        bin.index = 0
        let error = #expect(throws: FormatError.self) { try TagBin.decode(from: try bin.encoded()) }
        #expect(error?.code == .invalidValue)
        #expect(error?.message.contains("belongs in bin 1") == true)
    }

    /// The bin of another position (or another version's bin count), with a pin that matches it.
    @Test func aBinServedForAnotherIsRefused() throws {
        var served = try Served(Self.manifest(), binCount: 4)
        served.manifest.bins.swapAt(2, 3)
        let error = #expect(throws: FormatError.self) { try served.assemble() }
        #expect(error?.code == .danglingReference)
        let missing = try Served(Self.manifest(), binCount: 4)
        var short = missing
        short.files.removeValue(forKey: SplitMetadata.binPath(for: missing.manifest.bins[0]))
        let notFound = #expect(throws: FormatError.self) { try short.assemble() }
        #expect(notFound?.code == .io)
    }

    @Test func everyTruncationOfABinOrTableIsATypedError() throws {
        let served = try Served(Self.manifest())
        for data in served.files.values {
            for length in 0..<data.count {
                #expect(throws: FormatError.self) { try TagBin.decode(from: data.prefix(length)) }
                #expect(throws: FormatError.self) { try PackFileTable.decode(from: data.prefix(length)) }
            }
            // Compact bytes cut short, deflated again: the inflater is happy, the layout reader is not.
            let compact = try SplitMetadata.inflate(data, file: "x")
            for length in 0..<compact.count {
                let cut = try SplitMetadata.served(compact: compact.prefix(length))
                let error = #expect(throws: FormatError.self) {
                    _ = try? TagBin.decode(from: cut)
                    _ = try PackFileTable.decode(from: cut)
                }
                #expect(error?.code == .corruptData)
            }
        }
    }

    @Test func aDecompressionBombIsStoppedAtTheLimit() throws {
        let bomb = try SplitMetadata.served(compact: Data(count: 4 << 20))
        #expect(bomb.count < 8 << 10)
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: bomb) }
        #expect(error?.code == .sizeMismatch)
        #expect(error?.message.contains("inflates to more than") == true)
    }

    /// Numbers too long for 64 bits, above Int64.max, and counts larger than the bytes left.
    @Test func overflowingNumbersAreRefused() throws {
        func table(_ body: (inout ByteWriter) -> Void) -> Data {
            var out = ByteWriter()
            out.append(PackFileTable.magic)
            out.bytes.append(PackFileTable.layout)
            out.append([UInt8](repeating: 0xAB, count: 32))
            body(&out)
            return Data(out.bytes)
        }
        func file(_ out: inout ByteWriter, size: [UInt8]) {
            out.varint(UInt64(1))
            out.string("a.txt")
            out.bytes.append(0)
            out.append([UInt8](repeating: 1, count: 32))
            out.varint(UInt64(1))
            out.append(size)
            out.varint(UInt64(0))
            out.bytes.append(0)
        }
        let cases: [Data] = [
            table { file(&$0, size: [UInt8](repeating: 0xFF, count: 10) + [0x01]) },  // more than 64 bits
            table { file(&$0, size: [0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0xFF, 0x01]) },  // 2^64-1 > Int64.max
            table { $0.varint(UInt64(1) << 40) },  // a file count beyond the bytes
            table { $0.varint(UInt64(1)); $0.varint(UInt64(1) << 40) },  // a path length beyond the bytes
        ]
        for compact in cases {
            let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: try SplitMetadata.served(compact: compact)) }
            #expect(error?.code == .corruptData)
        }
        // A valid table but for one byte of invalid UTF-8 in a path.
        var bad = table { file(&$0, size: [0x05]) }
        bad[bad.count - 35 - 7] = 0xFF
        let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: try SplitMetadata.served(compact: bad)) }
        #expect(error?.code == .corruptData || error?.code == .invalidPath)
    }

    @Test func unsafePathsInATableAreRefused() throws {
        let pack = String(repeating: "a", count: 64)
        for path in ["../escape", "/etc/passwd", "a//b", "a\\b"] {
            let table = PackFileTable(pack: pack, files: [FileRecord(path: path, pack: pack, entry: path, sha256: pack, storedSize: 1, size: 1, headerOffset: 0, method: .stored)])
            let error = #expect(throws: FormatError.self) { try PackFileTable.decode(from: try table.encoded()) }
            #expect(error?.code == .invalidPath)
        }
    }

    @Test func theSplitManifestsOwnFieldsAreChecked() throws {
        var manifest = try Served(Self.manifest(), binCount: 2).manifest
        manifest.bins.append(manifest.bins[0])  // three bins: not a power of two
        let data = try CatalogFixture.unvalidatedJSON(manifest)
        let error = #expect(throws: FormatError.self) { try SplitManifest.decode(from: data) }
        #expect(error?.code == .invalidValue)
        #expect(error?.field == "bins")
    }
}
