import ArgumentParser
import Foundation
import ODRRuntime

/// `odr fetch`: installs what the given tags need.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download, verify and install the packs the given tags need.",
        discussion: """
            Checks the catalog (conditional GET), then installs every pack the tags need that the
            store lacks, resuming partial downloads. Exits 0 when every tag is installed.

            Example: odr fetch --catalog http://127.0.0.1:8080/ --store ./store level1 tutorial
            """)

    @OptionGroup var options: CatalogOptions

    @Flag(help: "Print nothing on success, even on a terminal.")
    var quiet = false

    @Argument(help: "The tags to install.")
    var tags: [String]

    func validate() throws {
        guard !tags.isEmpty else { throw ValidationError("Name at least one tag to fetch.") }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let (store, client, engine) = try options.open()
            let snapshot = try await client.snapshot(online: !options.offline)
            let packs = try snapshot.packs(forTags: tags)
            var installer = PackInstaller(store: store, transport: engine, bundledCatalog: client.bundledCatalog)
            installer.priority = .urgent
            let bar = FetchProgressBar(enabled: !quiet && isatty(STDERR_FILENO) == 1)
            let summary = try await installer.install(packs, from: snapshot) { bar.update($0) }
            bar.finish()
            if !quiet {
                print("Installed \(summary.installed.count) pack(s) (\(byteText(summary.downloadedBytes)) downloaded"
                      + (summary.resumedBytes > 0 ? ", \(byteText(summary.resumedBytes)) resumed" : "")
                      + "); \(summary.alreadyInstalled.count) already installed. Tags: \(tags.joined(separator: ", ")).")
            }
        }
    }
}
