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

            It installs as a game's ResourceManager does: before each download it purges the least \
            recently used packs no request uses (in any process) until the download fits the \
            --cache-budget and leaves --watermark bytes free, and it says what it purged. It fails \
            with out-of-space only when the download itself does not fit the disk, and with \
            cache-budget-exceeded when it does not fit the budget.

            A fetch is urgent, so by default it downloads over a metered network too \
            (NetworkManager says which networks are metered; without it every network counts as \
            unmetered). --no-metered refuses metered networks: the fetch then fails with \
            network-policy and downloads nothing. --allow-metered allows them explicitly.

            Examples, with CDN=http://127.0.0.1:8080/:
              odr fetch --catalog $CDN --store ./store level1 tutorial
              odr fetch --catalog $CDN --store ./store --cache-budget 500000000 level7
              odr fetch --catalog $CDN --store ./store --watermark 0 --json level7
              odr fetch --catalog $CDN --store ./store --no-metered level8

            Variants: a catalog that declares variant axes (odrpack's "variants" rules, e.g. \
            resolution 1x/2x, texture astc/etc2) has one pack per tag set and variant. --variant \
            axis=value[,fallback...] says which values this device takes, best first; only those \
            packs download, plus the common ones, and odr path resolves a logical path to the \
            chosen file. An axis not named takes the catalog's declared order; an axis or value \
            the catalog does not declare is an invalid-argument error that lists the declared \
            ones. Fetching with another choice later downloads the new packs; the old ones become \
            the first to purge (variant-not-chosen).
              odr fetch --catalog $CDN --store ./store --variant resolution=2x,1x \\
                --variant texture=astc level1
              odr path --catalog $CDN --store ./store --variant resolution=2x,1x \\
                Textures/tree.png
            """)

    @OptionGroup var options: CatalogOptions
    @OptionGroup var install: InstallOptions
    @OptionGroup var space: SpaceOptions
    @OptionGroup var network: MeteredOptions

    @Flag(help: "Print nothing on success, even on a terminal.")
    var quiet = false

    @Flag(help: "Print what the install did as JSON (bytes downloaded, reused and resumed, requests, per pack, and the packs purged).")
    var json = false

    @Flag(name: .customLong("initial"),
          help: "Also install the catalog's initial-install tags (what a game's prepare() installs at first launch, such as base).")
    var initial = false

    @Argument(help: "The tags to install.")
    var tags: [String] = []

    func validate() throws {
        guard !tags.isEmpty || initial else { throw ValidationError("Name at least one tag to fetch, or pass --initial for the initial-install tags.") }
    }

    /// The tags to install: those named, then with `--initial` the catalog's initial-install tags.
    static func wanted(_ tags: [String], initial: Bool, in snapshot: CatalogSnapshot) -> [String] {
        guard initial else { return tags }
        var seen = Set(tags)
        return tags + Self.initialTags(snapshot).filter { seen.insert($0).inserted }
    }

    /// The catalog's initial-install tags (a split catalog's manifest lists only described ones).
    static func initialTags(_ snapshot: CatalogSnapshot) -> [String] {
        snapshot.split?.initialInstallTags ?? snapshot.manifest.initialInstallTags
    }

    /// A notice when the catalog's initial-install tags are not all installed after a fetch without
    /// `--initial`: a game installs them in prepare(), a fetch only what it is asked for.
    static func initialTagsNotice(_ manager: ResourceManager, snapshot: CatalogSnapshot, fetched: [String]) -> String? {
        let others = Self.initialTags(snapshot).filter { !fetched.contains($0) }
        guard !others.isEmpty else { return nil }
        let missing = others.filter { tag in (try? manager.downloadSize(forTags: [tag])).map { $0 > 0 } ?? true }
        guard !missing.isEmpty else { return nil }
        return "notice: the initial-install tag(s) \(missing.joined(separator: ", ")) are not installed; a game installs them at first launch. Add --initial to fetch them too."
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

    /// `--json`: the install summary's fields, plus `purged`.
    struct Report: Encodable {
        struct Purged: Encodable { var id: String; var bytes: Int64; var reason: String }
        var summary: InstallSummary
        var purged: [Purged]

        private enum CodingKeys: String, CodingKey { case purged }

        func encode(to encoder: any Encoder) throws {
            try summary.encode(to: encoder)
            var container = encoder.container(keyedBy: CodingKeys.self)
            try container.encode(purged, forKey: .purged)
        }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let manager = try options.openManager(installing: install, space: space, metered: network)
            let loaded = try await loadCheckedCatalog(manager, offline: options.offline)
            let bar = FetchProgressBar(enabled: !quiet && !json && isatty(STDERR_FILENO) == 1)
            // No progress callbacks when nothing is drawn: their bookkeeping is the fetch's cost.
            var draw: (@Sendable (InstallProgress) -> Void)?
            if bar.isEnabled { draw = { bar.update($0) } }
            let tags = Self.wanted(tags, initial: initial, in: loaded)
            let report = try await manager.fetch(tags: tags, progress: draw)
            bar.finish()
            // With the tags the fetch described (a split catalog describes a tag when it is first used).
            let snapshot = manager.currentSnapshot ?? loaded
            let summary = report.install
            if json {
                try printJSON(Report(summary: summary, purged: report.purged.map {
                    .init(id: $0.packID, bytes: $0.bytes, reason: $0.reason.rawValue)
                }))
            } else if !quiet {
                if !report.purged.isEmpty {
                    print("Purged \(report.purged.count) pack(s) no request uses to make room (\(byteText(report.purged.reduce(0) { $0 + $1.bytes }))):")
                    for pack in report.purged {
                        let tags = snapshot.lookup.pack(id: pack.packID)?.tags.joined(separator: ",") ?? "superseded"
                        print("  \(pack.packID.prefix(12))  \(byteText(pack.bytes))  \(pack.reason.rawValue)  \(tags)")
                    }
                }
                print("Installed \(summary.installed.count) pack(s) (\(byteText(summary.downloadedBytes)) downloaded"
                      + (summary.reusedFiles > 0 ? ", \(summary.reusedFiles) unchanged file(s) reused, \(byteText(summary.reusedBytes))" : "")
                      + (summary.resumedBytes > 0 ? ", \(byteText(summary.resumedBytes)) resumed" : "")
                      + (summary.peerBytes > 0 ? ", \(byteText(summary.peerBytes)) from peers ("
                         + summary.bytesByPeer.sorted { $0.key < $1.key }.map { "\($0.key) \(byteText($0.value))" }.joined(separator: ", ") + ")" : "")
                      + "); \(summary.alreadyInstalled.count) already installed. Tags: \(tags.joined(separator: ", ")).")
                for line in Self.updateLines(summary, tags: tags, snapshot: snapshot) { print(line) }
                if let notice = Self.initialTagsNotice(manager, snapshot: snapshot, fetched: tags) {
                    FileHandle.standardError.write(Data("\(notice)\n".utf8))
                }
            }
        }
    }
}
