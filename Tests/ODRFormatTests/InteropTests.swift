import Foundation
import ODRFormat
import ODRTestSupport
import Testing

/// Real ZIP tools read our packs, and our reader reads theirs.
struct InteropTests {
    @Test(arguments: [Int64(0xFFFF_FFFF), 100_000])
    func unzipTestsOurPack(zip64Threshold: Int64) throws {
        let dir = try TemporaryDirectory()
        var options = PackWriter.Options()
        options.zip64Threshold = zip64Threshold
        let (url, _) = try PackFixtures.writePack(PackFixtures.mixedEntries(), in: dir, options: options)
        let result = try runCommand("unzip", ["-t", url.path])
        #expect(result.status == 0, "\(result.stdout)\(result.stderr)")
        #expect(result.stdout.contains("No errors detected"))
    }

    @Test(arguments: [Int64(0xFFFF_FFFF), 100_000])
    func pythonZipfileReadsOurPackByteForByte(zip64Threshold: Int64) throws {
        let dir = try TemporaryDirectory()
        var options = PackWriter.Options()
        options.zip64Threshold = zip64Threshold
        let entries = PackFixtures.mixedEntries()
        let (url, _) = try PackFixtures.writePack(entries, in: dir, options: options)
        let script = """
            import hashlib, sys, zipfile
            z = zipfile.ZipFile(sys.argv[1])
            assert z.testzip() is None
            for i in z.infolist():
                print(i.filename, i.compress_type, hashlib.sha256(z.read(i)).hexdigest())
            """
        let result = try runCommand("python3", ["-c", script, url.path])
        #expect(result.status == 0, "\(result.stderr)")
        let expected = entries.map { name, data in
            let method = name.hasSuffix(".json") ? 8 : 0
            return "\(name) \(method) \(ContentHash.sha256Hex(of: data))"
        }
        #expect(result.stdout.split(separator: "\n").map(String.init) == expected)
    }

    @Test func ourStreamingReaderReadsAPythonMadePack() throws {
        let dir = try TemporaryDirectory()
        let url = dir.appending("py.zip")
        // Python writes one stored and one deflated entry, then reports what a manifest would say.
        let script = """
            import hashlib, json, sys, zipfile
            with zipfile.ZipFile(sys.argv[1], "w") as z:
                z.writestr(zipfile.ZipInfo("data/stored.bin"), bytes(range(256)) * 40, compress_type=zipfile.ZIP_STORED)
                z.writestr(zipfile.ZipInfo("data/text.json"), b'{"a": 1}\\n' * 5000, compress_type=zipfile.ZIP_DEFLATED)
            out = []
            with zipfile.ZipFile(sys.argv[1]) as z:
                for i in z.infolist():
                    out.append({"name": i.filename, "method": i.compress_type, "stored": i.compress_size,
                                "size": i.file_size, "offset": i.header_offset,
                                "sha256": hashlib.sha256(z.read(i)).hexdigest()})
            print(json.dumps(out))
            """
        let result = try runCommand("python3", ["-c", script, url.path])
        try #require(result.status == 0, "\(result.stderr)")
        struct Info: Decodable { var name: String; var method: UInt16; var stored: Int64; var size: Int64; var offset: Int64; var sha256: String }
        let infos = try JSONDecoder().decode([Info].self, from: Data(result.stdout.utf8))
        let expectations = infos.map {
            PackEntryExpectation(name: $0.name, method: CompressionMethod(zipMethod: $0.method)!, storedSize: $0.stored,
                                 size: $0.size, headerOffset: $0.offset, sha256: $0.sha256)
        }
        #expect(expectations.map(\.method) == [.stored, .deflate])
        let bytes = try Data(contentsOf: url)
        let sink = MemorySink()
        let reader = PackStreamReader(entries: expectations, archiveSHA256: ContentHash.sha256Hex(of: bytes), sink: sink)
        try reader.consume(bytes)
        try reader.finish()
        #expect(sink.contents["data/text.json"].map { Data($0) } == Data(String(repeating: "{\"a\": 1}\n", count: 5000).utf8))
        #expect(sink.contents["data/stored.bin"]?.count == 10_240)
    }
}
