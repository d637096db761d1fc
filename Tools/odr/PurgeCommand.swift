import ArgumentParser
import ODRCommandLine
import Foundation
import ODRFormat
import ODRRuntime

/// `odr purge`: what a purge of N bytes would delete and why, and deleting it.
struct PurgeCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "purge",
        abstract: "Show or carry out a purge: which packs would go to free N bytes, and why.",
        discussion: """
            Plans the purge the runtime would make: packs superseded by a newer catalog version \
            and packs of variants the --variant choice does not take (variant-not-chosen: installed \
            with another choice) first, then those unused longest, where each 0.06 of preservation priority halves how \
            fast a pack ages and a pack used often (counted by powers of two) ages slower, \
            preferring a choice that frees enough without freeing far more. Packs in use are never \
            candidates: those a request in any process on the store holds (their lease in \
            locks/<id>.lease) and those being downloaded. Each pack is listed with its reason, \
            size, tags and last use.

            With --dry-run nothing is deleted. Without it the packs are deleted in that order, \
            skipping any that a request began to use meanwhile, and each purge is recorded in the \
            store's log (see odr log). When every pack not in use is not enough, it deletes them \
            all and reports the shortfall.

            Examples, with CDN=http://127.0.0.1:8080/:
              odr purge --catalog $CDN --store ./store --bytes 50MB --dry-run
              odr purge --catalog $CDN --store ./store --bytes 50000000 --json
            """)

    @OptionGroup var options: CatalogOptions

    @Option(help: "How many bytes to free: a byte size such as 100000000, 100MB, 100 MiB or 256k.",
            transform: ByteSizeArgument.bytes)
    var bytes: Int64

    @Flag(name: .customLong("dry-run"), help: "Only show what would be purged.")
    var dryRun = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    func validate() throws {
        guard bytes > 0 else { throw ValidationError("--bytes must be a positive number of bytes to free.") }
    }

    struct Report: Encodable {
        struct Pack: Encodable {
            var id: String; var reason: String; var bytes: Int64; var tags: [String]; var superseded: Bool
            var lastUsedAt: Double?
            /// The pack's variant (`resolution=2x`), empty for a common or superseded pack.
            var variant: String
        }
        var dryRun: Bool
        var bytesNeeded: Int64
        var bytesFreed: Int64
        var shortfall: Int64
        var packs: [Pack]
        /// Installed packs left alone because a request in some process holds them.
        var inUse: [String]
    }

    func run() async throws {
        try await reportingResourceErrors {
            let manager = try options.openManager()
            let snapshot = try await loadCheckedCatalog(manager, offline: options.offline)
            let proposal = dryRun ? try manager.purgePlan(bytes: bytes) : try await manager.purge(bytes: bytes)
            let rows = Dictionary(uniqueKeysWithValues: try manager.store.packs().map { ($0.id, $0) })
            let packs = proposal.deletions.map { deletion in
                let tags = snapshot.lookup.pack(id: deletion.packID)?.tags ?? []
                return Report.Pack(id: deletion.packID, reason: deletion.reason.rawValue, bytes: deletion.bytes, tags: tags,
                                   superseded: snapshot.lookup.pack(id: deletion.packID) == nil,
                                   lastUsedAt: rows[deletion.packID]?.lastUsedAt,
                                   variant: snapshot.lookup.pack(id: deletion.packID)?.variant.variantDescription ?? "")
            }
            let inUse = rows.values.filter { $0.isInstalled && manager.store.isPackInUse(id: $0.id) }
                .sorted { $0.number < $1.number }.map(\.id)
            let report = Report(dryRun: dryRun, bytesNeeded: proposal.bytesNeeded, bytesFreed: proposal.bytesFreed,
                                shortfall: proposal.shortfall, packs: packs, inUse: inUse)
            if json { try printJSON(report) } else { Self.printText(report) }
        }
    }

    static func printText(_ report: Report) {
        let verb = report.dryRun ? "would purge" : "purged"
        print("\(verb) \(report.packs.count) pack(s), \(byteText(report.bytesFreed)) of \(byteText(report.bytesNeeded)) asked")
        for pack in report.packs {
            let tags = pack.superseded ? "superseded" : pack.tags.joined(separator: ",") + (pack.variant.isEmpty ? "" : " [\(pack.variant)]")
            let used = pack.lastUsedAt.map { "last used \(timeText($0))" } ?? "never used"
            print("  \(pack.id.prefix(12))  \(pack.reason.padding(toLength: 25, withPad: " ", startingAt: 0)) \(byteText(pack.bytes).padding(toLength: 10, withPad: " ", startingAt: 0))  \(used)  \(tags)")
        }
        if !report.inUse.isEmpty {
            print("in use, left alone: \(report.inUse.count) pack(s): \(report.inUse.map { String($0.prefix(12)) }.joined(separator: ", "))")
        }
        if report.shortfall > 0 {
            print("short by \(byteText(report.shortfall)): every pack not in use is \(report.dryRun ? "in the plan" : "purged")")
        }
    }
}
