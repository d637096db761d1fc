import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// `odrpack report`: the HTML page carries the numbers of `odrpack inspect --json` and `odrpack
/// diff --json`, escapes every name, and bad input gets a typed error with nothing written.
struct CatalogReportTests {
    /// A file name that would run script if it reached the page unescaped.
    static let hostileName = "big/<script>alert(1)</script>\"'&.txt"

    /// The fixture game at version 1, then version 2: one file changed, one removed, one with
    /// markup in its name added.
    static func twoVersions() async throws -> CatalogFixture {
        let game = try CatalogFixture.game(bigBytes: 600_000)
        try await game.build()
        try game.write("small/map.json", Data(String(repeating: "changed level data\n", count: 2000).utf8))
        try FileManager.default.removeItem(at: game.assets.appending(path: "small/notes.txt"))
        try game.write(hostileName, Data(String(repeating: "markup ", count: 3000).utf8))
        try await game.build()
        return game
    }

    /// The `<tr>` rows of the page's tag table: name -> its `data-` attributes.
    static func tagRows(in html: String) throws -> [String: [String: Int64]] {
        var rows: [String: [String: Int64]] = [:]
        let row = try Regex(#"<tr data-tag="([^"]*)"([^>]*)>"#)
        let attribute = try Regex(#"data-([a-z-]+)="(\d+)""#)
        for match in html.matches(of: row) {
            let name = String(match.output[1].substring ?? "")
            var values: [String: Int64] = [:]
            for pair in String(match.output[2].substring ?? "").matches(of: attribute) {
                values[String(pair.output[1].substring ?? "")] = Int64(pair.output[2].substring ?? "")
            }
            rows[name] = values
        }
        return rows
    }

    @Test func pageNumbersAreThoseOfInspectAndDiff() async throws {
        let game = try await Self.twoVersions()
        let catalog = CatalogDirectory(root: game.catalog)
        let report = try CatalogReport(catalog: catalog, version: 2, against: 1)
        let html = report.html()
        let rows = try Self.tagRows(in: html)

        let inspection = try CatalogInspection(catalog: catalog, version: 2)
        let diff = try CatalogDiff(catalog: catalog, from: 1, to: 2)
        #expect(Set(rows.keys) == Set(inspection.manifest.tags.map(\.name)))
        for tag in inspection.manifest.tags {
            #expect(rows[tag.name]?["download"] == tag.downloadBytes, "\(tag.name)")
            #expect(rows[tag.name]?["installed"] == tag.installedBytes, "\(tag.name)")
            let changed = diff.changedTags.first { $0.name == tag.name }?.downloadBytes ?? 0
            #expect(rows[tag.name]?["update"] == changed, "\(tag.name)")
        }
        // A changed file in `small` costs less than the tag's whole download: the fetch plan reuses entries.
        let small = try #require(diff.changedTags.first { $0.name == "small" })
        #expect(small.downloadBytes > 0)
        #expect(small.downloadBytes < (inspection.manifest.tags.first { $0.name == "small" }?.downloadBytes ?? 0))
        #expect(html.contains("data-from=\"1\" data-download=\"\(diff.downloadBytes)\" data-archive=\"\(diff.archiveBytes)\""))
        #expect(html.contains("data-download=\"\(inspection.manifest.packs.map(\.archiveBytes).reduce(0, +))\""))
        for pack in inspection.manifest.packs { #expect(html.contains("data-pack=\"\(pack.id)\"")) }
        #expect(report.update?.diff == diff)
    }

    /// Every tag set of the sample game has a colour of its own (hues at least 20° apart) and a name
    /// on the page: inside its box, or in the legend when the box is too small.
    @Test func everyTagSetHasADistinctColourAndALabel() async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-report")
        let catalog = try await SampleGame.buildCatalog(in: temporary)
        let html = try CatalogReport(catalog: CatalogDirectory(root: catalog)).html()
        let treemap = try #require(html.components(separatedBy: "<section id=\"treemap-section\">").last?.components(separatedBy: "</section>").first)
        var hueOfSet: [String: Int] = [:]
        for group in treemap.components(separatedBy: "<g class=\"group\">").dropFirst() {
            let hue = try #require(group.firstMatch(of: /hsl\((\d+),/).flatMap { Int($0.1) })
            let title = try #require(group.firstMatch(of: /<title>\[([^\]]*)\]/).map { String($0.1) })
            hueOfSet[title] = hue
            let labelled = group.contains("<text") || treemap.contains("</svg> \(title)</span>")
            #expect(labelled, "tag set [\(title)] has no label")
        }
        #expect(hueOfSet.count >= 7)
        let hues = Array(hueOfSet)
        for (i, a) in hues.enumerated() {
            for b in hues[(i + 1)...] {
                let distance = min(abs(a.value - b.value), 360 - abs(a.value - b.value))
                #expect(distance >= 20, "[\(a.key)] and [\(b.key)]: hues \(a.value) and \(b.value)")
            }
        }
    }

    @Test func namesFromTheAssetsAreEscapedAndScriptOnlyRunsByHash() async throws {
        let game = try await Self.twoVersions()
        let html = try CatalogReport(catalog: CatalogDirectory(root: game.catalog), version: 2, against: 1).html()
        // Only the page's own two script blocks: the data and the hashed script.
        #expect(html.components(separatedBy: "<script").count - 1 == 2)
        #expect(!html.contains("alert(1)</script>"))
        #expect(html.contains("big/&lt;script&gt;alert(1)&lt;/script&gt;&quot;&#39;&amp;.txt"))
        #expect(html.contains(#"<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'sha256-"#))
        #expect(!html.contains("unsafe-inline"))
        #expect(!html.contains("http://") && !html.contains("https://"))
    }

    @Test func deviceColumnsAreWhatTheChosenDeviceDownloads() async throws {
        let game = try CatalogFixture.variantGame()
        try await game.build()
        let catalog = CatalogDirectory(root: game.catalog)
        let device = VariantPreferences(["resolution": ["2x"]])
        let html = try CatalogReport(catalog: catalog, device: device).html()
        let forest = try #require(ManifestIndex(try game.manifest(1), variants: device).tag(named: "forest"))
        let row = try #require(try Self.tagRows(in: html)["forest"])
        #expect(row["device-download"] == forest.downloadBytes)
        #expect(row["device-installed"] == forest.installedBytes)
        #expect(forest.downloadBytes < (row["download"] ?? 0))
    }

    @Test func updateCostPerTagIsForTheChosenDevice() async throws {
        let game = try CatalogFixture.variantGame()
        try await game.build()
        try game.write("Forest/tree@2x.png", deterministicBytes(count: 33_000, seed: 999))
        try await game.build()
        let catalog = CatalogDirectory(root: game.catalog)
        func cost(_ device: VariantPreferences) throws -> Int64? {
            try CatalogReport(catalog: catalog, version: 2, against: 1, device: device).update?.tagDownloadBytes["forest"]
        }
        // Only the 2x tree changed: a 2x device fetches it, a 1x device nothing.
        #expect(try cost(VariantPreferences(["resolution": ["2x"]])) ?? 0 >= 33_000)
        #expect(try cost(VariantPreferences(["resolution": ["1x"]])) == 0)
        #expect(try cost(VariantPreferences()) == (try CatalogDiff(catalog: catalog, from: 1, to: 2)).changedTags.first?.downloadBytes)
    }

    @Test func compressionChoicesThatMissedAreWarnedAbout() async throws {
        let game = try CatalogFixture(rules: #"{"tags": {"media": ["media"]}}"#)
        let text = Data(String(repeating: "level data that compresses well\n", count: 20_000).utf8)
        // Random first 64 KiB (the writer's sample): stored, though the rest is text.
        try game.write("media/late-text.bin", deterministicBytes(count: 64 << 10, seed: 1) + text)
        // Text first: deflated, though the rest is random and the whole saves about 6%.
        try game.write("media/late-noise.bin", text.prefix(64 << 10) + deterministicBytes(count: 1 << 20, seed: 2))
        try game.write("media/plain.txt", text)
        try await game.build()
        let files = Dictionary(uniqueKeysWithValues: try game.manifest(1).files.map { ($0.path, $0) })
        #expect(files["media/late-text.bin"]?.method == .stored)
        #expect(files["media/late-noise.bin"]?.method == .deflate)

        let report = try CatalogReport(catalog: CatalogDirectory(root: game.catalog))
        let stored = try #require(report.summary.warnings.first { $0.code == .storedCompressible })
        #expect(stored.message.contains("media/late-text.bin") && !stored.message.contains("plain.txt"))
        let poor = try #require(report.summary.warnings.first { $0.code == .deflatedPoorly })
        #expect(poor.message.contains("media/late-noise.bin") && !poor.message.contains("plain.txt"))
        // It names the rule to change: the tag holding the file.
        #expect(poor.message.contains(#"add "compression": "store" to the rule of tag "media""#), "\(poor.message)")
        #expect(report.html().contains("data-code=\"storedCompressible\""))
    }

    @Test func badInputIsATypedErrorAndWritesNothing() async throws {
        let game = try await Self.twoVersions()
        let catalog = CatalogDirectory(root: game.catalog)
        let other = try TemporaryDirectory(prefix: "odr-report")
        func code(_ body: () throws -> Void) -> BuildError.Code? {
            do { try body(); return nil } catch { return (error as? BuildError)?.code }
        }
        #expect(code { _ = try CatalogReport(catalog: CatalogDirectory(root: other.url)) } == .catalogIO)
        #expect(code { _ = try CatalogReport(catalog: catalog, version: 9) } == .unknownVersion)
        #expect(code { _ = try CatalogReport(catalog: catalog, against: 7) } == .unknownVersion)
        #expect(code { _ = try CatalogReport(catalog: catalog, device: VariantPreferences(["resolution": ["2x"]])) } == .unknownVariant)

        let report = try CatalogReport(catalog: catalog)
        #expect(code { try report.writeHTML(to: other.appending("missing/report.html")) } == .reportUnwritable)
        // A folder in the way: the rename fails, the folder stays, no temporary file is left.
        try FileManager.default.createDirectory(at: other.appending("taken.html/inside"), withIntermediateDirectories: true)
        #expect(code { try report.writeHTML(to: other.appending("taken.html")) } == .reportUnwritable)
        #expect(other.allFiles().sorted() == [])
        // An existing page is replaced whole.
        try Data("old".utf8).write(to: other.appending("report.html"))
        try report.writeHTML(to: other.appending("report.html"))
        #expect(try String(contentsOf: other.appending("report.html"), encoding: .utf8) == report.html())
        #expect(other.allFiles().sorted() == ["report.html"])
    }

    @Test(.enabled(if: builtExecutable(named: "odrpack") != nil))
    func odrpackReportMatchesInspectAndDiffJSON() async throws {
        let odrpack = try #require(builtExecutable(named: "odrpack")).path
        let game = try await Self.twoVersions()
        let page = game.directory.appending("report.html")
        let written = try runCommand(odrpack, ["report", game.catalog.path, "--html", page.path, "--catalog-version", "2", "--against", "1"])
        #expect(written.status == 0, "\(written.stderr)")
        let rows = try Self.tagRows(in: try String(contentsOf: page, encoding: .utf8))

        func json(_ arguments: [String]) throws -> [String: Any] {
            let result = try runCommand(odrpack, arguments)
            #expect(result.status == 0, "\(result.stderr)")
            return try #require(try JSONSerialization.jsonObject(with: Data(result.stdout.utf8)) as? [String: Any])
        }
        let inspect = try json(["inspect", game.catalog.path, "--catalog-version", "2", "--json"])
        let tags = try #require((inspect["manifest"] as? [String: Any])?["tags"] as? [[String: Any]])
        let diff = try json(["diff", game.catalog.path, "1", "2", "--json"])
        let changed = try #require(diff["changedTags"] as? [[String: Any]])
        #expect(tags.count == rows.count)
        for tag in tags {
            let name = try #require(tag["name"] as? String)
            #expect(rows[name]?["download"] == (tag["downloadBytes"] as? NSNumber)?.int64Value)
            #expect(rows[name]?["installed"] == (tag["installedBytes"] as? NSNumber)?.int64Value)
            let cost = changed.first { $0["name"] as? String == name }.flatMap { ($0["downloadBytes"] as? NSNumber)?.int64Value } ?? 0
            #expect(rows[name]?["update"] == cost)
        }
        let report = try json(["report", game.catalog.path, "--json", "--catalog-version", "2", "--against", "1"])
        let update = try #require(report["update"] as? [String: Any])
        #expect((update["diff"] as? NSDictionary) == (diff as NSDictionary))

        // Bad input: a typed error on stderr, status 1, no page.
        let missing = game.directory.appending("missing.html")
        for (arguments, code) in [
            (["report", game.directory.url.path, "--html", missing.path], "[catalog.io]"),
            (["report", game.catalog.path, "--html", missing.path, "--catalog-version", "5"], "[catalog.unknownVersion]"),
            (["report", game.catalog.path, "--html", missing.path, "--against", "5"], "[catalog.unknownVersion]"),
            (["report", game.catalog.path, "--html", game.directory.appending("none/r.html").path], "[report.unwritable]"),
        ] {
            let result = try runCommand(odrpack, arguments)
            #expect(result.status == 1 && result.stderr.contains(code), "\(arguments): \(result.stderr)")
        }
        #expect(!FileManager.default.fileExists(atPath: missing.path))
    }

    @Test(.enabled(if: builtExecutable(named: "odrpack") != nil))
    func buildWritesTheReportOfTheVersionItBuilt() async throws {
        let odrpack = try #require(builtExecutable(named: "odrpack")).path
        let game = try CatalogFixture.game(bigBytes: 100_000)
        try game.write("odr.json", Data(#"{"tags": {"small": ["small", "shared"], "big": ["big", "shared"]}}"#.utf8))
        try FileManager.default.createSymbolicLink(atPath: game.assets.appending(path: "small/dangling").path, withDestinationPath: "nowhere")
        let page = game.directory.appending("build.html")
        let result = try runCommand(odrpack, ["build", game.assets.path, "--output", game.catalog.path, "--no-cache", "--report-html", page.path])
        #expect(result.status == 0, "\(result.stderr)")
        let html = try String(contentsOf: page, encoding: .utf8)
        let manifest = try game.manifest(1)
        let rows = try Self.tagRows(in: html)
        for tag in manifest.tags { #expect(rows[tag.name]?["download"] == tag.downloadBytes) }
        // The build's own warning (a skipped link) is on the page.
        #expect(html.contains("data-code=\"skippedFile\""))
    }
}
