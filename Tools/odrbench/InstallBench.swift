import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrbench install`: `odr fetch` of one tag against `curl -o` (plus `unzip -q`) of the same packs,
/// from the same `odrpack serve` child process, in the same run.
///
/// 1. Stored-only packs: `odr fetch` over `curl -o` + `sync` (target at most 1.15x), and
///    `odr fetch --no-sync` over `curl -o` (at most 1.10x).
/// 2. Mixed packs (half compressible text, deflated; half incompressible media, stored): the same
///    two ratios with `unzip -q` added to the baseline (target at most 0.5x each).
/// 3. Peak bytes in `STORE/staging/<id>.d` over the pack's installed bytes (at most 1.05x).
/// 4. Peak memory of `odr fetch` (under 64 MiB).
struct InstallBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "odr fetch against curl -o (+ unzip -q) of the same packs over loopback; staging disk use and peak memory.",
        discussion: """
            Builds two catalogs in a temporary directory (mixed: half compressible text, deflated, and \
            half incompressible media, stored; stored-only: all media), --mib each in packs of at most \
            --pack-mib, serves the folder holding both with `odrpack serve` as a child process on \
            127.0.0.1, and times the `odr` built next to this executable against curl and unzip \
            fetching the same packs.

            odr runs with its default durability (every installed file flushed with fsync), compared \
            to the baseline followed by `sync` of the files it wrote, and with --no-sync, compared to \
            the baseline alone. A `sync` of everything precedes each timed step, so that one step's \
            writeback does not slow the next. Each time is the best of --runs.

            One more fetch per catalog runs while a thread of odrbench sums the file sizes under \
            STORE/staging every 20 ms: each pack's peak there (packs install two at a time, each in \
            staging/<id>.d) is compared to its installed size.

            Targets: stored: odr fetch <= 1.15x curl -o + sync, --no-sync <= 1.10x curl -o; mixed: \
            <= 0.5x curl -o + unzip -q (+ sync); staging peak <= 1.05x the pack; peak memory of odr \
            fetch (measured by /usr/bin/time) < 64 MiB.
            """
    )

    @Option(help: "Total size of each tag's packs in MiB.")
    var mib = 512

    @Option(name: .customLong("pack-mib"), help: "Pack size limit in MiB.")
    var packMiB = 64

    @Option(help: "Runs of each timed measurement; the best is reported.")
    var runs = 2

    @Option(help: ArgumentHelp("2: instead of the suites above, fetch the stored-only catalog with a mirror (each origin its own odrpack serve): both healthy against one origin, the primary killed at 40% (bytes both sent at most the tag's + 8 MiB), and a hung primary (first fetch <= 10 s, next run <= 3 s; hung at 40%: done <= 10 s after).", valueName: "n"))
    var origins = 1

    func validate() throws {
        guard mib > 0, packMiB > 0, runs > 0 else { throw ValidationError("--mib, --pack-mib and --runs must be positive.") }
        guard origins == 1 || origins == 2 else { throw ValidationError("--origins is 1 (the install suites) or 2 (failover between two origins).") }
        for tool in ["/usr/bin/curl", "/usr/bin/unzip", "/usr/bin/sync"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw ValidationError("\(tool) is needed as the baseline.")
        }
    }

    func run() async throws {
        let odr = try ChildProcess.sibling("odr"), odrpack = try ChildProcess.sibling("odrpack")
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-install-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let served = workspace.appending(path: "served")
        if origins == 2 {
            print("Generating and building a \(mib) MiB stored-only catalog under \(workspace.path) ...")
            try await buildCatalog(at: served.appending(path: "stored"), workspace: workspace.appending(path: "stored-assets"), compressible: false)
            try FileManager.default.createDirectory(at: workspace.appending(path: "run-origins"), withIntermediateDirectories: true)
            try OriginsRun(catalog: served.appending(path: "stored"), odr: odr, odrpack: odrpack,
                           scratch: workspace.appending(path: "run-origins")).report(runs: runs)
            return
        }
        print("Generating and building \(mib) MiB mixed and \(mib) MiB stored-only catalogs under \(workspace.path) ...")
        try await buildCatalog(at: served.appending(path: "mixed"), workspace: workspace.appending(path: "mixed-assets"), compressible: true)
        try await buildCatalog(at: served.appending(path: "stored"), workspace: workspace.appending(path: "stored-assets"), compressible: false)

        let server = try CatalogServerProcess.start(serving: served, executable: odrpack)
        defer { server.stop() }
        print("Serving \(served.path) with odrpack serve at \(server.baseURL.absoluteString)")
        for (name, unzips) in [("stored", false), ("mixed", true)] {
            let bench = CatalogRun(name: name, unzips: unzips, catalog: served.appending(path: name), server: server, odr: odr,
                                   scratch: workspace.appending(path: "run-\(name)"))
            try bench.report(runs: runs)
        }
    }

    /// Writes `mib` MiB of 4 MiB files (half text, half random when `compressible`) and builds them as tag `bench`.
    private func buildCatalog(at output: URL, workspace assets: URL, compressible: Bool) async throws {
        try FileManager.default.createDirectory(at: assets.appending(path: "files"), withIntermediateDirectories: true)
        let rules = #"{"catalogID":"bench","tags":{"bench":{"include":["files"]}},"limits":{"packSize":"\#(packMiB) MiB"}}"#
        try Data(rules.utf8).write(to: assets.appending(path: "odr.json"))
        let fileBytes = 4 << 20
        var generator = SplitMix64(seed: compressible ? 1 : 2)
        var bytes = [UInt8](repeating: 0, count: fileBytes)
        for index in 0..<max(1, (mib << 20) / fileBytes) {
            let text = compressible && index % 2 == 0
            if text {
                let words = ["level", "tile", "enemy", "spawn", "door", "key", "{", "}", ":", "\n", "0", "17", "255"]
                var offset = 0
                while offset < fileBytes {
                    for byte in words[Int(generator.next() % UInt64(words.count))].utf8 + [0x20] where offset < fileBytes {
                        bytes[offset] = byte
                        offset += 1
                    }
                }
            } else {
                generator.fill(&bytes)
            }
            try Data(bytes).write(to: assets.appending(path: "files/\(text ? "text" : "media")-\(index).bin"))
        }
        var options = BuildOptions(assets: assets, output: output)
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
        try? FileManager.default.removeItem(at: assets)
    }
}

/// The measurements of one served catalog: the baselines, `odr fetch` both ways, staging and memory.
private struct CatalogRun {
    var name: String
    /// Whether the baseline unzips what curl downloaded (the catalog deflates some entries).
    var unzips: Bool
    var catalog: URL
    var server: CatalogServerProcess
    var odr: String
    var scratch: URL

    /// The best time of each step over the runs.
    private struct Times {
        var baseline = Double.infinity
        var baselineSynced = Double.infinity
        var odrSynced = Double.infinity
        var odrUnsynced = Double.infinity
    }

    func report(runs: Int) throws {
        let packs = try FileManager.default.contentsOfDirectory(atPath: catalog.appending(path: "packs").path).filter { $0.hasSuffix(".zip") }.sorted()
        let archiveBytes = packs.reduce(Int64(0)) { $0 + DiskUsage.bytes(under: catalog.appending(path: "packs/\($1)")) }
        var times = Times()
        var peakMemory: Int64 = 0
        for run in 0..<runs {
            let folder = scratch.appending(path: "\(run)")
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: folder) }
            let (plain, synced) = try baseline(packs: packs, in: folder)
            times.baseline = min(times.baseline, plain)
            times.baselineSynced = min(times.baselineSynced, synced)
            for sync in [true, false] {
                let store = folder.appending(path: "store-\(sync)")
                try ChildProcess.syncFileSystems()
                let fetch = try fetch(into: store, sync: sync)
                if sync { times.odrSynced = min(times.odrSynced, fetch.seconds) } else { times.odrUnsynced = min(times.odrUnsynced, fetch.seconds) }
                peakMemory = max(peakMemory, fetch.peakMemory)
                try? FileManager.default.removeItem(at: store)
            }
        }
        let staging = try stagingPeak()
        peakMemory = max(peakMemory, staging.peakMemory)

        let label = unzips ? "curl -o + unzip -q" : "curl -o"
        let targets = unzips ? (synced: 0.5, unsynced: 0.5) : (synced: 1.15, unsynced: 1.10)
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, width: 30)) }
        print("\n\(name): \(packs.count) packs, \(BenchFormat.mib(archiveBytes)) downloaded, \(BenchFormat.mib(staging.installedBytes)) installed")
        row(label, "\(BenchFormat.seconds(times.baseline))  (\(BenchFormat.rate(archiveBytes, times.baseline)))")
        row("\(label) + sync", BenchFormat.seconds(times.baselineSynced))
        row("odr fetch", "\(BenchFormat.seconds(times.odrSynced))  \(BenchFormat.ratio(times.odrSynced / times.baselineSynced)) of \(label) + sync"
            + String(format: "  (target <= %.2fx)", targets.synced))
        row("odr fetch --no-sync", "\(BenchFormat.seconds(times.odrUnsynced))  \(BenchFormat.ratio(times.odrUnsynced / times.baseline)) of \(label)"
            + String(format: "  (target <= %.2fx)", targets.unsynced))
        row("peak staging per pack", "\(BenchFormat.mib(staging.worst.peak)) for a pack of \(BenchFormat.mib(staging.worst.installed)) installed:"
            + " \(BenchFormat.ratio(staging.worst.ratio)) (target <= 1.05x); all of staging/ at once: \(BenchFormat.mib(staging.total))"
            + " (\(staging.samples) samples)")
        row("odr fetch peak memory", "\(BenchFormat.mib(peakMemory)) (target < 64 MiB)")
    }

    /// `curl -o` of every pack (then `unzip -q` of each), and the same followed by `sync` of the
    /// files it wrote: (without sync, with sync) in seconds.
    private func baseline(packs: [String], in folder: URL) throws -> (Double, Double) {
        var curl = ["/usr/bin/curl", "-s", "-f"]
        var archives: [String] = []
        for pack in packs {
            archives.append(folder.appending(path: pack).path)
            curl += [server.url(for: "\(name)/packs/\(pack)").absoluteString, "-o", archives[archives.count - 1]]
        }
        try ChildProcess.syncFileSystems()
        var seconds = try ChildProcess.measure(curl).succeeded().seconds
        var written = archives
        if unzips {
            written = []
            for (index, archive) in archives.enumerated() {
                let destination = folder.appending(path: "unzipped-\(index)")
                seconds += try ChildProcess.measure(["/usr/bin/unzip", "-q", "-o", archive, "-d", destination.path]).succeeded().seconds
                written += try regularFiles(under: destination)
            }
        }
        let sync = try ChildProcess.measure(["/usr/bin/sync"] + written).succeeded().seconds
        return (seconds, seconds + sync)
    }

    private func fetch(into store: URL, sync: Bool) throws -> ChildMeasurement {
        try ChildProcess.measureAlone(
            [odr, "fetch", "--quiet", "--catalog", server.url(for: "\(name)/").absoluteString, "--store", store.path]
                + (sync ? [] : ["--no-sync"]) + ["bench"]).succeeded()
    }

    /// The bytes `STORE/staging` held during one fetch.
    private struct StagingPeak {
        /// The pack whose peak in staging was the largest against its installed size.
        var worst = (peak: Int64(0), installed: Int64(0), ratio: 0.0)
        /// The largest sum over every pack at once.
        var total: Int64 = 0
        var samples = 0
        /// The installed size of every pack.
        var installedBytes: Int64 = 0
        var peakMemory: Int64 = 0
    }

    /// One more fetch, untimed, while a thread samples `STORE/staging`; each pack's peak there
    /// (its `<id>.d` folder and `<id>.journal`) against its installed size.
    private func stagingPeak() throws -> StagingPeak {
        let store = scratch.appending(path: "staging-store")
        defer { try? FileManager.default.removeItem(at: store) }
        try ChildProcess.syncFileSystems()
        let sampler = DiskUsageSampler(folder: store.appending(path: "staging"))
        let fetch = Result { try self.fetch(into: store, sync: true) }
        let peaks = sampler.stop()
        var result = StagingPeak(total: peaks.total, samples: peaks.samples, peakMemory: try fetch.get().peakMemory)
        var byPack: [String: Int64] = [:]
        for (child, bytes) in peaks.byChild {
            byPack[String(child.prefix { $0 != "." }), default: 0] += bytes
        }
        for id in try FileManager.default.contentsOfDirectory(atPath: store.appending(path: "packs").path) {
            let installed = DiskUsage.bytes(under: store.appending(path: "packs/\(id)"))
            result.installedBytes += installed
            let ratio = Double(byPack[id] ?? 0) / Double(max(installed, 1))
            if ratio >= result.worst.ratio { result.worst = (byPack[id] ?? 0, installed, ratio) }
        }
        return result
    }

    private func regularFiles(under folder: URL) throws -> [String] {
        guard let enumerator = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey]) else { return [] }
        return try enumerator.compactMap { item in
            guard let url = item as? URL, try url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile == true else { return nil }
            return url.path
        }
    }
}
