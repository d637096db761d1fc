import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// The sample game's report page as a person sees it: rendered by headless Chromium with the
/// network cut off, every tag and pack in the DOM, the script run, nothing fetched, and a
/// screenshot that is not blank.
@Suite(.enabled(if: HeadlessChromium.executable != nil,
                "chromium is not installed: make deps installs Debian's chromium (apt-get install chromium); the browser test is skipped"))
struct ReportBrowserTests {
    @Test func samplePageRendersEveryTagAndPackAndFetchesNothing() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-report-browser")
        let catalog = try await SampleGame.buildCatalog(in: directory)
        let report = try CatalogReport(catalog: CatalogDirectory(root: catalog))
        let page = directory.appending("report.html")
        try report.writeHTML(to: page)
        let manifest = try CatalogInspection(catalog: CatalogDirectory(root: catalog)).manifest

        let browser = HeadlessChromium(executable: try #require(HeadlessChromium.executable), work: directory.url)
        async let rendered = browser.dumpDOM(of: page)
        async let shot = browser.screenshot(of: page, width: 1280, height: 900)
        let (dom, netLog) = try await rendered
        let png = try await shot

        // The script ran (the CSP lets only the hashed script run) and filled the details panel.
        #expect(dom.contains("data-ready=\""))
        #expect(dom.contains("<th>largest files</th>"))
        for tag in manifest.tags { #expect(dom.contains("<tr data-tag=\"\(tag.name)\""), "tag \(tag.name)") }
        for pack in manifest.packs { #expect(dom.contains("data-pack=\"\(pack.id)\""), "pack \(pack.id)") }
        #expect(dom.contains("<svg id=\"treemap\""))

        // Nothing fetched: the page made no request, though the log recorded the browser's own.
        let log = try HeadlessChromium.pageRequests(inNetLog: netLog)
        #expect(log.events > 0)
        #expect(log.requests == [])

        // The screenshot is the page: its size, and many colours (the treemap's), not one background.
        let image = try PNGImage(contentsOf: png)
        #expect(image.width == 1280 && image.height == 900)
        let colours = image.colourCounts()
        let background = colours.values.max() ?? 0
        #expect(colours.count > 50)
        #expect(background < image.width * image.height * 8 / 10)
    }

    @Test func markupInAFileNameIsShownAsText() async throws {
        let game = try await CatalogReportTests.twoVersions()
        let page = game.directory.appending("report.html")
        try CatalogReport(catalog: CatalogDirectory(root: game.catalog), version: 2, against: 1).writeHTML(to: page)
        let browser = HeadlessChromium(executable: try #require(HeadlessChromium.executable), work: game.directory.url)
        let (dom, _) = try await browser.dumpDOM(of: page)
        // The name is text in the list of added files, and no element was made of it.
        #expect(dom.contains("<li>big/&lt;script&gt;alert(1)&lt;/script&gt;\"'&amp;.txt</li>"))
        #expect(dom.components(separatedBy: "<script").count - 1 == 2)
        #expect(dom.contains("data-ready=\""))
    }
}
