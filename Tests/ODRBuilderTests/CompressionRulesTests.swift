import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// `"compression"` on a tag rule: the files its patterns match are stored or deflated as it says,
/// whatever their content; bad values and conflicts are typed errors naming the key.
struct CompressionRulesTests {
    static let text = String(repeating: "a level's text compresses well. ", count: 4000)

    static func noise(_ count: Int) -> Data {
        var random = SeededGenerator(seed: 7)
        return Data((0..<count).map { _ in UInt8(truncatingIfNeeded: random.next()) })
    }

    @Test func aRuleStoresOrDeflatesWhatItMatches() async throws {
        let fixture = try BuildFixture()
        try fixture.write("text/a.txt", Self.text)
        try fixture.write("text/b.txt", Self.text + "b")
        try fixture.write("media/noise.bin", Self.noise(200_000))
        try fixture.write("media/other.bin", Self.noise(100_000) + Data("x".utf8))
        try fixture.write("odr.json", #"""
            {"tags": {"stored": {"include": ["text/a.txt"], "compression": "store"},
                      "deflated": {"include": ["media/noise.bin"], "compression": "deflate"},
                      "auto": ["text/b.txt", "media/other.bin"]}}
            """#)
        try await fixture.build(cached: false)
        let files = Dictionary(uniqueKeysWithValues: try fixture.manifest(1).files.map { ($0.path, $0) })
        #expect(files["text/a.txt"]?.method == .stored)
        #expect(files["text/a.txt"]?.storedSize == files["text/a.txt"]?.size)
        #expect(files["media/noise.bin"]?.method == .deflate)
        // Without a rule the writer chooses: text deflates, noise is stored.
        #expect(files["text/b.txt"]?.method == .deflate)
        #expect(files["media/other.bin"]?.method == .stored)
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()

        // Another method for the file: its pack is written again, not reused as the rule left it.
        try fixture.write("odr.json", #"{"tags": {"stored": {"include": ["text/a.txt"], "compression": "deflate"}, "deflated": {"include": ["media/noise.bin"], "compression": "deflate"}, "auto": ["text/b.txt", "media/other.bin"]}}"#)
        let report = try await fixture.build(cached: false)
        #expect(report.publishedNewVersion && report.writtenPacks == 1)
        let second = try fixture.manifest(2).files.first { $0.path == "text/a.txt" }
        #expect(second?.method == .deflate)
        #expect((second?.storedSize ?? .max) < (second?.size ?? 0) / 4)
    }

    @Test func anUnknownValueIsATypedErrorNamingTheKey() throws {
        let text = #"{"tags": {"music": {"include": ["music"], "compression": "zstd"}}}"#
        #expect { try TagRules.parse(Data(text.utf8)) } throws: { error in
            let error = error as? BuildError
            return error?.code == .invalidValue && error?.key == "tags.music.compression"
        }
    }

    @Test func twoTagsAskingOneFileForDifferentMethodsFailTheBuild() async throws {
        let fixture = try BuildFixture()
        try fixture.write("shared/theme.ogg", Self.text)
        try fixture.write("odr.json", #"""
            {"tags": {"a": {"include": ["shared"], "compression": "store"}, "b": {"include": ["shared"], "compression": "deflate"}}}
            """#)
        await #expect { try await fixture.build(cached: false) } throws: { error in
            let error = error as? BuildError
            return error?.code == .invalidValue && error?.key == "tags.b.compression" && error?.file == "shared/theme.ogg"
        }
    }
}
