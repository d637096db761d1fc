import ArgumentParser
import Foundation
import Logging
import ODRBuilder
import ODRServe

/// `odrbench install`: `odr fetch` of one tag against `curl -o` plus `unzip -q` of the same packs,
/// from the same loopback server, in the same run.
///
/// 1. Mixed packs (half compressible text, deflated; half incompressible media, stored): `odr fetch`
///    over `curl -o` + `unzip -q` (target at most 1.25x).
/// 2. Stored-only packs: `odr fetch` over `curl -o` alone (target at most 1.15x).
/// 3. Peak memory of `odr fetch` (target under 64 MiB).
struct InstallBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "install",
        abstract: "odr fetch against curl -o + unzip -q of the same packs over loopback, and its peak memory.",
        discussion: """
            Builds two catalogs in a temporary directory (mixed and stored-only, --mib each, packs of
            --pack-mib), serves them in-process on 127.0.0.1, and times the built `odr` next to this
            executable against curl and unzip. Each figure is the best of --runs. odr runs twice: with
            its default durability (every installed file flushed with fsync) and with --no-sync, which
            matches what curl and unzip do.
            """
    )

    @Option(help: "Total size of each tag's packs in MiB.")
    var mib = 512

    @Option(name: .customLong("pack-mib"), help: "Pack size limit in MiB.")
    var packMiB = 64

    @Option(help: "Runs of each measurement; the best is reported.")
    var runs = 2

    func validate() throws {
        guard mib > 0, packMiB > 0, runs > 0 else { throw ValidationError("Sizes and runs must be positive.") }
        for tool in ["/usr/bin/curl", "/usr/bin/unzip"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw ValidationError("\(tool) is needed as the baseline.")
        }
    }

    func run() async throws {
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-install-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let odr = URL(filePath: ChildProcess.selfExecutable).deletingLastPathComponent().appending(path: "odr").path
        guard FileManager.default.isExecutableFile(atPath: odr) else {
            throw ValidationFailure("odr is not built next to odrbench: run swift build -c release --product odr")
        }
        print("Generating and building \(mib) MiB mixed and \(mib) MiB stored-only catalogs under \(workspace.path) ...")
        let served = workspace.appending(path: "served")
        try await buildCatalog(at: served.appending(path: "mixed"), workspace: workspace.appending(path: "mixed-assets"), compressible: true)
        try await buildCatalog(at: served.appending(path: "stored"), workspace: workspace.appending(path: "stored-assets"), compressible: false)

        let silent = Logger(label: "odrbench.serve") { _ in SwiftLogNoOpLogHandler() }
        let server = try await CatalogServer.start(root: served, logger: silent)
        defer { Task { await server.stop() } }
        for (name, withUnzip) in [("mixed", true), ("stored", false)] {
            let catalog = served.appending(path: name)
            let packs = try FileManager.default.contentsOfDirectory(atPath: catalog.appending(path: "packs").path).sorted()
            let urls = packs.map { server.url(for: "\(name)/packs/\($0)").absoluteString }
            var baseline = Double.infinity, synced = Double.infinity, unsynced = Double.infinity
            var peak: Int64 = 0
            for run in 0..<runs {
                let scratch = workspace.appending(path: "run-\(name)-\(run)")
                try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
                defer { try? FileManager.default.removeItem(at: scratch) }
                var curlArguments = ["/usr/bin/curl", "-s", "-f"]
                for (i, url) in urls.enumerated() { curlArguments += [url, "-o", scratch.appending(path: "p\(i).zip").path] }
                var seconds = try checked(ChildProcess.measure(curlArguments)).seconds
                if withUnzip {
                    for i in urls.indices {
                        seconds += try checked(ChildProcess.measure(
                            ["/usr/bin/unzip", "-q", "-o", scratch.appending(path: "p\(i).zip").path, "-d", scratch.appending(path: "u\(i)").path])).seconds
                    }
                }
                baseline = min(baseline, seconds)
                for sync in [true, false] {
                    let store = scratch.appending(path: "store-\(sync)")
                    let fetch = try checked(ChildProcess.measureAlone(
                        [odr, "fetch", "--quiet", "--catalog", server.url(for: "\(name)/").absoluteString, "--store", store.path, "bench"]
                            + (sync ? [] : ["--no-sync"])))
                    if sync { synced = min(synced, fetch.seconds) } else { unsynced = min(unsynced, fetch.seconds) }
                    peak = max(peak, fetch.peakMemory)
                    try? FileManager.default.removeItem(at: store)
                }
            }
            let bytes = try packs.reduce(Int64(0)) { total, pack in
                let size = try FileManager.default.attributesOfItem(atPath: catalog.appending(path: "packs/\(pack)").path)[.size] as? NSNumber
                return total + (size?.int64Value ?? 0)
            }
            let label = withUnzip ? "curl -o + unzip -q" : "curl -o"
            let target = withUnzip ? 1.25 : 1.15
            print("\n\(name): \(packs.count) packs, \(BenchFormat.mib(bytes)) downloaded")
            print(String(format: "  %@: %.2f s (%@)", label, baseline, BenchFormat.rate(bytes, baseline)))
            print(String(format: "  odr fetch (fsync):    %.2f s  ratio %@", synced, BenchFormat.ratio(synced / baseline)))
            print(String(format: "  odr fetch (--no-sync): %.2f s  ratio %@  (target <= %.2fx)", unsynced,
                         BenchFormat.ratio(unsynced / baseline), target))
            print("  odr fetch peak memory: \(BenchFormat.mib(peak)) (target < 64 MiB)")
        }
    }

    private func checked(_ measurement: ChildMeasurement) throws -> ChildMeasurement {
        guard measurement.status == 0 else { throw ValidationFailure("a child process failed (\(measurement.status)): \(measurement.output)") }
        return measurement
    }

    /// Writes `mib` MiB of 4 MiB files (half text, half random when `compressible`) and builds them as tag `bench`.
    private func buildCatalog(at output: URL, workspace assets: URL, compressible: Bool) async throws {
        try FileManager.default.createDirectory(at: assets.appending(path: "files"), withIntermediateDirectories: true)
        let rules = #"{"catalogID":"bench","tags":{"bench":{"include":["files"]}},"limits":{"packSize":"\#(packMiB) MiB"}}"#
        try Data(rules.utf8).write(to: assets.appending(path: "odr.json"))
        let fileBytes = 4 << 20
        var generator = SystemRandomNumberGenerator()
        for index in 0..<max(1, (mib << 20) / fileBytes) {
            let text = compressible && index % 2 == 0
            var bytes = [UInt8](repeating: 0, count: fileBytes)
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
                bytes.withUnsafeMutableBytes { raw in
                    let words = raw.bindMemory(to: UInt64.self)
                    for i in words.indices { words[i] = generator.next() }
                }
            }
            try Data(bytes).write(to: assets.appending(path: "files/\(text ? "text" : "media")-\(index).bin"))
        }
        var options = BuildOptions(assets: assets, output: output)
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
        try? FileManager.default.removeItem(at: assets)
    }
}
