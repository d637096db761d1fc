import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Symbolic links in an assets folder are followed, so a game that keeps (say) its fonts as links
/// ships them; they are packed as regular files, and loops and dangling links are reported.
struct SymbolicLinkTests {
    @Test func linksToFilesAndFoldersArePackedAsRegularFilesAndLoopsAreSkipped() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"ui": ["ui"]}}"#)
        try fixture.write("ui/real.txt", "real text")
        // Outside the assets folder, as SuperTuxKart's fonts are.
        let shared = fixture.directory.appending("shared-fonts")
        try FileManager.default.createDirectory(at: shared, withIntermediateDirectories: true)
        try Data("font bytes".utf8).write(to: shared.appending(path: "sans.ttf"))
        let links = FileManager.default
        try links.createSymbolicLink(atPath: fixture.assets.appending(path: "ui/alias.txt").path, withDestinationPath: "real.txt")
        try links.createSymbolicLink(atPath: fixture.assets.appending(path: "ui/fonts").path, withDestinationPath: shared.path)
        try links.createSymbolicLink(atPath: fixture.assets.appending(path: "ui/loop").path, withDestinationPath: "..")
        try links.createSymbolicLink(atPath: fixture.assets.appending(path: "ui/dangling.txt").path, withDestinationPath: "nowhere.txt")

        let report = try await fixture.build()
        #expect(report.followedLinks == 2)
        let manifest = try fixture.manifest(1)
        #expect(manifest.files.map(\.path).sorted() == ["ui/alias.txt", "ui/fonts/sans.ttf", "ui/real.txt"])
        let warnings = report.warnings.map(\.message).joined(separator: "\n")
        #expect(warnings.contains("ui/loop") && warnings.contains("loop"), "\(warnings)")
        #expect(warnings.contains("ui/dangling.txt"), "\(warnings)")
        #expect(report.rendered().contains("2 symbolic link(s) followed"))

        // The archive holds regular files with the targets' bytes, and unzip agrees.
        let pack = try #require(manifest.packs.first)
        let extracted = fixture.directory.appending("unzipped")
        let unzip = try runCommand("unzip", ["-q", fixture.catalog.packURL(id: pack.id).path, "-d", extracted.path])
        #expect(unzip.status == 0, "\(unzip.stderr)")
        for (path, text) in [("ui/alias.txt", "real text"), ("ui/fonts/sans.ttf", "font bytes")] {
            let url = extracted.appending(path: path)
            let kind = try FileManager.default.attributesOfItem(atPath: url.path)[.type] as? FileAttributeType
            #expect(kind == .typeRegular, "\(path) is \(String(describing: kind))")
            #expect(try Data(contentsOf: url) == Data(text.utf8))
        }
    }
}

/// Names a catalog cannot hold get a message that says why, not an internal error.
struct UnusualNameTests {
    /// Two files whose names differ in bytes but not after Unicode normalization (`é` precomposed,
    /// and `e` + U+0301): before, the pack writer failed on "ascending name order".
    @Test func namesEqualAfterNormalizationAreRefusedNamingBoth() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"ui": ["ui"]}}"#)
        try fixture.write("ui/caf\u{E9}.txt", "one")
        try fixture.write("ui/cafe\u{301}.txt", "two")
        let error = await #expect(throws: BuildError.self) { try await fixture.build() }
        #expect(error?.code == .assetsUnreadable)
        #expect(error?.message.contains("Unicode normalization") == true, "\(String(describing: error))")
    }

    /// A name whose bytes are not UTF-8: before, "No such file or directory".
    @Test func aNameThatIsNotUTF8IsRefusedSayingSo() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"ui": ["ui"]}}"#)
        try fixture.write("ui/ok.txt", "ok")
        let folder = fixture.assets.appending(path: "ui").path
        // The raw bytes b"bad-\xff.txt", which no Swift String can spell.
        var path: [UInt8] = Array(folder.utf8) + Array("/bad-".utf8) + [0xFF] + Array(".txt".utf8) + [0]
        let file = path.withUnsafeMutableBufferPointer { buffer in
            buffer.baseAddress!.withMemoryRebound(to: CChar.self, capacity: buffer.count) { open($0, O_WRONLY | O_CREAT | O_EXCL, 0o644) }
        }
        #expect(file >= 0)
        close(file)
        let error = await #expect(throws: BuildError.self) { try await fixture.build() }
        #expect(error?.code == .assetsUnreadable)
        #expect(error?.message.contains("not valid UTF-8") == true, "\(String(describing: error))")
    }
}
