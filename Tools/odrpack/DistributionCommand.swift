import ArgumentParser
import Foundation
import ODRBuilder

/// `odrpack distribution set NAME VERSION`: moves a distribution pointer.
struct DistributionCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "distribution",
        abstract: "Move a distribution pointer (promote test to live, roll back).",
        subcommands: [Set.self]
    )

    struct Set: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Point distribution NAME at VERSION.",
            discussion: """
                Rewrites catalog.json atomically with a higher serial; packs and manifests are untouched.

                Examples:
                  odrpack distribution set live 8 --catalog out/catalog     # promote version 8
                  odrpack distribution set live 7 --catalog out/catalog     # roll back
                  odrpack distribution set live 8 --catalog out/catalog --sign-with keys/release.key
                """
        )

        @Argument(help: ArgumentHelp("The distribution, e.g. live or test.", valueName: "name"))
        var name: String

        @Argument(help: ArgumentHelp("The version to point it at.", valueName: "version"))
        var version: Int

        @Option(help: ArgumentHelp("The catalog folder.", valueName: "catalog"))
        var catalog: String

        @OptionGroup var signing: SigningOptions

        func validate() throws {
            if version < 1 { throw ValidationError("Version numbers start at 1.") }
            if name.isEmpty { throw ValidationError("The distribution name cannot be empty.") }
        }

        func run() async throws {
            let previous = try await reportingLibraryErrors {
                try CatalogEditor(catalog: CatalogDirectory(root: URL(filePath: catalog, directoryHint: .isDirectory)), signing: try signing.signing())
                    .setDistribution(name, to: version)
            }
            print("\(name): \(previous.map(String.init) ?? "none") -> \(version)")
        }
    }
}
