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
            """
    )

    @Argument(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
    var catalog: String

    @Argument(help: ArgumentHelp("The version compared from.", valueName: "a"))
    var from: Int

    @Argument(help: ArgumentHelp("The version compared to.", valueName: "b"))
    var to: Int

    @Flag(help: "Print JSON.")
    var json = false

    func validate() throws {
        if from < 1 || to < 1 { throw ValidationError("Version numbers start at 1.") }
    }

    func run() async throws {
        let diff = try await reportingLibraryErrors {
            try CatalogDiff(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), from: from, to: to)
        }
        if json { try printJSON(diff) } else { print(diff.rendered(), terminator: "") }
    }
}
