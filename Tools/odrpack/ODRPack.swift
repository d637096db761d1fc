import ArgumentParser
import ODRCommandLine
import ODRFormat

/// `odrpack`: builds, inspects and serves on-demand resource catalogs.
@main
struct ODRPack: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odrpack",
        abstract: "Build, inspect and serve on-demand resource catalogs.",
        discussion: """
            A catalog is a directory of static files (catalog.json, versions/<n>.json and
            packs/<sha256>.zip) that any HTTP server or CDN can host. See docs/FORMAT.md.
            """,
        version: ODRVersion.current,
        subcommands: [
            InitCommand.self,
            BuildCommand.self,
            InspectCommand.self,
            VerifyCommand.self,
            DiffCommand.self,
            ReportCommand.self,
            DistributionCommand.self,
            PruneCommand.self,
            SignCommand.self,
            KeyCommand.self,
            ServeCommand.self,
            PublishCommand.self,
        ]
    )

    static func main() async { await runReportingErrors() }
}
