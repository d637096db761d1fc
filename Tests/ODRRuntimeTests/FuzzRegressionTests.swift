import Foundation
import ODRBuilder
import ODRFormat
import ODRFuzzing
import ODRRuntime
import ODRTestSupport
import Testing

/// Replays the fuzz targets' inputs through the same entry points as the fuzzers
/// (``FuzzTarget/run(_:)``), without sanitizers: every input that ever crashed or hung a fuzzer
/// (`Fuzz/Regressions/<target>/`) must now end in success or a typed error, quickly; every seed
/// (`Fuzz/Corpus/<target>/`) must succeed, which proves a target reaches the code behind its
/// parsing (a stale seed or a wrong key would leave the fuzzer knocking at the door).
struct FuzzRegressionTests {
    static let fuzzFolder = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
        .deletingLastPathComponent().appending(path: "Fuzz")

    /// The files of `Fuzz/<kind>/<target>/`, by name.
    static func inputs(_ kind: String, of target: FuzzTarget) throws -> [URL] {
        let folder = fuzzFolder.appending(path: "\(kind)/\(target.rawValue)")
        guard FileManager.default.fileExists(atPath: folder.path) else { return [] }
        return try FileManager.default.contentsOfDirectory(at: folder, includingPropertiesForKeys: nil)
            .filter { !$0.lastPathComponent.hasPrefix(".") }
            .sorted { $0.lastPathComponent < $1.lastPathComponent }
    }

    /// Regression files whose bug is not fixed yet, as `<target>/<file>` lines of
    /// `Fuzz/Regressions/OPEN` (`#` starts a comment): replaying them would stop the test process.
    static func openRegressions() throws -> Set<String> {
        let url = fuzzFolder.appending(path: "Regressions/OPEN")
        guard FileManager.default.fileExists(atPath: url.path) else { return [] }
        return Set(try String(contentsOf: url, encoding: .utf8).split(separator: "\n").compactMap { line in
            let entry = line.prefix { $0 != "#" }.trimmingCharacters(in: .whitespaces)
            return entry.isEmpty ? nil : entry
        })
    }

    @Test(arguments: FuzzTarget.allCases)
    func everySeedIsAcceptedWhole(_ target: FuzzTarget) throws {
        let seeds = try Self.inputs("Corpus", of: target)
        #expect(!seeds.isEmpty, "Fuzz/Corpus/\(target.rawValue)/ has no seeds")
        for seed in seeds {
            #expect(throws: Never.self, "seed \(seed.lastPathComponent)") { try target.run(Data(contentsOf: seed)) }
        }
    }

    @Test(arguments: FuzzTarget.allCases)
    func everyRegressionEndsInATypedErrorOrSuccess(_ target: FuzzTarget) throws {
        let open = try Self.openRegressions()
        for file in try Self.inputs("Regressions", of: target) where !open.contains("\(target.rawValue)/\(file.lastPathComponent)") {
            let bytes = try Data(contentsOf: file)
            let clock = ContinuousClock()
            let start = clock.now
            do {
                try target.run(bytes)
            } catch {
                #expect(error is FormatError || error is BuildError || error is ResourceError,
                        "\(file.lastPathComponent): \(type(of: error)) \(error)")
            }
            // libFuzzer's -timeout is 10 s with sanitizers; unsanitized, a fixed input takes milliseconds.
            #expect(clock.now - start < .seconds(10), "\(file.lastPathComponent) took \(clock.now - start)")
        }
    }

    @Test func openRegressionsNameExistingFiles() throws {
        for entry in try Self.openRegressions() {
            #expect(FileManager.default.fileExists(atPath: Self.fuzzFolder.appending(path: "Regressions/\(entry)").path),
                    "Fuzz/Regressions/OPEN lists \(entry), which does not exist")
        }
    }

    /// Writes the seed corpus (`make fuzz-seeds`): real catalogs built and signed by the project's
    /// builder with the fuzz key, their manifests, packs, and hand-written journals and headers.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["ODR_FUZZ_WRITE_SEEDS"] != nil))
    func writeSeedCorpus() async throws {
        let corpus = URL(filePath: ProcessInfo.processInfo.environment["ODR_FUZZ_WRITE_SEEDS"]!)
        try await FuzzSeeds(corpus: corpus).writeAll()
    }
}

/// The seed corpus of every target, made by the project's own builder and writer.
private struct FuzzSeeds {
    let corpus: URL

    func write(_ target: FuzzTarget, _ name: String, _ data: Data) throws {
        let folder = corpus.appending(path: target.rawValue)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        try data.write(to: folder.appending(path: name))
    }

    func writeAll() async throws {
        let signing = try CatalogSigning(keys: [SigningKey(seed: FuzzTarget.signingKeySeed)], expiresIn: 3650 * 86_400)

        // A plain game: deflated text, a duplicate, stored incompressible bytes, an empty file.
        let plain = try CatalogFixture()
        try plain.write("small/map.json", Data(String(repeating: "small level data\n", count: 60).utf8))
        try plain.write("small/copy/map-again.json", Data(String(repeating: "small level data\n", count: 60).utf8))
        try plain.write("small/notes.txt", Data("notes\n".utf8))
        try plain.write("small/empty.txt", Data())
        try plain.write("shared/palette.bin", deterministicBytes(count: 1_500, seed: 7))
        try plain.write("big/music.bin", deterministicBytes(count: 4_000, seed: 8))
        try plain.write("big/level.json", Data(String(repeating: "{\"tile\": 1}\n", count: 100).utf8))
        try await plain.build(signing: signing)

        // A game with two variant axes: a format version 2 manifest.
        let variants = try CatalogFixture(rules: CatalogFixture.variantRules)
        for (index, source) in CatalogFixture.variantSources.values.flatMap(\.values).sorted().enumerated() {
            try variants.write(source, deterministicBytes(count: 300 + 50 * index, seed: 101 + UInt64(index)))
        }
        try await variants.build(signing: signing)

        // Both games again with split metadata (format 3): their manifests, bins and tables.
        for (game, fixture) in [("plain", plain), ("variants", variants)] {
            let split = try CatalogFixture(rules: String(decoding: Data(contentsOf: fixture.assets.appending(path: "odr.json")), as: UTF8.self))
            try FileManager.default.removeItem(at: split.assets)
            try FileManager.default.copyItem(at: fixture.assets, to: split.assets)
            try await split.build(splitMetadata: true)
            try write(.splitManifest, "\(game).json", Data(contentsOf: split.catalog.appending(path: VersionManifest.manifestPath(forVersion: 1))))
            let meta = split.catalog.appending(path: SplitMetadata.folder)
            for name in try FileManager.default.contentsOfDirectory(atPath: meta.path).sorted() {
                let target: FuzzTarget = name.hasSuffix(".tagbin") ? .tagBin : .fileTable
                try write(target, "\(game)-\(name.prefix(12)).bin", Data(contentsOf: meta.appending(path: name)))
            }
        }

        for (game, fixture, rules) in [("plain", plain, CatalogFixture.defaultRules), ("variants", variants, CatalogFixture.variantRules)] {
            try write(.catalog, "\(game).json", Data(contentsOf: fixture.catalog.appending(path: CatalogIndex.fileName)))
            try write(.tagRules, "\(game).json", Data(rules.utf8))
            let manifest = try fixture.manifest(1)
            try write(.manifestJSON, "\(game).json", Data(contentsOf: fixture.catalog.appending(path: VersionManifest.manifestPath(forVersion: 1))))
            let compact = try manifest.compactEncoded()
            try write(.manifestCompact, "\(game).bin", compact)
            try write(.manifestCompactFile, "\(game).bin", VersionManifest.compact(compact, recordingSource: FuzzTarget.compactSource))
            for (index, pack) in manifest.packs.enumerated() {
                let archive = try Data(contentsOf: fixture.catalog.appending(path: pack.archivePath))
                let name = "\(game)-pack\(index)"
                try write(.centralDirectory, "\(name).zip", archive)
                if index == 0 { try write(.centralDirectory, "\(name)-zip64.zip", zip64Form(of: archive)) }
                // Alternate all-at-once and 123-byte network chunks; hold alternate entries for ranges.
                try write(.packStream, "\(name).bin", FramedPack.encode(manifest: compact, option: index % 2 == 0 ? 0 : 2,
                                                                    packIndex: UInt8(index), archive: archive))
                try write(.packRange, "\(name).bin", FramedPack.encode(manifest: compact, option: index % 2 == 0 ? 0b0101 : 0b1010,
                                                                   packIndex: UInt8(index), archive: archive))
                if index == 0 {
                    // The whole archive with ZIP64 end records: the range reader checks them at its end.
                    let zip64 = zip64Form(of: archive)
                    var resized = manifest
                    resized.packs[index].archiveBytes = Int64(zip64.count)
                    try write(.packRange, "\(name)-zip64.bin", FramedPack.encode(manifest: resized.compactEncoded(), option: 0,
                                                                             packIndex: UInt8(index), archive: zip64))
                }
            }
        }
        try await writeChunkedSeeds(signing: signing)
        try write(.tagRules, "sample-assets.json", Data(contentsOf: FuzzRegressionTests.fuzzFolder.deletingLastPathComponent()
            .appending(path: "SampleAssets/odr.json")))

        // Journals of the fixed pack (JournalFixture): both cut entries placed, validators, a
        // journal from another archive, and the lines an attempt appends over several runs.
        try write(.journal, "resume-both", Data("validators {\"entityTag\":\"\\\"5f1c-2000000\\\"\"}\ndata 35 a.bin\ndata 1072 b/c.bin\n".utf8))
        try write(.journal, "resume-one", Data("data 35 a.bin\n".utf8))
        try write(.journal, "last-modified", Data("validators {\"lastModified\":\"Wed, 21 Oct 2015 07:28:00 GMT\"}\ndata 1072 b/c.bin\ndata 6107 d.txt\n".utf8))
        try write(.journal, "rewritten", Data("data 35 a.bin\nvalidators {\"entityTag\":\"W/\\\"1\\\"\"}\ndata 40 a.bin\ndata 1072 b/c.bin\ndata 6442 e.bin\n".utf8))

        // Header blocks as curl delivers them: a range answer, a whole file, a redirect then the
        // file, a 100 Continue, an open-ended total.
        let blocks = [
            "range": "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 100-199/1000\r\nContent-Length: 100\r\nETag: \"abc\"\r\nLast-Modified: Wed, 21 Oct 2015 07:28:00 GMT\r\n\r\n",
            "whole": "HTTP/1.1 200 OK\r\nContent-Length: 1000\r\nETag: W/\"weak\"\r\n\r\n",
            "redirect": "HTTP/1.1 302 Found\r\nLocation: /other\r\nContent-Length: 0\r\n\r\nHTTP/2 200\r\ncontent-length: 12\r\netag: \"x\"\r\n\r\n",
            "continue": "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 206 Partial Content\r\ncontent-range: bytes 0-0/*\r\n\r\n",
            "range-unknown-total": "HTTP/1.1 206 Partial Content\r\nContent-Range: bytes 5-9/*\r\nContent-Length:   5  \r\n\r\n",
        ]
        for (name, block) in blocks { try write(.responseHeaders, name, Data(block.utf8)) }

        // What the system bus sends after BEGIN: the Hello reply, NameAcquired, then the answer to
        // Get (serial 2), metered (4) and not (2); and an error reply before a good one.
        let hello = DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 1,
                                       fields: [(5, .uint32(1)), (6, .string(":1.42")), (8, .signature("s"))], body: [.string(":1.42")])
        let acquired = DBusMessage.encode(type: DBusMessage.signal, flags: 1, serial: 2,
                                          fields: [(1, .objectPath("/org/freedesktop/DBus")), (2, .string("org.freedesktop.DBus")),
                                                   (3, .string("NameAcquired")), (8, .signature("s"))], body: [.string(":1.42")])
        func metered(_ value: UInt32) -> [UInt8] {
            DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 3,
                               fields: [(5, .uint32(2)), (8, .signature("v"))], body: [.variantUInt32(value)])
        }
        let refused = DBusMessage.encode(type: DBusMessage.error, flags: 1, serial: 3,
                                         fields: [(4, .string("org.freedesktop.DBus.Error.AccessDenied")), (5, .uint32(7)), (8, .signature("s"))],
                                         body: [.string("denied")])
        try write(.dbusReply, "metered", Data(hello + acquired + metered(4)))
        try write(.dbusReply, "unmetered", Data(hello + acquired + metered(2)))
        try write(.dbusReply, "other-error-first", Data(refused + metered(1)))
        // Avahi's answer to ResolveService (peer discovery): a peer of the catalog the target asks for.
        let resolved = DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 9, fields: [(5, .uint32(4)), (8, .signature("iissssisqaayu"))],
                                          body: [.int32(1), .int32(0), .string("odr on box:7420"), .string("_odr._tcp"), .string("local"),
                                                 .string("box.local"), .int32(0), .string("192.168.1.20"), .uint16(7420),
                                                 .byteArrays([Array("catalog=game".utf8)]), .uint32(4)])
        try write(.dbusReply, "avahi-resolved", Data(resolved))
        // What Avahi sends an announcement (serials 2 to 10 are its calls in turn): the answers to
        // both AddMatch, EntryGroupNew, AddService and Commit, state COLLISION, the answers to Reset,
        // GetAlternativeServiceName, AddService and Commit, then state ESTABLISHED.
        let group = "/Client1/EntryGroup1"
        func answer(_ call: UInt32, _ signature: String = "", _ body: [DBusMessage.Value] = []) -> [UInt8] {
            var fields: [(UInt8, DBusMessage.Value)] = [(5, .uint32(call))]
            if !body.isEmpty { fields.append((8, .signature(signature))) }
            return DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 100 + call, fields: fields, body: body)
        }
        func state(_ value: Int32) -> [UInt8] {
            DBusMessage.encode(type: DBusMessage.signal, flags: 1, serial: 200 + UInt32(value),
                               fields: [(1, .objectPath(group)), (2, .string("org.freedesktop.Avahi.EntryGroup")), (3, .string("StateChanged")),
                                        (8, .signature("is"))], body: [.int32(value), .string("")])
        }
        let announced = answer(2) + answer(3) + answer(4, "o", [.objectPath(group)]) + answer(5) + answer(6) + state(3)
            + answer(7) + answer(8, "s", [.string("odr on box:7420 #2")]) + answer(9) + answer(10) + state(2)
        try write(.dbusReply, "avahi-announced-after-collision", Data(announced))
    }

    /// A game with chunked files (format 4, 5 when split) and small chunk sizes: seeds whose
    /// manifests, compact forms, file tables and packs carry chunk tables, so the targets reach
    /// the chunk checks. Their files are named `chunked*`.
    func writeChunkedSeeds(signing: CatalogSigning) async throws {
        let rules = #"{"catalogID": "fuzz-chunked", "tags": {"big": ["big"], "small": ["small"]}, "limits": {"chunkThreshold": 4096}}"#
        let sizes = try FastCDC.Parameters(minimumSize: 256, averageSize: 1024, maximumSize: 4096)
        var world = ""
        for i in 0..<400 { world += "{\"cell\": \(i), \"height\": \(i * 7 % 113)}\n" }
        for split in [false, true] {
            let fixture = try CatalogFixture(rules: rules)
            try fixture.write("big/archive.pak", deterministicBytes(count: 12_000, seed: 9))
            try fixture.write("big/world.json", Data(world.utf8))
            try fixture.write("small/notes.txt", Data("notes\n".utf8))
            try await fixture.build(signing: signing, splitMetadata: split, chunkSizes: sizes)
            let manifestFile = try Data(contentsOf: fixture.catalog.appending(path: VersionManifest.manifestPath(forVersion: 1)))
            if split {
                try write(.splitManifest, "chunked.json", manifestFile)
                let meta = fixture.catalog.appending(path: SplitMetadata.folder)
                for name in try FileManager.default.contentsOfDirectory(atPath: meta.path).sorted() {
                    try write(name.hasSuffix(".tagbin") ? .tagBin : .fileTable, "chunked-\(name.prefix(12)).bin", Data(contentsOf: meta.appending(path: name)))
                }
                continue
            }
            try write(.manifestJSON, "chunked.json", manifestFile)
            let manifest = try fixture.manifest(1)
            let compact = try manifest.compactEncoded()
            try write(.manifestCompact, "chunked.bin", compact)
            try write(.manifestCompactFile, "chunked.bin", VersionManifest.compact(compact, recordingSource: FuzzTarget.compactSource))
            for (index, pack) in manifest.packs.enumerated() {
                let archive = try Data(contentsOf: fixture.catalog.appending(path: pack.archivePath))
                try write(.packStream, "chunked-pack\(index).bin", FramedPack.encode(manifest: compact, option: 2, packIndex: UInt8(index), archive: archive))
                try write(.packRange, "chunked-pack\(index).bin", FramedPack.encode(manifest: compact, option: 0b0101, packIndex: UInt8(index), archive: archive))
            }
        }
    }

    /// `archive` with its end record in ZIP64 form (the writer uses it only past 65,535 entries or
    /// 4 GiB): a ZIP64 end record and locator before an end record whose fields say "see ZIP64".
    func zip64Form(of archive: Data) -> Data {
        let bytes = [UInt8](archive)
        let end = bytes.count - 22  // the writer adds no comment
        func field(_ offset: Int, _ width: Int) -> UInt64 {
            (0..<width).reduce(UInt64(0)) { $0 | UInt64(bytes[end + offset + $1]) << (8 * UInt64($1)) }
        }
        var out = Array(bytes[..<end])
        func put(_ value: UInt64, _ width: Int) { for byte in 0..<width { out.append(UInt8(truncatingIfNeeded: value >> (8 * UInt64(byte)))) } }
        let count = field(10, 2), size = field(12, 4), offset = field(16, 4)
        put(0x0606_4B50, 4); put(44, 8); put(45, 2); put(45, 2); put(0, 4); put(0, 4)
        put(count, 8); put(count, 8); put(size, 8); put(offset, 8)
        put(0x0706_4B50, 4); put(0, 4); put(UInt64(end), 8); put(1, 4)
        put(0x0605_4B50, 4); put(0, 2); put(0, 2); put(0xFFFF, 2); put(0xFFFF, 2)
        put(0xFFFF_FFFF, 4); put(0xFFFF_FFFF, 4); put(0, 2)
        return Data(out)
    }
}
