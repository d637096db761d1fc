import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrpack report CATALOG --html OUT.html`: one version's packs, tags, sharing, variants and update
/// cost as a self-contained HTML page (or JSON).
struct ReportCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "report",
        abstract: "Write an HTML page (or JSON) of a version's packs, tags, sharing, deduplication and update cost.",
        discussion: """
            The page is one file that opens from disk in any browser and fetches nothing: a treemap \
            of the packs sized by download bytes and coloured by tag set (shared packs hatched; point \
            at one for its tags and largest files), a table of tags (download and installed bytes, \
            packs, files, which tags share their packs), deduplication, the initial-install budget \
            and warnings. With --against M, what a client on version M downloads per tag to move to \
            this version (entries it holds are not fetched again, as the runtime plans it) and the \
            files added, changed and removed. With --variant, the tag table adds what a device with \
            those choices downloads. Long lists show their largest items; --json prints everything. \
            The numbers are those of odrpack inspect --json and odrpack diff. See docs/ODRPACK.md.

            Examples:
              odrpack report out/catalog --html report.html
              odrpack report out/catalog --html report.html --version 4 --against 3
              odrpack report out/catalog --html report.html --variant resolution=2x
              odrpack report out/catalog --json --against 3 | jq '.update.tagDownloadBytes'
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Option(help: ArgumentHelp("Write the HTML page to this file (replaced whole, never half-written), e.g. --html report.html.", valueName: "file"))
    var html: String?

    @Flag(help: "Print the report as JSON on stdout (every pack and tag, not only the largest).")
    var json = false

    // The subcommand's own --version, which the root's version flag does not reach.
    // Not --version: that is the tool's own version, in every tool and subcommand (docs/CLI.md).
    @Option(name: .customLong("catalog-version"),
            help: ArgumentHelp("The catalog version to report (default: the 'live' distribution's, or the latest), e.g. --catalog-version 4.", valueName: "n"))
    var version: Int?

    @Option(help: ArgumentHelp("Price the update from this version: bytes per tag, files added, changed and removed, e.g. --against 3.", valueName: "m"))
    var against: Int?

    @Option(name: .customLong("variant"), parsing: .singleValue,
            help: ArgumentHelp("A device's variant choice, axis=value[,fallback...] (repeatable), e.g. --variant resolution=2x.", valueName: "axis=value"))
    var variantChoices: [String] = []

    @Option(help: ArgumentHelp("The rules file the catalog was built with, for its pack size limit and initial-install budget (default: odrpack's defaults).", valueName: "file"))
    var rules: String?

    func validate() throws {
        if html == nil, !json { throw ValidationError("Give --html FILE for the page, or --json.") }
        if let version, version < 1 { throw ValidationError("--version starts at 1.") }
        if let against, against < 1 { throw ValidationError("--against starts at 1.") }
        do { _ = try VariantPreferences.parse(variantChoices) } catch { throw ValidationError("--variant: \(error.message)") }
    }

    func run() async throws {
        let report = try await reportingLibraryErrors {
            let limits = try rules.map { file throws(BuildError) in try TagRules.load(from: URL(filePath: file)).limits }
            let device = (try? VariantPreferences.parse(variantChoices)) ?? VariantPreferences()
            let report = try CatalogReport(
                catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)),
                version: version, against: against, device: device, limits: limits)
            if let html { try report.writeHTML(to: URL(filePath: html)) }
            return report
        }
        if json { try printJSON(report) }
        if let html, !json {
            print("wrote \(html): version \(report.summary.version), \(report.summary.packs.count) packs, \(report.summary.tags.count) tags"
                  + (report.update.map { "; update from \($0.diff.from): \($0.diff.downloadBytes) bytes" } ?? ""))
        }
    }
}
