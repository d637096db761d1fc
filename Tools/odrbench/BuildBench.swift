import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat

/// `odrbench build`: a full `odrpack build` of a mixed tree against `tar -czf`, a no-change rebuild,
/// and the build's peak memory.
///
/// Each build runs in a child process (``BuildWorker``), so its peak memory is the builder's alone,
/// not this process's, which generated the tree, and its time includes starting a process, as `tar`'s does.
struct BuildBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Full build vs. tar -czf on a ~1 GiB mixed tree, no-change rebuild, peak memory.",
        discussion: """
            Generates a tree (half compressible JSON-like text, half incompressible media) in eight \
            level folders plus a folder every level shares, with an odr.json tagging them. Times \
            `tar -czf` of the tree, then a full build with an empty build cache, then a rebuild with \
            nothing changed. Each build runs in a child process (this executable's hidden \
            build-worker subcommand), timed from spawn to exit like `tar`, and its peak resident \
            memory is that child's own, read by /usr/bin/time (without it, wait4's ru_maxrss, which \
            also counts this process's size).

            Targets: full build <= 0.5x tar -czf; rebuild <= 5% of the full build; peak memory < 128 MiB.

            Example: swift run -c release odrbench build --size-mib 1024
            """
    )

    @Option(name: .customLong("size-mib"), help: "Size of the generated tree in MiB.")
    var sizeMiB = 1024

    func validate() throws {
        guard sizeMiB >= 9 else { throw ValidationError("--size-mib must be at least 9.") }
    }

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appending(path: "odrbench-build-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let assets = work.appending(path: "assets")
        let total = Int64(sizeMiB) << 20

        print("== odrbench build: \(sizeMiB) MiB mixed tree ==")
        let shared = total / 8
        try MixedTree.generate(at: assets.appending(path: "Shared"), bytes: shared, seed: 100)
        for level in 1...8 {
            try MixedTree.generate(
                at: assets.appending(path: "Levels/Level\(level)"), bytes: (total - shared) / 8, seed: UInt64(level))
        }
        let tags = (1...8).map { "\"level\($0)\": [\"Levels/Level\($0)\", \"Shared\"]" }.joined(separator: ", ")
        try Data("{\"tags\": {\(tags)}, \"limits\": {\"packSize\": \"512 MiB\"}}\n".utf8)
            .write(to: assets.appending(path: "odr.json"))

        let tar = try ChildProcess.measure(["tar", "-czf", work.appending(path: "tree.tgz").path, "-C", assets.path, "."], quiet: true)
        guard tar.status == 0 else { throw ValidationFailure("tar -czf failed: \(tar.output)") }
        print("tar -czf:     \(String(format: "%7.2f", tar.seconds)) s  (\(BenchFormat.rate(total, tar.seconds)))")

        let exe = ChildProcess.selfExecutable
        let worker = [exe, "build-worker", "--assets", assets.path, "--output", work.appending(path: "catalog").path,
                      "--cache", work.appending(path: "cache.json").path]
        let (fullRun, full) = try Self.build(worker, "the full build")
        let archiveBytes = full.report.packs.reduce(Int64(0)) { $0 + $1.archiveBytes }
        print("full build:   \(String(format: "%7.2f", fullRun.seconds)) s  (\(BenchFormat.rate(total, fullRun.seconds)); \(full.report.packs.count) packs, \(BenchFormat.mib(archiveBytes)) written, \(full.concurrency) cores)")
        print("              \(full.phases); \(String(format: "%.2f", full.seconds)) s in the builder")

        let (rebuildRun, again) = try Self.build(worker, "the no-change rebuild")
        guard again.report.hashedFiles == 0, !again.report.publishedNewVersion else {
            throw ValidationFailure("the no-change rebuild hashed files or published a version")
        }
        print("rebuild:      \(String(format: "%7.3f", rebuildRun.seconds)) s  (nothing changed: 0 files hashed, \(again.report.packs.count) packs reused; \(String(format: "%.3f", again.seconds)) s in the builder)")

        let idle = try ChildProcess.measureAlone([exe, "format-worker", "idle", "-", "-"])
        let whose = ChildProcess.measuresPeakMemoryAlone ? "each build's own process" : "wait4, so it includes odrbench's own size: no /usr/bin/time"
        print("peak memory:  full build \(BenchFormat.mib(fullRun.peakMemory)), rebuild \(BenchFormat.mib(rebuildRun.peakMemory)) (\(whose); an idle odrbench process peaks at \(BenchFormat.mib(idle.peakMemory)))")
        print("")
        let ratio = fullRun.seconds / tar.seconds, share = rebuildRun.seconds / fullRun.seconds
        let peak = max(fullRun.peakMemory, rebuildRun.peakMemory)
        print("ratio full build / tar -czf:  \(BenchFormat.ratio(ratio))  (target <= 0.50x: \(Self.verdict(ratio <= 0.5)))")
        print("ratio rebuild / full build:   \(String(format: "%.2f%%", share * 100))  (target <= 5%: \(Self.verdict(share <= 0.05)))")
        print("peak memory of the builds:    \(BenchFormat.mib(peak))  (target < 128 MiB: \(Self.verdict(peak < 128 << 20)))")
    }

    /// Runs `worker` and decodes what it printed; `what` names the build in errors.
    private static func build(_ worker: [String], _ what: String) throws -> (ChildMeasurement, BuildWorker.Result) {
        let run = try ChildProcess.measureAlone(worker)
        guard run.status == 0 else { throw ValidationFailure("\(what) failed (\(run.status)): \(run.output)") }
        do {
            return (run, try JSONDecoder().decode(BuildWorker.Result.self, from: Data(run.output.utf8)))
        } catch {
            throw ValidationFailure("\(what) printed no result: \(run.output)")
        }
    }

    private static func verdict(_ met: Bool) -> String { met ? "met" : "NOT met" }
}

/// The child-process side of `odrbench build`: one `CatalogBuilder` build, its result as JSON on
/// standard output, so the build's memory is measured alone.
struct BuildWorker: AsyncParsableCommand {
    static let configuration = CommandConfiguration(commandName: "build-worker", shouldDisplay: false)

    /// What the parent prints.
    struct Result: Codable {
        var report: BuildReport
        /// The build's own time, without starting the process.
        var seconds: Double
        /// Time per phase.
        var phases: String
        var concurrency: Int
    }

    @Option var assets: String
    @Option var output: String
    @Option var cache: String

    func run() async throws {
        var options = BuildOptions(assets: URL(filePath: assets), output: URL(filePath: output))
        options.cache = URL(filePath: cache)
        let phases = PhaseClock()
        var report: BuildReport?
        let seconds = try await ContinuousClock().measure {
            report = try await CatalogBuilder(options: options).build { phases.saw($0.phase) }
        }.seconds
        guard let report else { throw ValidationFailure("the build returned no report") }
        let result = Result(report: report, seconds: seconds, phases: phases.summary(), concurrency: options.concurrency)
        print(String(decoding: try JSONEncoder().encode(result), as: UTF8.self))
    }
}

/// When each build phase started, to show where a build spends its time.
private final class PhaseClock: Sendable {
    private let starts = Locked<[(BuildProgress.Phase, ContinuousClock.Instant)]>([])

    func saw(_ phase: BuildProgress.Phase) {
        let now = ContinuousClock.now
        starts.withLock { starts in
            if starts.last?.0 != phase { starts.append((phase, now)) }
        }
    }

    func summary() -> String {
        let list = starts.withLock { $0 }
        let end = ContinuousClock.now
        return list.enumerated().map { index, item in
            let next = index + 1 < list.count ? list[index + 1].1 : end
            return "\(item.0.rawValue) \(String(format: "%.2f", (next - item.1).seconds)) s"
        }.joined(separator: ", ")
    }
}

extension Duration {
    /// The duration in seconds, for printing figures.
    var seconds: Double {
        Double(components.seconds) + Double(components.attoseconds) / 1e18
    }
}
