import ArgumentParser
import Foundation
import ODRRuntime

/// `odr demo`: a small game-like client that plays levels in order through `ResourceRequest`.
struct DemoCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "demo",
        abstract: "Play the sample game's levels in order, the way a game uses the runtime.",
        discussion: """
            For each level it prefetches the next level at low priority while "playing" the \
            current one, asks for the current level as urgent when the player arrives before the \
            prefetch finished (with a progress bar), ends the previous level's request, and prints \
            the gauge: each tag's state and size. The cache budget (1.25 MiB unless --cache-budget \
            says otherwise) is small enough that old levels are purged; each purge is printed with \
            its reason. It ends with a summary.

            Example (with `odrpack serve SampleAssets-catalog --rate 2000000`):
              odr demo --catalog http://127.0.0.1:8080/ --store /tmp/game-store --cache-budget 1310720
            """
    )

    @OptionGroup var options: CatalogOptions
    @OptionGroup var install: InstallOptions

    @Option(help: "How many levels to play (tags level1 ... levelN).")
    var levels = 5

    @OptionGroup var space: SpaceOptions

    /// The demo's budget: small, so that old levels are purged.
    var cacheBudget: Int64 { space.cacheBudget ?? 1280 << 10 }

    @Option(name: .customLong("play-seconds"), help: "How long the player spends in each level.")
    var playSeconds = 0.05

    func validate() throws {
        guard levels >= 1 else { throw ValidationError("--levels must be at least 1.") }
        guard playSeconds >= 0 else { throw ValidationError("--play-seconds cannot be negative.") }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let manager = try options.openManager(installing: install, space: space, cacheBudget: cacheBudget)
            let log = DemoLog(cacheBudget: cacheBudget)
            let events = manager.events()
            let listener = Task {
                for await event in events { log.record(event) }
            }
            print("Preparing: catalog and initial-install tags...")
            // A --variant the catalog does not declare is an error here too, before anything installs.
            try await manager.loadCatalog(online: !options.offline).requireDeclaredVariants()
            try await manager.prepare(online: !options.offline)
            print("Ready: catalog version \(manager.currentVersion ?? 0), cache budget \(byteText(cacheBudget)).")

            var current: ResourceRequest?
            var next: (request: ResourceRequest, task: Task<Void, any Error>)?
            var waits = 0
            for level in 1...levels {
                let tag = "level\(level)"
                print("\n== Level \(level) ==")
                let request: ResourceRequest
                if let prefetched = next {
                    request = prefetched.request
                    if request.state != .accessing {
                        waits += 1
                        print("The player arrived before \(tag) finished downloading: now urgent.")
                        request.loadingPriority = .urgent
                        try await wait(for: prefetched.task, showing: request)
                    }
                } else {
                    request = ResourceRequest(tags: [tag], manager: manager)
                    if await !request.conditionallyBeginAccessingResources() {
                        waits += 1
                        request.loadingPriority = .urgent
                        print("Downloading \(tag) (\(byteText(try manager.downloadSize(forTags: [tag])))) as urgent.")
                        let task = Task { try await request.beginAccessingResources() }
                        try await wait(for: task, showing: request)
                    }
                }
                try current?.endAccessingResources()
                current = request

                if level < levels {
                    let upcoming = ResourceRequest(tags: ["level\(level + 1)"], manager: manager)
                    upcoming.loadingPriority = .loading(0.1)
                    next = (upcoming, Task { try await upcoming.beginAccessingResources() })
                } else {
                    next = nil
                }

                guard let map = request.url(forResource: "map", withExtension: "json", subdirectory: "Levels/Level\(level)") else {
                    throw ResourceError(.resourceNotInstalled, "Levels/Level\(level)/map.json is not in the installed packs of \(tag).")
                }
                let bytes = try Data(contentsOf: map).count
                // What happened while the player waited (installs, purges), before what it led to.
                log.flush()
                print("Playing \(tag): read \(map.lastPathComponent) (\(bytes) bytes) from \(map.deletingLastPathComponent().path)")
                try await Task.sleep(for: .seconds(playSeconds))
                // Events of the level's play (the next level's prefetch, purges), then the tags as they stand.
                log.flush()
                printGauge(manager.gauge())
            }
            try current?.endAccessingResources()
            if let next { next.task.cancel() }
            try await Task.sleep(for: .milliseconds(50))
            listener.cancel()
            log.flush()
            let usage = try manager.store.usage()
            print("\n== Summary ==")
            print("levels played: \(levels); waited for downloads \(waits) time(s)")
            print("packs installed: \(log.installs) (\(byteText(log.installedBytes))); purged: \(log.purges) (\(byteText(log.purgedBytes)))")
            print("store now: \(usage.installedPacks) pack(s), \(byteText(usage.installedBytes)) of a \(byteText(cacheBudget)) budget")
        }
    }

    private func wait(for task: Task<Void, any Error>, showing request: ResourceRequest) async throws {
        let updates = request.progressUpdates
        // Output here is usually a log, not a terminal: print a line whenever the bar changes.
        let bar = Task {
            var last = ""
            for await update in updates {
                let line = progressBarText(fraction: update.fractionCompleted, completed: update.completedBytes, total: update.totalBytes)
                if line != last { print("  " + line) }
                last = line
                if update.fractionCompleted >= 1 { break }
            }
        }
        defer { bar.cancel() }
        try await task.value
    }

    private func printGauge(_ gauge: [TagGauge]) {
        for tag in gauge {
            let name = tag.name.padding(toLength: 10, withPad: " ", startingAt: 0)
            let state = tag.state.rawValue.padding(toLength: 15, withPad: " ", startingAt: 0)
            let installed = tag.state == .downloaded || tag.state == .inUse
            let size = installed ? "\(byteText(tag.installedBytes)) on disk" : "\(byteText(tag.installedBytes)) once installed"
            print("  \(name) \(state) \(size), priority \(tag.preservationPriority)")
        }
    }
}

/// Collects manager events for printing between levels.
final class DemoLog: @unchecked Sendable {
    // @unchecked Sendable: every access goes through `lock`.
    private let lock = NSLock()
    private var pending: [String] = []
    /// Said once before a level's purges: what forces them (the reason of each pack is only why it went first).
    private let roomLine: String

    init(cacheBudget: Int64) {
        roomLine = "  no room for the next download within the \(byteText(cacheBudget)) cache budget (and the free-space watermark): packs no request uses are purged, in this order:"
    }
    private(set) var installs = 0
    private(set) var installedBytes: Int64 = 0
    private(set) var purges = 0
    private(set) var purgedBytes: Int64 = 0

    func record(_ event: ResourceManagerEvent) {
        lock.withLock {
            switch event {
            case .packInstalled(let id, let bytes, let tags):
                installs += 1
                installedBytes = installedBytes.clampedAdding(bytes)
                pending.append("  installed pack \(id.prefix(12)) (\(byteText(bytes))) for \(tags.joined(separator: ", "))")
            case .packPurged(let id, let bytes, let reason, let tags):
                purges += 1
                purgedBytes = purgedBytes.clampedAdding(bytes)
                if !pending.contains(where: { $0.hasPrefix("  purged pack") }) { pending.append(roomLine) }
                pending.append("  purged pack \(id.prefix(12)) (\(byteText(bytes))) of \(tags.joined(separator: ", ")): \(reason)")
            case .tagAvailable(let tag):
                pending.append("  \(tag) is ready")
            case .tagPurged(let tag):
                pending.append("  \(tag) must download again")
            case .catalogCheckFailed(let code, _, _):
                pending.append("  the catalog could not be checked (\(code)): playing offline with the stored copy")
            case .lowDiskSpace(let free):
                pending.append("  low disk space: \(byteText(free)) free")
            case .catalogUpdated(let version):
                pending.append("  catalog now at version \(version)")
            case .downloadWaiting(let id, let reason):
                pending.append("  pack \(id.prefix(12)) waits for the download policy: \(reason)")
            case .downloadResumed(let id):
                pending.append("  pack \(id.prefix(12)) may download now")
            case .downloadRetrying(let id, let reason, let attempt, let next):
                let seconds = max(0, next.timeIntervalSinceNow)
                pending.append("  pack \(id.prefix(12)): attempt \(attempt) failed (\(reason)); retrying in \(String(format: "%.1f", seconds)) s")
            case .originSwitched(let from, let to, let reason):
                pending.append("  switched from \(from.host ?? from.absoluteString) to \(to.host ?? to.absoluteString) (\(reason))")
            case .hintedPrefetchStarted(let id, let bytes, let likelihood):
                pending.append("  prefetching pack \(id.prefix(12)) (\(byteText(bytes))) for a hint at \(likelihood)")
            case .hintedPrefetchCancelled(let id):
                pending.append("  prefetch of pack \(id.prefix(12)) cancelled: its hints ended")
            }
        }
    }

    func flush() {
        let lines = lock.withLock {
            defer { pending.removeAll() }
            return pending
        }
        for line in lines { print(line) }
    }
}
