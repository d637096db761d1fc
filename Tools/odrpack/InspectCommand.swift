import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack inspect CATALOG`: distributions, versions, and one version's tags and packs.
struct InspectCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "inspect",
        abstract: "Show a catalog's distributions and versions, and one version's tags and packs.",
        discussion: """
            Without --catalog-version, shows the version the 'live' distribution points at (or the \
            latest). --json prints the index summary with the full version manifest.

            Examples:
              odrpack inspect out/catalog
              odrpack inspect out/catalog --catalog-version 3 --json | jq .manifest.tags
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    // Not --version: that is the tool's own version flag.
    @Option(name: .customLong("catalog-version"), help: "The catalog version to show, e.g. --catalog-version 3.")
    var version: Int?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if let version, version < 1 { throw ValidationError("--catalog-version starts at 1.") }
    }

    func run() async throws {
        let inspection = try await reportingLibraryErrors {
            try CatalogInspection(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), version: version)
        }
        if json { try printJSON(inspection) } else { print(inspection.rendered(), terminator: "") }
    }
}
