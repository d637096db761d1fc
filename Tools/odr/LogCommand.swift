import ArgumentParser
import Foundation
import ODRRuntime

/// `odr log`: the store's record of installs, purges, repairs, origin switches and hinted
/// prefetches, with their reasons.
struct LogCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "log",
        abstract: "List the store's installs, purges, repairs, failures, catalog changes and hinted prefetches with their reasons, newest first.",
        discussion: """
            Every process that installs or purges packs in the store records it: an install with \
            its tags, the bytes received over the network, reused from the store and resumed, and \
            every origin that served it (or bundled); a purge with the bytes it freed, the \
            planner's reason (superseded, older-version, low-preservation-priority, \
            least-recently-used, least-likely-hint, closest-fit) and the pack's tags; a failed \
            install (kind failure) with its error code; a catalog line when the followed version \
            changes (version A -> B) or a catalog.json is refused (refused: error[code], for a \
            rollback, an expired or untrusted signature, a damaged manifest); a \
            repair with what opening the store found, an origin switch with the failure that caused \
            it, and a prefetch that an anticipation hint started (kind hint) with how it ended: \
            cancelled when every hint naming it ended, failed, or installed. Needs no catalog and no \
            network.

            Examples:
              odr log --store ./store
              odr log --store ./store --limit 20 --json
            """)

    @OptionGroup var storeOption: StoreOption
    var store: String { storeOption.path }

    @Option(help: "Show only the newest N lines.")
    var limit: Int?

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        if let limit, limit < 1 { throw ValidationError("--limit must be at least 1.") }
    }

    struct Line: Encodable { var time: Double; var kind: String; var packID: String; var bytes: Int64; var reason: String }

    func run() async throws {
        try await reportingResourceErrors {
            let directory = URL(filePath: store, directoryHint: .isDirectory)
            guard FileManager.default.fileExists(atPath: directory.appending(path: ResourceStore.databaseName).path) else {
                throw ResourceError(.storageFailure, "'\(store)' holds no store (no \(ResourceStore.databaseName)). Pass the --store directory that odr fetch or your game uses.")
            }
            var events = Array(try ResourceStore(directory: directory).events().reversed())
            if let limit { events = Array(events.prefix(limit)) }
            let lines = events.map { Line(time: $0.time, kind: $0.kind.rawValue, packID: $0.packID, bytes: $0.bytes, reason: $0.reason) }
            if json { try printJSON(lines); return }
            for line in lines {
                print("\(timeText(line.time))  \(line.kind.padding(toLength: 7, withPad: " ", startingAt: 0)) \(line.packID.prefix(12))  \(byteText(line.bytes).padding(toLength: 10, withPad: " ", startingAt: 0))  \(line.reason)")
            }
        }
    }
}
