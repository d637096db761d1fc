#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrbench peers`: `odr fetch --peer` from another store's `odr share`, against `odr fetch` from
/// the CDN alone (`odrpack serve`), every party a child process of its own on 127.0.0.1.
///
/// 1. A second store installs the tag with one peer that holds it: the CDN's pack bytes (from its
///    request log) at most 1% of the tag's pack bytes, and the fetch at least as fast as from the
///    CDN alone (best of --runs each, alternating which goes first; the medians are printed too).
/// 2. The peer (rate-limited to 16 MiB/s so the transfer lasts) is killed (SIGKILL) once the store
///    holds a quarter of the tag's bytes: the fetch completes from the CDN, and the peer's bytes
///    (odr fetch --json's peerBytes) plus the CDN's, less the tag's, are at most 1 MiB.
/// 3. A peer that accepts connections and says nothing (an `odr share` of the tag stopped with
///    SIGSTOP, as a suspended or hung process: its kernel takes the connection and the request,
///    nobody answers): the fetch takes at most twice as long as from the CDN alone (best of --runs
///    each, alternating).
/// 4. A game's shape with the share's default limits (32 MiB/s, 4 transfers, 2 per address): the
///    same bytes as 16 tags of 2 MiB each (a 1 MiB, a 512 KiB and four 128 KiB files), 16 packs
///    installed at once by one fetch. The CDN sends at most 1% of their pack bytes: a pack whose
///    first peer byte waits behind another pack's body at the share's rate must not be handed to
///    the CDN by the installer's 25 ms hedge.
struct PeersBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "peers",
        abstract: "odr fetch --peer from another store's odr share against odr fetch from the CDN alone, over loopback; a peer killed mid-transfer; a peer that says nothing.",
        discussion: """
            Builds a catalog of --mib MiB of incompressible 4 MiB files (tag bench, stored \
            entries), serves it with odrpack serve, installs it into a first store, shares that \
            store with odr share (no rate limit), and times odr fetch into fresh stores from the \
            CDN alone and with --peer. Then a peer limited to 16 MiB/s is killed once the second \
            store holds a quarter of the tag, and the bytes fetched twice are counted. Last, \
            odr fetch --peer with a peer that accepts connections and never answers (an odr share \
            stopped with SIGSTOP), against the CDN alone. Then the same bytes as 16 small tags (16 \
            packs) installed at once from a peer with odr share's default limits (32 MiB/s).

            Targets: with a peer, the CDN sends <= 1% of the tag's pack bytes and the fetch is no \
            slower than from the CDN alone; a killed peer costs <= 1 MiB fetched twice; a silent \
            peer makes the fetch at most 2x as long as from the CDN alone; with 16 packs and the \
            share's default limits, the CDN sends <= 1% of their pack bytes.
            """
    )

    @Option(help: "Size of the tag in MiB.")
    var mib = 32

    @Option(help: "Runs of each timed fetch; the best is reported.")
    var runs = 3

    func validate() throws {
        guard mib > 0, runs > 0 else { throw ValidationError("--mib and --runs must be positive.") }
    }

    func run() async throws {
        let odr = try ChildProcess.sibling("odr"), odrpack = try ChildProcess.sibling("odrpack")
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-peers-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let catalog = workspace.appending(path: "catalog")
        print("Generating and building a \(mib) MiB stored-only catalog under \(workspace.path) ...")
        try await buildCatalog(at: catalog, assets: workspace.appending(path: "assets"), tags: 1)
        let packs = try FileManager.default.contentsOfDirectory(atPath: catalog.appending(path: "packs").path).filter { $0.hasSuffix(".zip") }
        let tagBytes = packs.reduce(Int64(0)) { $0 + DiskUsage.bytes(under: catalog.appending(path: "packs/\($1)")) }
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, width: 34)) }

        let cdn = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
        defer { cdn.stop() }
        let holder = workspace.appending(path: "holder")
        _ = try ChildProcess.measure(fetch(cdn, store: holder, peer: nil)).succeeded()
        print("\npeers: \(packs.count) packs, \(BenchFormat.mib(tagBytes)) tag bytes; CDN odrpack serve, peer odr share, each its own process")

        // 1. One peer that holds the tag.
        let share = try ShareProcess.start(odr: odr, store: holder, rate: "0", output: workspace.appending(path: "share.out").path)
        var aloneTimes: [Double] = [], peerTimes: [Double] = []
        var cdnBytesWithPeer: Int64 = 0, peerBytes: Int64 = 0
        for run in 0..<runs {
            for usesPeer in run % 2 == 0 ? [false, true] : [true, false] {
                let store = workspace.appending(path: "run-\(run)-\(usesPeer)")
                let mark = cdn.logMark
                let json = workspace.appending(path: "run-\(run)-\(usesPeer).json").path
                let seconds = try timedFetch(cdn, store: store, peer: usesPeer ? share.baseURL : nil, json: json)
                if usesPeer {
                    peerTimes.append(seconds)
                    cdnBytesWithPeer = max(cdnBytesWithPeer, cdn.requests(since: mark).filter { $0.target.contains("/packs/") }.reduce(0) { $0 + $1.bytes })
                    peerBytes = Self.peerBytes(json)
                } else {
                    aloneTimes.append(seconds)
                }
                try? FileManager.default.removeItem(at: store)
            }
        }
        share.kill()
        aloneTimes.sort()
        peerTimes.sort()
        let alone = aloneTimes[0], withPeer = peerTimes[0]
        let aloneMedian = aloneTimes.percentileOfSorted(0.5), peerMedian = peerTimes.percentileOfSorted(0.5)
        let share1 = Double(cdnBytesWithPeer) / Double(max(1, tagBytes))
        row("odr fetch, CDN alone", "\(BenchFormat.seconds(alone))  (\(BenchFormat.rate(tagBytes, alone)))")
        row("odr fetch --peer", "\(BenchFormat.seconds(withPeer))  \(BenchFormat.ratio(withPeer / alone)) of the CDN alone (target <= 1.00x): \(withPeer <= alone ? "met" : "MISSED")")
        row("medians of \(runs) (not the target)", "CDN alone \(BenchFormat.seconds(aloneMedian)), --peer \(BenchFormat.seconds(peerMedian)): "
            + "\(BenchFormat.ratio(peerMedian / aloneMedian))")
        row("bytes from the peer", "\(peerBytes) (\(BenchFormat.mib(peerBytes)))")
        row("CDN pack bytes with a peer", "\(cdnBytesWithPeer) = \(String(format: "%.3f", share1 * 100))% of the tag (target <= 1%, worst of \(runs)): \(share1 <= 0.01 ? "met" : "MISSED")")

        // 2. The peer dies mid-transfer.
        var worst: (twice: Int64, peer: Int64, cdn: Int64, seconds: Double)?
        for run in 0..<runs {
            let dying = try ShareProcess.start(odr: odr, store: holder, rate: "16MiB", output: workspace.appending(path: "dying-\(run).out").path)
            let store = workspace.appending(path: "dying-\(run)")
            let json = workspace.appending(path: "dying-\(run).json").path
            let mark = cdn.logMark
            let started = ContinuousClock.now
            let pid = try ChildProcess.spawn(fetch(cdn, store: store, peer: dying.baseURL, json: true), stdout: json, stderr: json)
            while DiskUsage.bytes(under: store) < tagBytes / 4 {
                guard Glibc.kill(pid, 0) == 0 else { break }
                usleep(2_000)
            }
            dying.kill()
            let (status, _) = try ChildProcess.wait(pid, name: "odr fetch")
            let seconds = (ContinuousClock.now - started).seconds
            guard status == 0 else { throw ValidationFailure("odr fetch failed after the peer died (status \(status)):\n\((try? String(contentsOfFile: json, encoding: .utf8)) ?? "")") }
            let fromPeer = Self.peerBytes(json)
            let fromCDN = cdn.requests(since: mark).filter { $0.target.contains("/packs/") }.reduce(Int64(0)) { $0 + $1.bytes }
            let twice = fromPeer + fromCDN - tagBytes
            if worst.map({ twice > $0.twice }) ?? true { worst = (twice, fromPeer, fromCDN, seconds) }
            try? FileManager.default.removeItem(at: store)
        }
        if let worst {
            row("peer killed at 25%", "peer \(worst.peer) + CDN \(worst.cdn) bytes for \(tagBytes) tag bytes (worst of \(runs)), \(BenchFormat.seconds(worst.seconds))")
            row("fetched twice", "\(max(0, worst.twice)) bytes (target <= 1 MiB): \(worst.twice <= 1 << 20 ? "met" : "MISSED")")
        }

        // 3. A peer that says nothing: a share of the tag, stopped.
        let silent = try ShareProcess.start(odr: odr, store: holder, rate: "0", output: workspace.appending(path: "silent.out").path)
        defer { silent.kill() }
        try silent.suspend()
        var aloneAgain = Double.infinity, withSilent = Double.infinity
        for run in 0..<runs {
            for usesPeer in run % 2 == 0 ? [false, true] : [true, false] {
                let json = workspace.appending(path: "silent-\(run)-\(usesPeer).json").path
                let store = workspace.appending(path: "silent-\(run)-\(usesPeer)")
                let seconds = try timedFetch(cdn, store: store, peer: usesPeer ? silent.baseURL : nil, json: json)
                if usesPeer {
                    guard Self.peerBytes(json) == 0 else { throw ValidationFailure("odr fetch got bytes from a peer that never answers") }
                    withSilent = min(withSilent, seconds)
                } else {
                    aloneAgain = min(aloneAgain, seconds)
                }
                try? FileManager.default.removeItem(at: store)
            }
        }
        let silentRatio = withSilent / aloneAgain
        row("odr fetch, CDN alone (again)", "\(BenchFormat.seconds(aloneAgain))")
        row("odr fetch --peer <silent>", "\(BenchFormat.seconds(withSilent))  \(BenchFormat.ratio(silentRatio)) of the CDN alone (target <= 2.00x): \(silentRatio <= 2 ? "met" : "MISSED")")
        silent.kill()
        cdn.stop()

        // 4. Many packs at once from a share with its default limits.
        try await manyPacks(odr: odr, odrpack: odrpack, workspace: workspace, row: row)
    }

    /// Section 4: the bytes of the tag as 16 small tags (16 packs), installed by one fetch from a
    /// peer that shares with `odr share`'s default limits; the CDN's share of their pack bytes.
    private func manyPacks(odr: String, odrpack: String, workspace: URL, row: (String, String) -> Void) async throws {
        let tags = max(1, mib / 2)
        let catalog = workspace.appending(path: "catalog-\(tags)")
        try await buildCatalog(at: catalog, assets: workspace.appending(path: "assets-\(tags)"), tags: tags)
        let packs = try FileManager.default.contentsOfDirectory(atPath: catalog.appending(path: "packs").path).filter { $0.hasSuffix(".zip") }
        let packBytes = packs.reduce(Int64(0)) { $0 + DiskUsage.bytes(under: catalog.appending(path: "packs/\($1)")) }
        let names = (0..<tags).map { "t\($0)" }
        let cdn = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
        defer { cdn.stop() }
        let holder = workspace.appending(path: "holder-\(tags)")
        _ = try ChildProcess.measure(fetch(cdn, store: holder, peer: nil, tags: names)).succeeded()
        let share = try ShareProcess.start(odr: odr, store: holder, rate: nil, output: workspace.appending(path: "share-\(tags).out").path)
        defer { share.kill() }
        var worst: (cdn: Int64, peer: Int64, seconds: Double)?
        for run in 0..<runs {
            let store = workspace.appending(path: "many-\(run)")
            let json = workspace.appending(path: "many-\(run).json").path
            let mark = cdn.logMark
            let seconds = try timedFetch(cdn, store: store, peer: share.baseURL, json: json, tags: names)
            let fromCDN = cdn.requests(since: mark).filter { $0.target.contains("/packs/") }.reduce(Int64(0)) { $0 + $1.bytes }
            if worst.map({ fromCDN > $0.cdn }) ?? true { worst = (fromCDN, Self.peerBytes(json), seconds) }
            try? FileManager.default.removeItem(at: store)
        }
        guard let worst else { return }
        let fraction = Double(worst.cdn) / Double(max(1, packBytes))
        print("\n\(tags) tags installed at once: \(packs.count) packs, \(BenchFormat.mib(packBytes)); odr share with its default limits (32 MiB/s, 4 transfers, 2 per address)")
        row("odr fetch --peer, \(tags) tags", "\(BenchFormat.seconds(worst.seconds)), \(worst.peer) bytes from the peer (the worst run)")
        row("CDN pack bytes with a peer", "\(worst.cdn) = \(String(format: "%.3f", fraction * 100))% of the packs (target <= 1%, worst of \(runs)): \(fraction <= 0.01 ? "met" : "MISSED")")
    }

    /// Seconds `odr fetch` takes to install the tag into `store` (from the CDN, and `peer` first
    /// when given), its `--json` output (or error) in `json`; throws if it fails.
    private func timedFetch(_ cdn: CatalogServerProcess, store: URL, peer: URL?, json: String, tags: [String] = ["bench"]) throws -> Double {
        try ChildProcess.syncFileSystems()
        let started = ContinuousClock.now
        let pid = try ChildProcess.spawn(fetch(cdn, store: store, peer: peer, json: true, tags: tags), stdout: json, stderr: json)
        let (status, _) = try ChildProcess.wait(pid, name: "odr fetch")
        let seconds = (ContinuousClock.now - started).seconds
        guard status == 0 else { throw ValidationFailure("odr fetch failed (status \(status)):\n\((try? String(contentsOfFile: json, encoding: .utf8)) ?? "")") }
        return seconds
    }

    /// `peerBytes` of an `odr fetch --json` output file.
    static func peerBytes(_ path: String) -> Int64 {
        guard let data = FileManager.default.contents(atPath: path),
              let object = try? JSONSerialization.jsonObject(with: data) as? [String: Any] else { return 0 }
        return (object["peerBytes"] as? NSNumber)?.int64Value ?? 0
    }

    private func fetch(_ cdn: CatalogServerProcess, store: URL, peer: URL?, json: Bool = false, tags: [String] = ["bench"]) -> [String] {
        (try? [ChildProcess.sibling("odr")]).map { $0 + ["fetch", json ? "--json" : "--quiet", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", store.path]
            + (peer.map { ["--peer", $0.absoluteString] } ?? []) + tags } ?? []
    }

    /// `mib` MiB of incompressible files: with one tag, 4 MiB files as tag `bench`; with more, tags
    /// `t0`, `t1`, ... of 2 MiB each (a 1 MiB file, a 512 KiB one and four of 128 KiB), a pack each.
    private func buildCatalog(at output: URL, assets: URL, tags: Int) async throws {
        try FileManager.default.createDirectory(at: assets.appending(path: "files"), withIntermediateDirectories: true)
        var generator = SplitMix64(seed: 43)
        var files: [(name: String, bytes: Int)] = []
        let rules: String
        if tags == 1 {
            rules = #"{"catalogID":"bench","tags":{"bench":{"include":["files"]}}}"#
            files = (0..<max(1, mib / 4)).map { ("files/media-\($0).bin", 4 << 20) }
        } else {
            let entries = (0..<tags).map { #""t\#($0)":{"include":["files/t\#($0)"]}"# }
            rules = #"{"catalogID":"bench","tags":{"# + entries.joined(separator: ",") + "}}"
            for tag in 0..<tags {
                files += [("files/t\(tag)/a.bin", 1 << 20), ("files/t\(tag)/b.bin", 512 << 10)]
                files += (0..<4).map { ("files/t\(tag)/c\($0).bin", 128 << 10) }
            }
        }
        try Data(rules.utf8).write(to: assets.appending(path: "odr.json"))
        for file in files {
            var bytes = [UInt8](repeating: 0, count: file.bytes)
            generator.fill(&bytes)
            let url = assets.appending(path: file.name)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(bytes).write(to: url)
        }
        var options = BuildOptions(assets: assets, output: output)
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
        try? FileManager.default.removeItem(at: assets)
    }
}

/// `odr share` as a child process, on a free port read from what it prints.
private struct ShareProcess {
    let pid: pid_t
    let baseURL: URL

    /// `rate` `nil`: the share's default limits; otherwise that rate and 16 transfers, all of them
    /// for one address.
    static func start(odr: String, store: URL, rate: String?, output: String) throws -> ShareProcess {
        let limits = rate.map { ["--rate", $0, "--max-transfers", "16", "--max-per-address", "16"] } ?? []
        let pid = try ChildProcess.spawn([odr, "share", "--store", store.path, "--port", "0"] + limits, stdout: output, stderr: output)
        let deadline = ContinuousClock.now + .seconds(30)
        while ContinuousClock.now < deadline {
            let text = (try? String(contentsOfFile: output, encoding: .utf8)) ?? ""
            if let start = text.range(of: " at http://"), let end = text[start.upperBound...].firstIndex(of: " "),
               let url = URL(string: "http://" + text[start.upperBound..<end]) {
                return ShareProcess(pid: pid, baseURL: url)
            }
            usleep(20_000)
        }
        Glibc.kill(pid, SIGKILL)
        throw ValidationFailure("odr share did not print its URL within 30 s")
    }

    /// Stops the process (SIGSTOP) and returns once it is stopped: its listening socket still takes
    /// connections and requests, and nothing answers them.
    func suspend() throws {
        Glibc.kill(pid, SIGSTOP)
        var status: Int32 = 0
        guard waitpid(pid, &status, WUNTRACED) == pid, status & 0xff == 0x7f else {
            throw ValidationFailure("odr share (pid \(pid)) did not stop on SIGSTOP (wait status \(status))")
        }
    }

    /// Ends the process, stopped or not.
    func kill() {
        Glibc.kill(pid, SIGKILL)
        var status: Int32 = 0
        waitpid(pid, &status, 0)
    }
}
