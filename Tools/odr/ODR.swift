import ArgumentParser
import ODRCommandLine
import ODRFormat

/// `odr`: the on-demand resource runtime from the command line, for people and scripts.
@main
struct ODR: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "odr",
        abstract: "Fetch, inspect and verify on-demand resources in a store.",
        discussion: """
            A store is a directory holding installed packs and a SQLite database (--store, or \
            $ODR_STORE). Every command that talks to a catalog takes its base URL (the folder of \
            catalog.json) with --catalog: http:// or https://, a file:// URL or a local folder; left \
            out, $ODR_CATALOG, else the one catalog the store follows. Sizes are written 1048576, \
            100MB, 100 MiB or 256k. Errors print `error[<code>]: <message>` on stderr and exit \
            with status 1 (64 for a usage error).

            Examples, with CDN=http://127.0.0.1:8080/:
              odr fetch --catalog $CDN --store ~/odr-store level1 level2
              odr status --catalog $CDN --store ~/odr-store --json
              odr path --catalog $CDN --store ~/odr-store Levels/Level1/map.json
              odr update --catalog $CDN --store ~/odr-store
              odr purge --catalog $CDN --store ~/odr-store --bytes 100000000 --dry-run
              odr log --store ~/odr-store
              odr verify --store ~/odr-store
            """,
        version: ODRVersion.current,
        subcommands: [FetchCommand.self, StatusCommand.self, PathCommand.self, VerifyCommand.self, UpdateCommand.self, PurgeCommand.self, LogCommand.self, HoldCommand.self, DemoCommand.self, ShareCommand.self]
    )

    static func main() async { await runReportingErrors() }
}
