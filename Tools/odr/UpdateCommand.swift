import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr update`: moves every tag the store holds to the distribution's current version.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Update every tag the store holds to the catalog's current version (--dry-run: only say what would move).",
        discussion: """
            Installs the current version's packs of every tag the store holds, as odr fetch of \
            those tags would, and lists only the tags that change, with the bytes that move. \
            With --dry-run nothing is installed: it only says what the update would download.

            Compares the tags the store holds with the distribution's current version: packs with \
            the same id carry over; of new or changed packs, only the files whose content the store \
            does not hold already would be downloaded, and of a large (chunked) file only the chunks \
            the store does not hold. Packs the new \
            version no longer needs become the first candidates for purging. A tag counts as held \
            when its packs are all installed under the previous or the current version (after a \
            rollback the current one is the older), or when an installed pack belongs to it alone.

            The superseded packs of the previous version are kept (for a process still using \
            it, or a rollback) unless --keep-versions 0; older ones are deleted once no request \
            holds them.

            Example:
              odr update --catalog http://127.0.0.1:8080/ --store ./store --dry-run
              odr update --catalog http://127.0.0.1:8080/ --store ./store
            """)

    @OptionGroup var options: CatalogOptions
    @OptionGroup var space: SpaceOptions

    @Flag(name: .customLong("dry-run"), help: "Only say what the update would download; install nothing.")
    var dryRun = false

    @Flag(help: "Print JSON instead of text.")
    var json = false

    struct Report: Encodable {
        var dryRun: Bool
        var previousVersion: Int?
        var currentVersion: Int
        /// The tags the store holds (see the command's discussion).
        var held: [String]
        /// The held tags whose packs change in the current version.
        var tags: [String]
        var download: [String]
        var downloadBytes: Int64
        var superseded: [String]
        var supersededBytes: Int64
        /// What applying the update did (not with `--dry-run`): bytes received over the network,
        /// bytes reused from the store, and the packs deleted meanwhile.
        var downloadedBytes: Int64?
        var reusedBytes: Int64?
        var purged: [FetchCommand.Report.Purged]?
    }

    func run() async throws {
        try await reportingResourceErrors {
            let (store, client, engine) = try options.open()
            let previous = try client.storedSnapshot()
            let current = try await client.refresh()
            try current.requireDeclaredVariants()
            let installed = try store.installedPackIDs()
            // The tags the store holds: those whose packs are all installed under the previous or the
            // current version (after a rollback the current one is the older), and those of which an
            // installed pack belongs to that tag alone (partly installed; a pack shared with another
            // tag says nothing about this one).
            var held = Set<String>()
            // Tags as this device sees them: only the packs of its chosen variants count.
            for lookup in [previous?.lookup, current.lookup].compactMap({ $0 }) {
                let exclusive = Set(lookup.manifest.packs.filter { $0.tags.count == 1 && lookup.isChosen(packID: $0.id) && installed.contains($0.id) }.flatMap(\.tags))
                for tag in lookup.tags where tag.packs.allSatisfy(installed.contains) || exclusive.contains(tag.name) {
                    held.insert(tag.name)
                }
            }
            let kept = held.filter { current.lookup.tag(named: $0) != nil }.sorted()
            // Only tags with a pack to install change.
            let changing = kept.filter { tag in current.lookup.packs(forTags: [tag]).contains { !installed.contains($0) } }
            let needed = current.lookup.packs(forTags: changing).compactMap { current.lookup.pack(id: $0) }
            let download = needed.filter { !installed.contains($0.id) }
            // Only the files that changed travel: entries whose content the store holds are reused.
            let planned = try PackInstaller(store: store, transport: engine, bundledCatalog: client.bundledCatalog)
                .downloadBytes(of: download, in: current)
            let superseded = try store.packs().filter { $0.isInstalled && $0.isSuperseded }
            let own = Dictionary(try store.diskAccount().packs.map { ($0.id, $0.ownBytes) }, uniquingKeysWith: { first, _ in first })
            var report = Report(dryRun: dryRun, previousVersion: previous?.version, currentVersion: current.version, held: kept, tags: changing,
                                download: download.map(\.id), downloadBytes: download.lazy.map { planned[$0.id] ?? $0.archiveBytes }.clampedSum(),
                                superseded: superseded.map(\.id), supersededBytes: superseded.lazy.map { own[$0.id] ?? 0 }.clampedSum())
            if !dryRun, !changing.isEmpty {
                let manager = try options.openManager(space: space)
                _ = try await loadCheckedCatalog(manager, offline: options.offline)
                let fetched = try await manager.fetch(tags: changing)
                report.downloadedBytes = fetched.install.downloadedBytes
                report.reusedBytes = fetched.install.reusedBytes
                report.purged = fetched.purged.map { .init(id: $0.packID, bytes: $0.bytes, reason: $0.reason.rawValue) }
            }
            if json { try printJSON(report); return }
            if let from = report.previousVersion, from != report.currentVersion {
                print("new version: \(from) -> \(report.currentVersion)")
            } else {
                print("version \(report.currentVersion) is current")
            }
            let verb = dryRun || changing.isEmpty ? "would download" : "downloading"
            print(changing.isEmpty ? "no held tag changes"
                  : "\(verb) \(download.count) pack(s), \(byteText(report.downloadBytes)), for tags: \(changing.joined(separator: ", "))")
            for pack in download {
                let bytes = planned[pack.id] ?? pack.archiveBytes
                let delta = bytes < pack.archiveBytes ? " of \(byteText(pack.archiveBytes))" : ""
                print("  \(pack.id.prefix(12))  \(byteText(bytes))\(delta)  \(pack.tags.joined(separator: ","))")
            }
            if let downloaded = report.downloadedBytes {
                print("updated \(changing.count) tag(s): \(byteText(downloaded)) downloaded, \(byteText(report.reusedBytes ?? 0)) reused from the store")
                for pack in report.purged ?? [] { print("  purged \(pack.id.prefix(12))  \(byteText(pack.bytes))  \(pack.reason)") }
            } else {
                print("superseded (purged first): \(superseded.count) pack(s), \(byteText(report.supersededBytes)) of their own")
            }
        }
    }
}
