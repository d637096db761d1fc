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
