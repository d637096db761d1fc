import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr update`: checks for a new version and says what moving to it would download.
struct UpdateCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "update",
        abstract: "Check the catalog for a new version and say what it would download.",
        discussion: """
            Compares the tags the store holds with the distribution's current version: packs with \
            the same id carry over; of new or changed packs, only the files whose content the store \
            does not hold already would be downloaded, and of a large (chunked) file only the chunks \
            the store does not hold. Packs the new \
            version no longer needs become the first candidates for purging. A tag counts as held \
            when its packs are all installed under the previous or the current version (after a \
            rollback the current one is the older), or when an installed pack belongs to it alone.

            Example:
              odr update --catalog http://127.0.0.1:8080/ --store ./store
            """)

    @OptionGroup var options: CatalogOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    struct Report: Encodable {
        var previousVersion: Int?
        var currentVersion: Int
        var tags: [String]
        var download: [String]
        var downloadBytes: Int64
        var superseded: [String]
        var supersededBytes: Int64
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
            let needed = current.lookup.packs(forTags: kept).compactMap { current.lookup.pack(id: $0) }
            let download = needed.filter { !installed.contains($0.id) }
            // Only the files that changed travel: entries whose content the store holds are reused.
            let planned = try PackInstaller(store: store, transport: engine, bundledCatalog: client.bundledCatalog)
                .downloadBytes(of: download, in: current)
            let superseded = try store.packs().filter { $0.isInstalled && $0.isSuperseded }
            let report = Report(previousVersion: previous?.version, currentVersion: current.version, tags: kept,
                                download: download.map(\.id), downloadBytes: download.lazy.map { planned[$0.id] ?? $0.archiveBytes }.clampedSum(),
                                superseded: superseded.map(\.id), supersededBytes: superseded.lazy.map(\.installedBytes).clampedSum())
            if json { try printJSON(report); return }
            if let from = report.previousVersion, from != report.currentVersion {
                print("new version: \(from) -> \(report.currentVersion)")
            } else {
                print("version \(report.currentVersion) is current")
            }
            print("would download \(download.count) pack(s), \(byteText(report.downloadBytes)), for tags: \(kept.joined(separator: ", "))")
            for pack in download {
                let bytes = planned[pack.id] ?? pack.archiveBytes
                let delta = bytes < pack.archiveBytes ? " of \(byteText(pack.archiveBytes))" : ""
                print("  \(pack.id.prefix(12))  \(byteText(bytes))\(delta)  \(pack.tags.joined(separator: ","))")
            }
            print("superseded (purged first): \(superseded.count) pack(s), \(byteText(report.supersededBytes))")
        }
    }
}
