import ArgumentParser
import Foundation
import ODRFormat
import ODRRuntime

/// `odr status`: the gauge Xcode shows for on-demand resources.
struct StatusCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Summarize the catalog, the store's usage and free space, and the tags installed or downloading.",
        discussion: """
            By default a summary: the catalog (version, signing key and expiry), the store's usage \
            with files shared by packs of two versions (hard links) counted once, as du counts \
            them, the free space, the superseded packs kept and why, then one line per tag \
            installed or downloading. --packs lists the packs too, --all-tags every tag of the \
            catalog; --json prints everything.

            States: not downloaded, downloading (in progress or resumable), downloaded, in use. \
            A tag's download size counts what fetching it would move: files the store holds are \
            reused, and of a large (chunked) file only the chunks the store does not hold travel. \
            A pack is in use while a request in any process on the store holds it (its lease in \
            locks/<id>.lease, which dies with the process); a tag is in use when all of its packs are.

            In a catalog with variant axes, each tag counts the packs of the --variant choice (as \
            odr fetch takes it) plus the common ones; packs of other variants are listed only when \
            installed, marked 'not chosen' (purged first).

            When the app gave anticipation hints, a 'hints:' line gives the prefetch learning \
            measure its manager recorded in the store: the share of recent hinted prefetched \
            bytes a request later used, and what it lets hinted prefetches do (under the \
            standard rule: make room from 0.5, free space only from 0.4, none below).

            Example:
              odr status --catalog http://127.0.0.1:8080/ --store ./store --json
              odr status --catalog http://127.0.0.1:8080/ --store ./store \\
                --variant resolution=2x,1x
            """)

    @OptionGroup var options: CatalogOptions

    @Flag(help: "Print JSON instead of text.")
    var json = false

    @Flag(help: "List the packs too: each with its state, the bytes only it holds and those it shares.")
    var packs = false

    @Flag(name: .customLong("all-tags"), help: "List every tag of the catalog, not only those installed or downloading.")
    var allTags = false

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
            /// Of an installed pack: the bytes only it holds (what deleting it frees), those other
            /// installed packs share, and those linked from outside the installed packs.
            var ownBytes: Int64 = 0
            var sharedBytes: Int64 = 0
            var pinnedBytes: Int64 = 0
            /// Of a superseded pack: the newest version that lists it, and whether it is kept.
            var newestVersion: Int?
            var kept: Bool?
        }
        var catalog: Catalog
        /// `catalog.json`'s expiry, when it has one, and the ids of the keys that signed it.
        var expires: String?
        var signedBy: [String]
        var tags: [Tag]
        var packs: [Pack]
        var store: StoreUsage
        /// The prefetch learning measure the last manager on the store recorded, if any.
        var prefetchLearning: Learning?
        struct Learning: Encodable {
            /// The share of recent hinted prefetched bytes a request used (``PrefetchLearning/measure``).
            var measure: Double
            /// How many hinted packs were judged, in all.
            var judgments: Int
            /// What hinted prefetches may do under the standard rule: `make-room`, `free-space` or `none`.
            var allowance: String
        }
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
            let account = try store.diskAccount()
            let disk = Dictionary(account.packs.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
            let superseded = Dictionary(try store.supersededPacks(keepingVersions: ResourceManager.Configuration.defaultKeptPreviousVersions).map { ($0.id, $0) },
                                        uniquingKeysWith: { first, _ in first })
            for index in packs.indices {
                let id = packs[index].id
                packs[index].stagingBytes = staged[id] ?? 0
                if let usage = disk[id] {
                    (packs[index].ownBytes, packs[index].sharedBytes, packs[index].pinnedBytes) = (usage.ownBytes, usage.sharedBytes, usage.pinnedBytes)
                }
                if packs[index].superseded, let old = superseded[id] { (packs[index].newestVersion, packs[index].kept) = (old.newestVersion, old.isKept) }
            }
            let report = Report(
                catalog: .init(url: snapshot.catalogURL.absoluteString, id: snapshot.index.id, serial: snapshot.index.serial,
                               distribution: options.distribution, version: snapshot.version),
                expires: snapshot.index.expires, signedBy: (snapshot.index.signatures ?? []).map(\.keyID),
                tags: tags, packs: packs, store: try store.usage(of: account),
                prefetchLearning: try store.prefetchLearning().map { learning in
                    let allowance = switch learning.allowance { case .makeRoom: "make-room"; case .freeSpace: "free-space"; case .none: "none" }
                    return .init(measure: learning.measure, judgments: learning.judgments, allowance: allowance)
                })
            if json { try printJSON(report) } else { printText(report) }
        }
    }

    private func printText(_ report: Report) {
        var signing = report.signedBy.isEmpty ? "unsigned" : "signed by \(report.signedBy.map { String($0.prefix(12)) }.joined(separator: ", "))"
        if let expires = report.expires { signing += ", expires \(expires)" }
        print("catalog \(report.catalog.id) serial \(report.catalog.serial), \(report.catalog.distribution) = version \(report.catalog.version) (\(signing))")
        let usage = report.store
        var line = "store: \(byteText(usage.installedBytes)) in \(usage.installedPacks) pack(s)"
        if usage.sharedBytes > 0 { line += " (\(byteText(usage.sharedBytes)) shared by packs of several versions, counted once)" }
        line += ", \(byteText(usage.stagingBytes)) in staging; \(byteText(usage.freeBytes)) free"
        print(line)
        if usage.pinnedBytes > 0 {
            print("  \(byteText(usage.pinnedBytes)) of installed files are also linked from outside the store's packs: no purge frees them")
        }
        if let learning = report.prefetchLearning {
            let allowance = switch learning.allowance {
            case "make-room": "hinted prefetches make room"
            case "free-space": "hinted prefetches use free space only"
            default: "hinted prefetches are held back"
            }
            print("hints: \(Int((learning.measure * 100).rounded()))% of recent hinted prefetched bytes were used (measure \(String(format: "%.2f", learning.measure)), \(learning.judgments) hinted pack(s) judged); \(allowance) under the standard rule")
        }
        let old = report.packs.filter(\.superseded)
        let kept = old.filter { $0.kept == true }, reclaimed = old.filter { $0.kept != true }
        if !kept.isEmpty {
            let versions = Set(kept.compactMap(\.newestVersion)).sorted().map(String.init).joined(separator: ", ")
            print("kept from version \(versions): \(kept.count) superseded pack(s), \(byteText(kept.lazy.map(\.ownBytes).clampedSum())) of their own, for a process still using that version or a rollback (purged first under pressure)")
        }
        if !reclaimed.isEmpty {
            print("older versions: \(reclaimed.count) superseded pack(s), \(byteText(reclaimed.lazy.map(\.ownBytes).clampedSum())) of their own, deleted at the next fetch once no request holds them")
        }
        let tags = report.tags.filter { allTags || $0.state != .notDownloaded }
        print(allTags ? "tags:" : "tags installed or downloading (\(tags.count) of \(report.tags.count); --all-tags lists every one):")
        // The name column is as wide as the longest name, so no name is cut.
        let width = tags.map(\.name.count).max() ?? 0
        for tag in tags {
            print("  \(tag.name.padding(toLength: width, withPad: " ", startingAt: 0)) \(tag.state.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(byteText(tag.installedBytes)) (download \(byteText(tag.downloadBytes)))")
        }
        guard packs else { return }
        print("packs:")
        for pack in report.packs {
            var tags = pack.superseded ? "superseded" : pack.tags.joined(separator: ",")
            if pack.superseded, let version = pack.newestVersion { tags += " (version \(version)\(pack.kept == true ? ", kept" : ""))" }
            if !pack.variant.isEmpty { tags += " [\(pack.variant)\(pack.notChosen ? ", not chosen" : "")]" }
            let staged = pack.stagingBytes > 0 ? " (\(byteText(pack.stagingBytes)) staged)" : ""
            let shared = pack.sharedBytes > 0 || pack.pinnedBytes > 0
                ? " (own \(byteText(pack.ownBytes)), shared \(byteText(pack.sharedBytes))\(pack.pinnedBytes > 0 ? ", linked from outside \(byteText(pack.pinnedBytes))" : ""))" : ""
            print("  \(pack.id.prefix(12))  \(pack.state.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)) \(byteText(pack.installedBytes))\(shared)\(staged)  \(tags)")
        }
    }
}
