import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack diff CATALOG A B`: what changed between two versions and what it costs clients.
struct DiffCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "diff",
        abstract: "Compare two versions: tags, packs and files changed, and the bytes a client on A downloads to reach B.",
        discussion: """
            Examples:
              odrpack diff out/catalog 3 4
              odrpack diff out/catalog 3 4 --json
              odrpack diff out/catalog 3 4 --rules assets/odr.json

            Warns (baseGrew) when the base tag, which every client installs first, grew by more than \
            limits.baseGrowthWarning (1 MiB unless --rules gives the rules file), naming its new folders.
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Argument(help: ArgumentHelp("The version compared from.", valueName: "a"))
    var from: Int

    @Argument(help: ArgumentHelp("The version compared to.", valueName: "b"))
    var to: Int

    @Option(help: ArgumentHelp("The rules file the catalog is built with, for its limits.baseGrowthWarning (default: 1 MiB).", valueName: "file"))
    var rules: String?

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if from < 1 || to < 1 { throw ValidationError("Version numbers start at 1.") }
    }

    func run() async throws {
        let diff = try await reportingLibraryErrors {
            let limits = try rules.map { file throws(BuildError) in try TagRules.load(from: URL(filePath: file)).limits } ?? TagRules.Limits()
            return try CatalogDiff(
                catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), from: from, to: to,
                baseGrowthWarning: limits.baseGrowthWarning)
        }
        if json { try printJSON(diff) } else { print(diff.rendered(), terminator: "") }
    }
}
