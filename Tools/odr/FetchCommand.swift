import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr fetch`: installs what the given tags need.
struct FetchCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "fetch",
        abstract: "Download, verify and install the packs the given tags need.",
        discussion: """
            Checks the catalog (conditional GET), then installs every pack the tags need that the \
            store lacks: only entries whose content the store does not hold travel (byte ranges), \
            and an interrupted fetch continues where it stopped. Exits 0 when every tag is installed.

            Example:
              odr fetch --catalog http://127.0.0.1:8080/ --store ./store level1 tutorial
            """)

    @OptionGroup var options: CatalogOptions
    @OptionGroup var install: InstallOptions

    @Flag(help: "Print nothing on success, even on a terminal.")
    var quiet = false

    @Flag(help: "Print what the install did as JSON (bytes downloaded, reused and resumed, requests, and per pack).")
    var json = false

    @Argument(help: "The tags to install.")
    var tags: [String]

    func validate() throws {
        guard !tags.isEmpty else { throw ValidationError("Name at least one tag to fetch.") }
    }

    /// One line per tag whose packs were updated by reusing installed files, e.g.
    /// `level3: 1 of 14 files changed, 4.1 KiB downloaded instead of 480.0 KiB (99% saved)`.
    static func updateLines(_ summary: InstallSummary, tags: [String], snapshot: CatalogSnapshot) -> [String] {
        let reports = Dictionary(summary.packs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        return tags.compactMap { tag in
            let packs = snapshot.lookup.packs(forTags: [tag]).compactMap { reports[$0] }
            guard packs.contains(where: { $0.reusedEntries > 0 }) else { return nil }
            let entries = packs.reduce(0) { $0 + $1.entries }, changed = packs.reduce(0) { $0 + $1.fetchedEntries }
            let downloaded = packs.reduce(Int64(0)) { $0 + $1.downloadedBytes }, whole = packs.reduce(Int64(0)) { $0 + $1.archiveBytes }
            let saved = whole > 0 ? Int((Double(whole - downloaded) / Double(whole) * 100).rounded(.down)) : 0
            return "\(tag): \(changed) of \(entries) files changed, \(byteText(downloaded)) downloaded instead of \(byteText(whole)) (\(saved)% saved)"
        }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let (store, client, engine) = try options.open(installing: install)
            let snapshot = try await client.snapshot(online: !options.offline)
            announceFallback(snapshot)
            let packs = try snapshot.packs(forTags: tags)
            var installer = PackInstaller(store: store, transport: engine, bundledCatalog: client.bundledCatalog)
            installer.priority = .urgent
            let bar = FetchProgressBar(enabled: !quiet && !json && isatty(STDERR_FILENO) == 1)
            let summary = try await installer.install(packs, from: snapshot) { bar.update($0) }
            bar.finish()
            if json {
                try printJSON(summary)
            } else if !quiet {
                print("Installed \(summary.installed.count) pack(s) (\(byteText(summary.downloadedBytes)) downloaded"
                      + (summary.reusedFiles > 0 ? ", \(summary.reusedFiles) unchanged file(s) reused, \(byteText(summary.reusedBytes))" : "")
                      + (summary.resumedBytes > 0 ? ", \(byteText(summary.resumedBytes)) resumed" : "")
                      + "); \(summary.alreadyInstalled.count) already installed. Tags: \(tags.joined(separator: ", ")).")
                for line in Self.updateLines(summary, tags: tags, snapshot: snapshot) { print(line) }
            }
        }
    }
}
