#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// `odrbench install --origins 2`: `odr fetch` with a mirror, each origin an `odrpack serve` child
/// process of its own.
///
/// 1. Both healthy: `odr fetch --mirror` against `odr fetch` with one origin (target: no slower).
/// 2. The primary killed once the store holds 40% of the tag's bytes: the fetch finishes from the
///    mirror, and the bytes both origins sent together may exceed the tag's bytes by at most 8 MiB
///    (what was in flight when the primary died, sent again). The primary is frozen (SIGSTOP), its
///    bytes written read from `/proc/PID/io` (an upper bound: its log lines, catalog.json and the
///    manifest count too), then killed (SIGKILL); the mirror's pack bytes come from its request log.
/// 3. A hung primary (frozen with SIGSTOP before the fetch: its kernel accepts connections, nothing
///    answers) and a healthy mirror: the first `odr fetch` within 10 s (the first-byte timeout, 5 s,
///    once), the next run on the same store within 3 s (the store remembers the primary failed).
/// 4. The primary frozen once the store holds 40% of the tag's bytes: the body stalls mid-transfer,
///    and the fetch finishes from the mirror within 10 s of the freeze (failover stall timeout, 5 s).
struct OriginsRun {
    var catalog: URL
    var odr: String
    var odrpack: String
    var scratch: URL

    /// The most both origins may send beyond the tag's bytes when the primary dies.
    static let failoverAllowance: Int64 = 8 << 20

    func report(runs: Int) throws {
        let packs = try FileManager.default.contentsOfDirectory(atPath: catalog.appending(path: "packs").path).filter { $0.hasSuffix(".zip") }
        let tagBytes = packs.reduce(Int64(0)) { $0 + DiskUsage.bytes(under: catalog.appending(path: "packs/\($1)")) }
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, width: 34)) }
        print("\norigins: \(packs.count) packs, \(BenchFormat.mib(tagBytes)) tag bytes, two odrpack serve processes")

        // 1. Both healthy.
        let primary = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
        let mirror = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
        var single = Double.infinity, mirrored = Double.infinity
        for run in 0..<runs {
            // Alternating which goes first, so neither pays for the other's writeback.
            for withMirror in run % 2 == 0 ? [false, true] : [true, false] {
                let store = scratch.appending(path: "healthy-\(run)-\(withMirror)")
                try ChildProcess.syncFileSystems()
                let seconds = try ChildProcess.measure(fetch(primary, withMirror ? mirror : nil, store)).succeeded().seconds
                if withMirror { mirrored = min(mirrored, seconds) } else { single = min(single, seconds) }
                try? FileManager.default.removeItem(at: store)
            }
        }
        primary.stop()
        mirror.stop()
        row("odr fetch, one origin", "\(BenchFormat.seconds(single))  (\(BenchFormat.rate(tagBytes, single)))")
        row("odr fetch --mirror, both healthy", "\(BenchFormat.seconds(mirrored))  \(BenchFormat.ratio(mirrored / single)) of one origin (target <= 1.00x, noise aside)")

        // 2. The primary dies at 40%.
        var worst: (total: Int64, primary: Int64, mirror: Int64, seconds: Double)?
        for run in 0..<runs {
            let primary = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            let mirror = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            defer { primary.stop(); mirror.stop() }
            let store = scratch.appending(path: "killed-\(run)")
            defer { try? FileManager.default.removeItem(at: store) }
            let mark = mirror.logMark
            let started = ContinuousClock.now
            let output = scratch.appending(path: "killed-\(run).out").path
            let pid = try ChildProcess.spawn(fetch(primary, mirror, store), stdout: output, stderr: output)
            // The store's bytes (staging and installed) reach 40% of the tag: the primary dies.
            while DiskUsage.bytes(under: store) < tagBytes * 4 / 10 {
                guard kill(pid, 0) == 0 else { break }
                usleep(2_000)
            }
            guard let primarySent = primary.freezeAndKill() else {
                throw ValidationFailure("could not read /proc/PID/io of the primary (not Linux, or no permission)")
            }
            let (status, _) = try ChildProcess.wait(pid, name: "odr fetch")
            let seconds = (ContinuousClock.now - started).seconds
            guard status == 0 else {
                throw ValidationFailure("odr fetch with a mirror failed after the primary died (status \(status)):\n\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
            }
            let mirrorSent = mirror.requests(since: mark).filter { $0.target.contains("/packs/") }.reduce(Int64(0)) { $0 + $1.bytes }
            let total = primarySent + mirrorSent
            if worst.map({ total > $0.total }) ?? true { worst = (total, primarySent, mirrorSent, seconds) }
        }
        if let worst {
            let excess = worst.total - tagBytes
            row("primary killed at 40%", "primary \(BenchFormat.mib(worst.primary)) + mirror \(BenchFormat.mib(worst.mirror)) = \(worst.total) bytes sent for \(tagBytes) tag bytes (worst of \(runs))")
            row("sent beyond the tag's bytes", "\(excess) bytes (target <= \(BenchFormat.mib(Self.failoverAllowance))): \(excess <= Self.failoverAllowance ? "met" : "MISSED"); the fetch took \(BenchFormat.seconds(worst.seconds))")
        }
        try reportHungPrimary(runs: runs, tagBytes: tagBytes)
    }

    /// Steps 3 and 4: a primary that hangs before the fetch, and one that hangs in the middle.
    func reportHungPrimary(runs: Int, tagBytes: Int64) throws {
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, width: 34)) }
        var first = 0.0, next = 0.0, stalled = 0.0
        for run in 0..<runs {
            let primary = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            let mirror = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            defer { primary.stop(); mirror.stop() }
            let store = scratch.appending(path: "hung-\(run)")
            defer { try? FileManager.default.removeItem(at: store) }
            primary.freeze()
            // Unsigned: catalog.json from the mirror must be allowed, or it is refused (HOSTING.md).
            let arguments = fetch(primary, mirror, store) + ["--allow-unsigned-mirrors"]
            first = max(first, try ChildProcess.measure(arguments).succeeded().seconds)
            next = max(next, try ChildProcess.measure(arguments).succeeded().seconds)
        }
        row("hung primary: first odr fetch", "\(BenchFormat.seconds(first)) (target <= 10 s): \(first <= 10 ? "met" : "MISSED"), worst of \(runs)")
        row("hung primary: next run", "\(BenchFormat.seconds(next)) (target <= 3 s): \(next <= 3 ? "met" : "MISSED"), worst of \(runs)")
        for run in 0..<runs {
            let primary = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            let mirror = try CatalogServerProcess.start(serving: catalog, executable: odrpack)
            defer { primary.stop(); mirror.stop() }
            let store = scratch.appending(path: "stalled-\(run)")
            defer { try? FileManager.default.removeItem(at: store) }
            let output = scratch.appending(path: "stalled-\(run).out").path
            let pid = try ChildProcess.spawn(fetch(primary, mirror, store), stdout: output, stderr: output)
            while DiskUsage.bytes(under: store) < tagBytes * 4 / 10 {
                guard kill(pid, 0) == 0 else { break }
                usleep(2_000)
            }
            primary.freeze()
            let frozenAt = ContinuousClock.now
            let (status, _) = try ChildProcess.wait(pid, name: "odr fetch")
            guard status == 0 else {
                throw ValidationFailure("odr fetch with a mirror failed after the primary hung (status \(status)):\n\((try? String(contentsOfFile: output, encoding: .utf8)) ?? "")")
            }
            stalled = max(stalled, (ContinuousClock.now - frozenAt).seconds)
        }
        row("primary hung at 40%: freeze to done", "\(BenchFormat.seconds(stalled)) (target <= 10 s): \(stalled <= 10 ? "met" : "MISSED"), worst of \(runs)")
    }

    private func fetch(_ primary: CatalogServerProcess, _ mirror: CatalogServerProcess?, _ store: URL) -> [String] {
        [odr, "fetch", "--quiet", "--no-sync", "--catalog", primary.baseURL.absoluteString, "--store", store.path]
            + (mirror.map { ["--mirror", $0.baseURL.absoluteString] } ?? []) + ["bench"]
    }
}
