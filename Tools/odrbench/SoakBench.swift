#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrbench soak`: honest processes sharing one store at full tilt, as a launcher, a patcher and a
/// game would, checking the store's promises all along (docs/STORE.md, "What any process may do").
///
/// `--workers` children run `odr fetch` of random tags under a cache budget of `--budget-percent`
/// of the catalog (so purges run constantly), now and then `odr purge`; one `odr hold` keeps a tag
/// in use while this process hashes its files every second; `odr verify` runs every
/// `--verify-seconds`; with `--kill`, a random fetch or purge is killed with SIGKILL every 2-5 s.
/// At the end it purges everything, fetches every tag and compares each file with the source.
///
/// Prints `N inconsistencies in M operations` and a breakdown, and exits 1 on any inconsistency.
struct SoakBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "soak",
        abstract: "Several processes fetching, holding, purging and verifying one store; counts broken promises.",
        discussion: """
            Builds a catalog of --tags tags (random bytes, packs of at most 1 MiB) in a temporary \
            directory, serves it with `odrpack serve` as a child process, and runs the `odr` built \
            next to this executable. Counted as inconsistencies: a held file missing or changed, a \
            verify failure that is not there when verify runs again (a false problem), a failure \
            without a typed error code, a typed failure that honest use should not see (anything \
            but cache-budget-exceeded, when the tags in use at once exceed the budget, and out-of-space \
            on --disk-mib), a `repair` in the store's log (no process damages \
            anything here), staging left after a final purge, and a final store differing from \
            the source. A killed child is not a failure.

            Examples:
              swift run -c release odrbench soak --seconds 900 --kill
              swift run -c release odrbench soak --seconds 300 --kill --disk-mib 64
            """)

    @Option(help: "How long to run, in seconds.")
    var seconds = 60

    @Option(help: "Processes fetching (and now and then purging) at once.")
    var workers = 8

    @Option(help: "Tags in the catalog; each has 4 files of 64 KiB to 1 MiB.")
    var tags = 12

    @Option(name: .customLong("budget-percent"), help: "The cache budget of every fetch, in percent of the catalog's bytes.")
    var budgetPercent = 40

    @Option(name: .customLong("verify-seconds"), help: "Seconds between two runs of odr verify.")
    var verifySeconds = 5

    @Flag(help: "Kill a random fetch or purge with SIGKILL every 2 to 5 seconds.")
    var kill = false

    @Option(name: .customLong("disk-mib"), help: "Put the store on a tmpfs of this many MiB (needs root and mount; skipped otherwise).")
    var diskMiB: Int?

    @Option(help: "Seed of every random choice.")
    var seed: UInt64 = 1

    @Flag(help: "Keep the temporary directory (catalog, store, logs) when an inconsistency was found, and print its path.")
    var keep = false

    func validate() throws {
        guard seconds > 0, workers > 0, tags >= 2, (1...100).contains(budgetPercent), verifySeconds > 0 else {
            throw ValidationError("--seconds, --workers and --verify-seconds must be positive, --tags at least 2, --budget-percent 1 to 100.")
        }
        if let diskMiB, diskMiB < 8 { throw ValidationError("--disk-mib must be at least 8.") }
    }

    func run() async throws {
        let odr = try ChildProcess.sibling("odr"), odrpack = try ChildProcess.sibling("odrpack")
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-soak-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: workspace, withIntermediateDirectories: true)
        var kept = false
        defer { if !kept { try? FileManager.default.removeItem(at: workspace) } }
        let source = try await SoakCatalog.build(in: workspace, tags: tags, seed: seed)
        let server = try CatalogServerProcess.start(serving: source.served, executable: odrpack)
        defer { server.stop() }

        var disk: URL?
        if let diskMiB {
            switch SoakDisk.mount(bytes: diskMiB << 20, at: workspace.appending(path: "disk")) {
            case .success(let url): disk = url
            case .failure(let reason): say("soak: no small file system (\(reason)); the store stays on \(workspace.path)")
            }
        }
        defer { if let disk { SoakDisk.unmount(disk) } }
        let budget = source.totalBytes * Int64(budgetPercent) / 100
        let run = SoakRun(odr: odr, catalogURL: server.url(for: "game/").absoluteString,
                          store: (disk ?? workspace).appending(path: "store").path, logs: workspace.appending(path: "logs"),
                          source: source, budget: budget, smallDisk: disk != nil, seed: seed)
        try FileManager.default.createDirectory(at: run.logs, withIntermediateDirectories: true)
        say("soak: \(workers) fetching processes, 1 holding \(source.tags[0]), verify every \(verifySeconds) s, kills \(kill ? "on" : "off"), \(seconds) s; "
              + "catalog \(BenchFormat.mib(source.totalBytes)) in \(tags) tags, budget \(BenchFormat.mib(budget))\(disk.map { " on a \(diskMiB ?? 0) MiB tmpfs at \($0.path)" } ?? "")")
        try run.soak(seconds: seconds, workers: workers, verifyEvery: verifySeconds, kills: kill)
        let report = run.stats.withLock { $0 }
        print(report.summary)
        guard report.inconsistencies == 0 else {
            if keep, disk == nil {
                kept = true
                print("kept \(workspace.path)")
            }
            throw ExitCode(1)
        }
    }
}

/// Writes a line to stdout at once (unbuffered), so a long run logged to a file shows progress.
func say(_ line: String) {
    FileHandle.standardOutput.write(Data((line + "\n").utf8))
}

/// The generated catalog: each tag's files and their SHA-256, to check the store against.
struct SoakCatalog: Sendable {
    /// The folder `odrpack serve` serves; the catalog is its `game/`.
    var served: URL
    var tags: [String]
    /// Per tag, its files' logical paths and SHA-256 digests.
    var files: [String: [(path: String, sha256: String)]]
    var totalBytes: Int64

    static func build(in workspace: URL, tags count: Int, seed: UInt64) async throws -> SoakCatalog {
        let assets = workspace.appending(path: "assets"), served = workspace.appending(path: "served")
        var generator = SplitMix64(seed: seed)
        var files: [String: [(path: String, sha256: String)]] = [:], total: Int64 = 0, rules: [String] = []
        let tags = (0..<count).map { String(format: "t%02d", $0) }
        for tag in tags {
            try FileManager.default.createDirectory(at: assets.appending(path: tag), withIntermediateDirectories: true)
            rules.append(#""\#(tag)":{"include":["\#(tag)"]}"#)
            for index in 0..<4 {
                var bytes = [UInt8](repeating: 0, count: (64 << 10) + Int(generator.next() % UInt64(960 << 10)))
                generator.fill(&bytes)
                let path = "\(tag)/f\(index).bin"
                try Data(bytes).write(to: assets.appending(path: path))
                files[tag, default: []].append((path, ContentHash.sha256Hex(of: bytes)))
                total += Int64(bytes.count)
            }
        }
        let json = #"{"catalogID":"soak","tags":{\#(rules.joined(separator: ","))},"limits":{"packSize":"1 MiB"}}"#
        try Data(json.utf8).write(to: assets.appending(path: "odr.json"))
        var options = BuildOptions(assets: assets, output: served.appending(path: "game"))
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
        try? FileManager.default.removeItem(at: assets)
        return SoakCatalog(served: served, tags: tags, files: files, totalBytes: total)
    }
}

/// What the soak counted.
struct SoakStats: Sendable {
    var fetches = 0, purges = 0, verifies = 0, hashChecks = 0, kills = 0, outOfSpace = 0, overBudget = 0
    var heldFileWrong: [String] = []
    var falseVerifyFailures: [String] = []
    /// Verify failures while a child was being killed that were gone on the rerun: a killed
    /// install's leftovers, not counted.
    var verifyAfterKill = 0
    var untypedErrors: [String] = []
    var typedFailures: [String] = []
    var falseRepairs: [String] = []
    var stagingLeft: [String] = []
    var finalDifferences: [String] = []

    var operations: Int { fetches + purges + verifies + hashChecks }
    var inconsistencies: Int {
        heldFileWrong.count + falseVerifyFailures.count + untypedErrors.count + typedFailures.count
            + falseRepairs.count + stagingLeft.count + finalDifferences.count
    }

    var summary: String {
        func line(_ label: String, _ found: [String]) -> String {
            "  \(label): \(found.count)" + found.prefix(3).map { "\n      \($0.prefix(600))" }.joined()
        }
        return """
            \(inconsistencies) inconsistencies in \(operations) operations
            \(line("held file missing or wrong", heldFileWrong))
            \(line("false verify failure", falseVerifyFailures))
            \(line("untyped error", untypedErrors))
            \(line("typed failure honest use should not see", typedFailures))
            \(line("repair in the store's log", falseRepairs))
            \(line("staging left after a final purge", stagingLeft))
            \(line("final store differing from the source", finalDifferences))
            operations: \(fetches) fetches (\(overBudget) cache-budget-exceeded, \(outOfSpace) out-of-space), \(purges) purges, \(verifies) verifies, \(hashChecks) checks of the held files; \(kills) kills (\(verifyAfterKill) verify failures beside a kill, gone on the rerun)
            """
    }
}

/// One soak: the children it runs, what it counts.
final class SoakRun: Sendable {
    let odr: String, catalogURL: String, store: String, logs: URL
    let source: SoakCatalog
    let budget: Int64
    let smallDisk: Bool
    let seed: UInt64
    let stats = Locked(SoakStats())
    /// Fetch and purge children running now, which the killer may pick.
    private let running = Locked<Set<pid_t>>([])
    private let killed = Locked<Set<pid_t>>([])
    /// When the last kill was, as `DispatchTime` nanoseconds.
    private let lastKill = Locked<UInt64>(0)
    private let stop = Locked(false)

    init(odr: String, catalogURL: String, store: String, logs: URL, source: SoakCatalog, budget: Int64, smallDisk: Bool, seed: UInt64) {
        (self.odr, self.catalogURL, self.store, self.logs) = (odr, catalogURL, store, logs)
        (self.source, self.budget, self.smallDisk, self.seed) = (source, budget, smallDisk, seed)
    }

    private var common: [String] { ["--catalog", catalogURL, "--store", store] }

    func soak(seconds: Int, workers: Int, verifyEvery: Int, kills: Bool) throws {
        // The store exists and the held tag is installed before anything else starts.
        _ = try runChecked(["fetch", "--quiet"] + common + [source.tags[0]], name: "setup")
        let holder = try Holder.start(self)
        let group = DispatchGroup()
        func thread(_ body: @escaping @Sendable () -> Void) {
            group.enter()
            Thread { body(); group.leave() }.start()
        }
        for worker in 0..<workers { thread { self.work(worker) } }
        thread { self.checkHeldFiles(holder) }
        thread { self.verifyEvery(verifyEvery) }
        if kills { thread { self.killNowAndThen() } }
        let start = DispatchTime.now(), end = start + .seconds(seconds)
        var reported = start
        while DispatchTime.now() < end {
            usleep(100_000)
            // A line a minute, so a long run shows it is alive.
            guard DispatchTime.now() > reported + .seconds(60) else { continue }
            reported = DispatchTime.now()
            let so = stats.withLock { $0 }
            say("soak: \((reported.uptimeNanoseconds - start.uptimeNanoseconds) / 1_000_000_000) s, \(so.operations) operations, \(so.kills) kills, \(so.inconsistencies) inconsistencies so far")
            }
        stop.withLock { $0 = true }
        group.wait()
        holder.release()
        finalChecks()
    }

    // MARK: The children

    /// Runs `odr arguments` to the end; a child this soak killed returns `nil`.
    private func runOdr(_ arguments: [String], name: String, killable: Bool) throws -> (status: Int32, output: String)? {
        let output = logs.appending(path: "\(name)-\(UUID().uuidString).txt")
        defer { try? FileManager.default.removeItem(at: output) }
        let pid = try ChildProcess.spawn([odr] + arguments, stdout: output.path, stderr: output.path + ".err")
        if killable { running.withLock { _ = $0.insert(pid) } }
        let (status, _) = try ChildProcess.wait(pid, name: "odr \(arguments[0])")
        running.withLock { _ = $0.remove(pid) }
        let text = ((try? String(contentsOf: output, encoding: .utf8)) ?? "") + ((try? String(contentsOf: URL(filePath: output.path + ".err"), encoding: .utf8)) ?? "")
        try? FileManager.default.removeItem(atPath: output.path + ".err")
        if killed.withLock({ $0.remove(pid) != nil }) { return nil }
        return (status, text)
    }

    /// Runs `odr arguments`, which must succeed.
    private func runChecked(_ arguments: [String], name: String) throws -> String {
        let result = try runOdr(arguments, name: name, killable: false)
        guard let (status, output) = result, status == 0 else {
            throw ValidationFailure("odr \(arguments.joined(separator: " ")) failed (exit \(result?.status ?? -1)): \(result?.output ?? "")")
        }
        return output
    }

    /// Counts a failed child: a typed error (`[code] ...`), out-of-space on a small disk expected.
    private func classify(_ status: Int32, _ output: String, _ what: String) {
        guard status != 0 else { return }
        let code = output.firstMatch(of: /\[([a-z-]+)\]/).map { String($0.1) }
        stats.withLock { stats in
            switch code {
            case "out-of-space" where smallDisk: stats.outOfSpace += 1
            // The tags in use at once (every fetch holds its tag while it installs) can exceed the budget.
            case "cache-budget-exceeded": stats.overBudget += 1
            case nil: stats.untypedErrors.append("\(what) (exit \(status)): \(output)")
            default: stats.typedFailures.append("\(what): \(output)")
            }
        }
    }

    private func work(_ worker: Int) {
        var random = SplitMix64(seed: seed &* 1000 &+ UInt64(worker))
        while !stop.withLock({ $0 }) {
            let purging = random.next() % 8 == 0
            let arguments = purging
                ? ["purge"] + common + ["--bytes", "\(Int64(random.next() % UInt64(max(1, budget / 2))))"]
                : ["fetch", "--quiet", "--cache-budget", "\(budget)"] + common + [source.tags[Int(random.next() % UInt64(source.tags.count))]]
            let what = "odr " + arguments.filter { !$0.hasPrefix("http") && $0 != store }.joined(separator: " ")
            do {
                guard let (status, output) = try runOdr(arguments, name: "w\(worker)", killable: true) else {
                    continue
                }
                stats.withLock { if purging { $0.purges += 1 } else { $0.fetches += 1 } }
                classify(status, output, what)
            } catch {
                stats.withLock { $0.untypedErrors.append("\(what): \(error)") }
            }
        }
    }

    private func killNowAndThen() {
        var random = SplitMix64(seed: seed &+ 77)
        while !stop.withLock({ $0 }) {
            let wait = DispatchTime.now() + .milliseconds(2000 + Int(random.next() % 3000))
            while DispatchTime.now() < wait, !stop.withLock({ $0 }) { usleep(50_000) }
            guard !stop.withLock({ $0 }) else { break }
            running.withLock { running in
                guard let victim = running.randomElement() else { return }
                killed.withLock { _ = $0.insert(victim) }
                Glibc.kill(victim, SIGKILL)
                lastKill.withLock { $0 = DispatchTime.now().uptimeNanoseconds }
                stats.withLock { $0.kills += 1 }
            }
        }
    }

    private func verifyEvery(_ interval: Int) {
        while !stop.withLock({ $0 }) {
            let wait = DispatchTime.now() + .seconds(interval)
            while DispatchTime.now() < wait, !stop.withLock({ $0 }) { usleep(50_000) }
            guard !stop.withLock({ $0 }) else { break }
            let started = DispatchTime.now().uptimeNanoseconds
            do {
                guard let (status, output) = try runOdr(["verify", "--store", store], name: "verify", killable: false) else { continue }
                stats.withLock { $0.verifies += 1 }
                guard status != 0 else { continue }
                guard output.contains("mismatch:") else {
                    classify(status, output, "odr verify")
                    continue
                }
                // Run again: a problem that is gone was never there, unless a child was killed
                // meanwhile and its leftovers were cleaned up in between.
                let again = try runOdr(["verify", "--store", store], name: "verify", killable: false)
                let persists = again.map { $0.status != 0 } ?? false
                let besideKill = lastKill.withLock { $0 } >= started
                stats.withLock { stats in
                    if persists {
                        stats.falseVerifyFailures.append("persisting: \(output)")
                    } else if besideKill {
                        stats.verifyAfterKill += 1
                    } else {
                        stats.falseVerifyFailures.append(output)
                    }
                }
            } catch {
                stats.withLock { $0.untypedErrors.append("odr verify: \(error)") }
            }
        }
    }

    /// Hashes the held tag's files every second: they must stay there, unchanged.
    private func checkHeldFiles(_ holder: Holder) {
        while !stop.withLock({ $0 }) {
            for (path, file) in holder.files {
                let digest = (try? ContentHash.sha256Hex(ofFileAt: URL(filePath: file))) ?? "missing"
                stats.withLock { stats in
                    stats.hashChecks += 1
                    if digest != holder.expected[path] { stats.heldFileWrong.append("\(path) at \(file): \(digest)") }
                }
            }
            let wait = DispatchTime.now() + .seconds(1)
            while DispatchTime.now() < wait, !stop.withLock({ $0 }) { usleep(50_000) }
        }
    }

    /// `odr hold` of the first tag, with its files' paths.
    final class Holder: Sendable {
        let pid: pid_t
        private let stdinWrite: Int32
        /// Logical path to the installed file's path, and to the source's SHA-256.
        let files: [String: String]
        let expected: [String: String]

        private init(pid: pid_t, stdinWrite: Int32, files: [String: String], expected: [String: String]) {
            (self.pid, self.stdinWrite, self.files, self.expected) = (pid, stdinWrite, files, expected)
        }

        static func start(_ run: SoakRun) throws -> Holder {
            var ends: [Int32] = [-1, -1]
            guard pipe(&ends) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0 else { throw ValidationFailure("no pipe for odr hold") }
            let output = run.logs.appending(path: "hold.txt")
            let tag = run.source.tags[0]
            let pid = try ChildProcess.spawn([run.odr, "hold"] + run.common + [tag], stdout: output.path, stderr: output.path + ".err", stdin: ends[0])
            close(ends[0])
            let deadline = DispatchTime.now() + .seconds(60)
            while !((try? String(contentsOf: output, encoding: .utf8)) ?? "").contains("holding") {
                guard DispatchTime.now() < deadline, waitpid(pid, nil, WNOHANG) == 0 else {
                    throw ValidationFailure("odr hold did not start: \((try? String(contentsOf: URL(filePath: output.path + ".err"), encoding: .utf8)) ?? "")")
                }
                usleep(50_000)
            }
            var files: [String: String] = [:], expected: [String: String] = [:]
            for (path, sha256) in run.source.files[tag] ?? [] {
                files[path] = try run.runChecked(["path", "--offline"] + run.common + [path], name: "path").trimmingCharacters(in: .whitespacesAndNewlines)
                expected[path] = sha256
            }
            return Holder(pid: pid, stdinWrite: ends[1], files: files, expected: expected)
        }

        /// Closes the holder's stdin, so it ends its request and exits.
        func release() {
            close(stdinWrite)
            _ = try? ChildProcess.wait(pid, name: "odr hold")
        }
    }

    // MARK: The end

    /// With every child gone: no `repair` logged, no staging after a purge of everything, every
    /// file of every tag (fetched again, one tag at a time) equal to the source, and a store that verifies.
    private func finalChecks() {
        func record(_ keyPath: WritableKeyPath<SoakStats, [String]>, _ text: String) { stats.withLock { $0[keyPath: keyPath].append(text) } }
        do {
            let log = try runChecked(["log", "--json", "--store", store], name: "log")
            struct Line: Decodable { var kind: String; var packID: String; var reason: String }
            for line in try JSONDecoder().decode([Line].self, from: Data(log.utf8)) where line.kind == "repair" {
                record(\.falseRepairs, "repair of \(line.packID.prefix(12)): \(line.reason)")
            }
            _ = try runChecked(["purge"] + common + ["--bytes", "\(Int64(1) << 50)"], name: "final-purge")
            // As `odr status` counts it: an empty folder a download killed at its start left takes
            // no space (the next open removes it).
            struct Status: Decodable { struct Store: Decodable { var stagingBytes: Int64 }; var store: Store }
            let status = try runChecked(["status", "--json", "--offline"] + common, name: "status")
            let staged = try JSONDecoder().decode(Status.self, from: Data(status.utf8)).store.stagingBytes
            if staged > 0 {
                let names = (try? FileManager.default.contentsOfDirectory(atPath: store + "/staging")) ?? []
                record(\.stagingLeft, "\(staged) bytes: \(names.sorted().joined(separator: ", "))")
            }
            // One tag at a time, purging everything between two, so it works on a small disk too.
            // No budget: what the budget does under load was checked while the workers ran.
            for tag in source.tags {
                _ = try runChecked(["purge"] + common + ["--bytes", "\(Int64(1) << 50)"], name: "final-purge")
                _ = try runChecked(["fetch", "--quiet"] + common + [tag], name: "final-fetch")
                for (path, sha256) in source.files[tag] ?? [] {
                    let file = try runChecked(["path", "--offline"] + common + [path], name: "path").trimmingCharacters(in: .whitespacesAndNewlines)
                    let digest = (try? ContentHash.sha256Hex(ofFileAt: URL(filePath: file))) ?? "missing"
                    if digest != sha256 { record(\.finalDifferences, "\(path): \(digest)") }
                }
            }
            if let (status, output) = try runOdr(["verify", "--store", store], name: "verify", killable: false), status != 0 {
                record(\.finalDifferences, "final odr verify: \(output)")
            }
        } catch {
            record(\.untypedErrors, "final checks: \(error)")
        }
    }
}

/// A tmpfs for the store, when this machine lets odrbench mount one.
enum SoakDisk {
    static func mount(bytes: Int, at folder: URL) -> Result<URL, ValidationFailure> {
        guard getuid() == 0 else { return .failure(ValidationFailure("not root")) }
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            let result = try ChildProcess.measure(["mount", "-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", folder.path])
            guard result.status == 0 else { return .failure(ValidationFailure("mount failed with status \(result.status)")) }
            return .success(folder)
        } catch {
            return .failure(error as? ValidationFailure ?? ValidationFailure("\(error)"))
        }
    }

    static func unmount(_ folder: URL) {
        _ = try? ChildProcess.measure(["umount", folder.path])
    }
}
