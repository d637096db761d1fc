#if canImport(Glibc)
import Glibc
#endif
import ArgumentParser
import Foundation
import ODRBuilder
import Synchronization

/// `odrbench build`: a full `odrpack build` of a mixed tree against `tar -czf`, a no-change rebuild,
/// and the build's peak memory.
struct BuildBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "build",
        abstract: "Full build vs. tar -czf on a ~1 GiB mixed tree, no-change rebuild, peak memory.",
        discussion: """
            Generates a tree (half compressible JSON-like text, half incompressible media) in eight \
            level folders plus a folder every level shares, with an odr.json tagging them. Times \
            `tar -czf` of the tree, then a full build with an empty build cache, then a rebuild with \
            nothing changed, and reads the process's peak resident memory (getrusage ru_maxrss).

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
        let memoryBeforeBuild = Self.peakMemory()

        let tar = try ChildProcess.measure(["tar", "-czf", work.appending(path: "tree.tgz").path, "-C", assets.path, "."], quiet: true)
        guard tar.status == 0 else { throw ValidationFailure("tar -czf failed: \(tar.output)") }
        print("tar -czf:     \(String(format: "%7.2f", tar.seconds)) s  (\(BenchFormat.rate(total, tar.seconds)))")

        var options = BuildOptions(assets: assets, output: work.appending(path: "catalog"))
        options.cache = work.appending(path: "cache.json")
        let builder = CatalogBuilder(options: options)
        let clock = ContinuousClock()
        let phases = PhaseClock()
        var full: BuildReport?
        let fullTime = try await clock.measure { full = try await builder.build { phases.saw($0.phase) } }.seconds
        guard let full else { return }
        let archiveBytes = full.packs.reduce(Int64(0)) { $0 + $1.archiveBytes }
        print("full build:   \(String(format: "%7.2f", fullTime)) s  (\(BenchFormat.rate(total, fullTime)); \(full.packs.count) packs, \(BenchFormat.mib(archiveBytes)) written, \(options.concurrency) cores)")
        print("              \(phases.summary())")

        var again: BuildReport?
        let rebuildTime = try await clock.measure { again = try await builder.build() }.seconds
        guard let again, again.hashedFiles == 0, !again.publishedNewVersion else {
            throw ValidationFailure("the no-change rebuild hashed files or published a version")
        }
        print("rebuild:      \(String(format: "%7.3f", rebuildTime)) s  (nothing changed: 0 files hashed, \(again.packs.count) packs reused)")

        let peak = Self.peakMemory()
        print("peak memory:  \(BenchFormat.mib(peak)) (\(BenchFormat.mib(memoryBeforeBuild)) before the builds)")
        print("")
        print("ratio full build / tar -czf:  \(BenchFormat.ratio(fullTime / tar.seconds))  (target <= 0.50x)")
        print("ratio rebuild / full build:   \(String(format: "%.2f%%", rebuildTime / fullTime * 100))  (target <= 5%)")
        print("peak memory:                  \(BenchFormat.mib(peak))  (target < 128 MiB)")
    }

    /// The process's peak resident set size so far, in bytes.
    static func peakMemory() -> Int64 {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        return Int64(usage.ru_maxrss) * 1024
    }
}

/// When each build phase started, to show where a build spends its time.
private final class PhaseClock: Sendable {
    private let starts = Mutex<[(BuildProgress.Phase, ContinuousClock.Instant)]>([])

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
