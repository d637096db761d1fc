import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr status`: the gauge Xcode shows for on-demand resources.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show each tag's size and state, each pack, the store's usage and free space.",
        discussion: """
            States: not downloaded, downloading (in progress or resumable), downloaded, in use. \
            A tag's download size counts what fetching it would move: files the store holds are \
            reused, and of a large (chunked) file only the chunks the store does not hold travel. \
            A pack is in use while a request in any process on the store holds it (its lease in \
            locks/<id>.lease, which dies with the process); a tag is in use when all of its packs are.

            In a catalog with variant axes, each tag counts the packs of the --variant choice (as \
            odr fetch takes it) plus the common ones; packs of other variants are listed only when \
            installed, marked 'not chosen' (purged first).

            Example:
              odr status --catalog http://127.0.0.1:8080/ --store ./store --json
              odr status --catalog http://127.0.0.1:8080/ --store ./store \\
                --variant resolution=2x,1x
            """)

    @OptionGroup var options: CatalogOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    struct Report: Encodable {
        struct Catalog: Encodable { var url: String; var id: String; var serial: Int; var distribution: String; var version: Int }
        struct Tag: Encodable {
            var name: String; var state: TagState; var downloadBytes: Int64; var installedBytes: Int64
            var preservationPriority: Double; var packs: [String]
        }
        struct Pack: Encodable {
            var id: String; var state: PackState; var archiveBytes: Int64; var installedBytes: Int64
            var tags: [String]; var superseded: Bool; var lastUsedAt: Double?
            /// The pack's variant (`resolution=2x,texture=astc`), empty for a common pack.
            var variant: String
            /// Whether the pack is of a variant the device does not choose (listed when installed).
            var notChosen: Bool
            /// Bytes of the pack in `staging/`: a download in progress or interrupted.
            var stagingBytes: Int64 = 0
        }
        var catalog: Catalog
        var tags: [Tag]
        var packs: [Pack]
        var store: StoreUsage
    }

    func run() async throws {
        try await reportingResourceErrors {
            let (store, client, engine) = try options.open()
            let snapshot = try await client.snapshot(online: !options.offline)
            announceFallback(snapshot)
            try snapshot.requireDeclaredVariants()
            let installed = try store.installedPackIDs()
            // What each missing pack would really download: files the store holds are reused.
            let planned = try PackInstaller(store: store, transport: engine, bundledCatalog: client.bundledCatalog)
                .downloadBytes(of: snapshot.manifest.packs.filter { snapshot.lookup.isChosen(packID: $0.id) && !installed.contains($0.id) }, in: snapshot)
            let overrides = try store.preservationPriorityOverrides(catalogURL: snapshot.catalogURL)
            let rows = Dictionary(uniqueKeysWithValues: try store.packs().map { ($0.id, $0) })
            let tags = snapshot.lookup.tags.map { tag in
                Report.Tag(name: tag.name, state: store.state(ofTag: tag, installed: installed),
                           downloadBytes: tag.packs.lazy.map { planned[$0] ?? 0 }.clampedSum(), installedBytes: tag.installedBytes,
                           preservationPriority: snapshot.preservationPriority(ofTag: tag.name, overrides: overrides),
                           packs: tag.packs)
            }
            // The packs this device downloads, and installed ones of variants it does not choose.
            var packs = snapshot.manifest.packs.filter { snapshot.lookup.isChosen(packID: $0.id) || installed.contains($0.id) }.map { pack in
                Report.Pack(id: pack.id, state: store.state(ofPack: pack.id, installed: installed), archiveBytes: pack.archiveBytes,
                            installedBytes: pack.installedBytes, tags: pack.tags, superseded: false,
                            lastUsedAt: rows[pack.id]?.lastUsedAt, variant: pack.variant.variantDescription,
                            notChosen: !snapshot.lookup.isChosen(packID: pack.id))
            }
            // Installed packs the current version no longer lists: superseded, purged first.
            for row in rows.values.sorted(by: { $0.number < $1.number }) where row.isInstalled && snapshot.lookup.pack(id: row.id) == nil {
                packs.append(Report.Pack(id: row.id, state: store.state(ofPack: row.id, installed: installed), archiveBytes: row.archiveBytes, installedBytes: row.installedBytes,
                                         tags: [], superseded: true, lastUsedAt: row.lastUsedAt, variant: "", notChosen: false))
            }
            let staged = Dictionary(uniqueKeysWithValues: store.stagedPacks().map { ($0.packID, $0.bytes) })
            for index in packs.indices { packs[index].stagingBytes = staged[packs[index].id] ?? 0 }
            let report = Report(
                catalog: .init(url: snapshot.catalogURL.absoluteString, id: snapshot.index.id, serial: snapshot.index.serial,
                               distribution: options.distribution, version: snapshot.version),
                tags: tags, packs: packs, store: try store.usage())
            if json { try printJSON(report) } else { printText(report) }
        }
    }

    private func printText(_ report: Report) {
        print("catalog \(report.catalog.id) serial \(report.catalog.serial), \(report.catalog.distribution) = version \(report.catalog.version)")
        print("tags:")
        // The name column is as wide as the longest name, so no name is cut.
        let width = report.tags.map(\.name.count).max() ?? 0
        for tag in report.tags {
            print("  \(tag.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(tag.state.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(byteText(tag.installedBytes)) (download \(byteText(tag.downloadBytes)))")
        }
        print("packs:")
        for pack in report.packs {
            var tags = pack.superseded ? "superseded" : pack.tags.joined(separator: ",")
            if !pack.variant.isEmpty { tags += " [\(pack.variant)\(pack.notChosen ? ", not chosen" : "")]" }
            let staged = pack.stagingBytes > 0 ? " (\(byteText(pack.stagingBytes)) staged)" : ""
            print("  \(pack.id.prefix(12))  \(pack.state.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(byteText(pack.installedBytes))\(staged)  \(tags)")
        }
        print("store: \(byteText(report.store.installedBytes)) in \(report.store.installedPacks) pack(s), \(byteText(report.store.stagingBytes)) in staging; \(byteText(report.store.freeBytes)) free")
    }
}
