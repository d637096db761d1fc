import ArgumentParser
import Foundation
import ODRCommandLine
import ODRRuntime
import ODRSimulation

/// `odrsim run`: one scenario, every chosen policy, a table (or JSON/CSV) and optionally a chart.
struct RunCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "run",
        abstract: "Run a workload on a virtual device under each purge policy and compare them.",
        discussion: """
            WORKLOADS
              levels     linear progression: the tags played in order as levels,
                         the next level prefetched while one plays, sessions
                         separated by idle time, occasional replays
              openworld  a player walking a grid of regions, holding the current
                         region (urgent) and the eight around it (prefetched)
              travel     random access with Zipf popularity: a guide app whose
                         user jumps between places, sometimes next door
              --trace FILE replays a recorded JSON Lines trace instead,
                         with the hints it recorded (the format is in
                         docs/ODRSIM.md)

            PRESERVATION PRIORITIES
              Hubs (one tag in ten; one region in 25 for openworld) have priority
              0.8, the others 0.4, and the workloads come back to hubs more
              often, as a developer means it:
              levels replays boss levels, openworld fast-travels to towns, travel
              jumps to top sights. --equal-priorities plays the same requests with
              every tag at 0.5: the workload without the developer's hints.

            CATALOG
              By default a catalog is generated to suit the workload (--tags,
              --pack-size, --shared-pack-size): each tag has one to three packs
              of its own, and neighbouring tags share packs. --catalog DIR plays
              against a catalog built by odrpack instead; the workload walks its
              tags in name order.

            POLICIES (--policy, comma-separated or repeated; default: all)
              default       the runtime's planner: superseded first, then least
                            recently used with preservation priority as extra
                            recency, avoiding freeing far more than needed
              hinted        default, taking the game's anticipation hints:
                            hinted packs purged last (least likely first)
                            and prefetched while no request downloads
              lru           plain least recently used
              priority-lru  lowest preservation priority, then least recent
              gds           Greedy-Dual-Size-Frequency, costing a pack by its
                            download time
              belady        Belady's MIN, which knows the future: the reference
                            no online policy should beat (with mixed pack sizes
                            a heuristic, not an optimum)

            HINTS
              Each workload hints what the game expects next, as a game would
              with ResourceManager.anticipate: levels the next level (0.9),
              openworld the region the player heads into or fast-travels to
              (0.6), travel the next destination (0.5). Each hinted tag is right
              with probability --hint-accuracy (default 0.7). A wrong one is,
              with --wrong-hints neighbour (default), the choice the player did
              not make: a replay when they go on (or the next level when they
              replay), another region around the player, another place near
              the current one; with --wrong-hints random, any other tag. A
              trace replays the hints the game gave instead.
              Only the hinted policy reads hints. --hint-prefetch
              make-room (default) prefetches as the runtime does, purging only
              packs less likely wanted; free-space never purges for a
              prefetch; off only orders purging by the hints. Like the
              runtime, hinted keeps a measure of how many hinted bytes
              requests used and prefetches less while it is poor
              (--hint-learning standard; off never holds back).

            COLUMNS
              requests, hits (everything installed at begin), misses; bytes
              downloaded (prefetches included) and their ratio to Belady's;
              prefetched (bytes hinted prefetches moved) and unused (of those,
              what no request used: wrong guesses); stall (time players
              waited for urgent requests); purges (packs deleted); over-purged (bytes
              freed beyond each purge's need); peak disk (the most the store
              held); in-use refusals (over the in-use limit); out of space.

            EXAMPLES
              odrsim run --workload levels --disk 8GiB --days 30 \\
                --policy all --seed 1 --svg levels.svg
              odrsim run --workload travel --tags 1000 \\
                --pack-size lognormal:32MB:1.0 --budget 3GiB --csv
              odrsim run --workload openworld --policy default,lru \\
                --in-use-limit 1GiB --json
              odrsim run --workload openworld --equal-priorities --seed 3
              odrsim run --workload levels --record-trace levels.jsonl
              odrsim run --trace levels.jsonl --disk 4GiB
              odrsim run --catalog build/catalog --workload travel --days 60
            """
    )

    @Option(help: "The usage pattern: levels, openworld or travel.")
    var workload: WorkloadArgument = .levels

    @Option(help: ArgumentHelp("Replay this JSON Lines trace instead of generating a workload.", valueName: "file"))
    var trace: String?

    @Option(help: ArgumentHelp("Play against this catalog directory (built by odrpack) instead of a generated one.", valueName: "dir"))
    var catalog: String?

    @Option(help: "With --catalog: the distribution whose version to use (newest version if absent).")
    var distribution = "live"

    @Flag(help: "Give every tag preservation priority 0.5 (same requests, no developer hints).")
    var equalPriorities = false

    @Option(help: "Tags of the generated catalog (default: 100 levels, 400 regions, 1000 places).")
    var tags: Int?

    @Option(help: ArgumentHelp("Sizes of each tag's own packs: fixed:SIZE, uniform:MIN:MAX or lognormal:MEDIAN:SIGMA.", valueName: "distribution"))
    var packSize: SizeDistributionArgument?

    @Option(help: ArgumentHelp("Sizes of packs shared by neighbouring tags.", valueName: "distribution"))
    var sharedPackSize: SizeDistributionArgument?

    @Option(help: ArgumentHelp("The disk's capacity. (default: 8GiB)", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var disk = ByteSizeArgument("8GiB")

    @Option(help: ArgumentHelp("What other apps use on average (default: half the disk).", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var otherApps: ByteSizeArgument?

    @Option(help: ArgumentHelp("How far other apps' use wanders either way (default: an eighth of the disk).", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var otherAppsSwing: ByteSizeArgument?

    @Option(help: ArgumentHelp("The cache budget: the most the store may hold (default: none).", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var budget: ByteSizeArgument?

    @Option(help: ArgumentHelp("Purge to keep this much of the disk free. (default: 256MiB)", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var watermark = ByteSizeArgument("256MiB")

    @Option(help: ArgumentHelp("The most installed bytes in use at once. (default: 2GiB)", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var inUseLimit = ByteSizeArgument("2GiB")

    @Option(help: ArgumentHelp("Download rate per second. (default: 5MB)", valueName: "size"), transform: ByteSizeArgument.init(parsing:))
    var bandwidth = ByteSizeArgument("5MB")

    @Option(help: ArgumentHelp("Seconds before each download starts.", valueName: "seconds"))
    var latency = 0.15

    @Option(help: ArgumentHelp("The chance, each day, of one to six hours offline.", valueName: "p"))
    var offlineProbability = 0.0

    @Option(help: "Simulated days (a trace plays for its own length).")
    var days = 30.0

    @Option(help: "The seed of every random choice; the same seed gives the same numbers.")
    var seed: UInt64 = 1

    @Option(help: ArgumentHelp("The chance that each tag a workload hints is right (otherwise a wrong tag, see --wrong-hints).", valueName: "p"))
    var hintAccuracy = 0.7

    @Option(help: ArgumentHelp("What a wrong hint names: neighbour (a choice the player could have made) or random (any other tag).", valueName: "model"))
    var wrongHints: WrongHints = .neighbour

    @Option(help: ArgumentHelp(
        "How the hinted policy prefetches: make-room (purge packs less likely wanted, as the runtime does), free-space (never purge for a prefetch) or off.",
        valueName: "rule"))
    var hintPrefetch = HintPrefetchArgument(rule: .makingRoom)

    @Option(help: ArgumentHelp(
        "When the hinted policy holds prefetches back for hints that went unused: standard (the runtime's rule), off (never), or MAKE-ROOM,PREFETCH[,MEMORY] thresholds of the measure.",
        valueName: "rule"))
    var hintLearning = HintLearningArgument(rule: .standard)

    @Option(name: .customLong("policy"), parsing: .singleValue,
            help: ArgumentHelp("Policies to compare, comma-separated or repeated: all, default, hinted, lru, priority-lru, gds, belady.", valueName: "names"))
    var policyNames: [String] = ["all"]

    @Flag(help: "Print the report as JSON instead of a table.")
    var json = false

    @Flag(help: "Print the table as CSV.")
    var csv = false

    @Option(help: ArgumentHelp("Write a chart of disk use and bytes downloaded over time to this SVG file.", valueName: "file"))
    var svg: String?

    @Option(help: ArgumentHelp("Write the generated requests and hints as a JSON Lines trace to this file.", valueName: "file"))
    var recordTrace: String?

    var policies: [PolicyChoice] {
        get throws {
            var result: [PolicyChoice] = []
            for name in policyNames.flatMap({ $0.split(separator: ",") }).map({ $0.trimmingCharacters(in: .whitespaces) }) {
                if name == "all" {
                    result += PolicyChoice.allCases
                } else if let policy = PolicyChoice(rawValue: name) {
                    result.append(policy)
                } else {
                    throw ValidationError("Unknown policy '\(name)'. Use all, default, hinted, lru, priority-lru, gds or belady.")
                }
            }
            var seen = Set<PolicyChoice>()
            return result.filter { seen.insert($0).inserted }
        }
    }

    func validate() throws {
        _ = try policies
        guard days > 0 else { throw ValidationError("--days must be positive.") }
        guard bandwidth.bytes > 0 else { throw ValidationError("--bandwidth must be positive.") }
        guard (0 ... 1).contains(offlineProbability) else { throw ValidationError("--offline-probability must be in 0...1.") }
        guard (0 ... 1).contains(hintAccuracy) else { throw ValidationError("--hint-accuracy must be in 0...1.") }
        guard !(json && csv) else { throw ValidationError("Choose one of --json and --csv.") }
        if let tags, tags < 1 { throw ValidationError("--tags must be at least 1.") }
    }

    var device: DeviceSettings {
        var device = DeviceSettings(diskCapacity: disk.bytes)
        if let otherApps { device.otherAppsBytes = otherApps.bytes }
        if let otherAppsSwing { device.otherAppsSwing = otherAppsSwing.bytes }
        device.cacheBudget = budget?.bytes
        device.freeSpaceWatermark = watermark.bytes
        device.inUseLimit = inUseLimit.bytes
        device.bandwidth = Double(bandwidth.bytes)
        device.latency = latency
        device.offlineProbability = offlineProbability
        return device
    }

    func run() async throws {
        let device = self.device
        var script: SimulationScript
        var workloadName: String
        var simulatedDays = days
        let realCatalog = try catalog.map { try SimulatedCatalog(directory: URL(filePath: $0), distribution: distribution) }
        if let trace {
            let events = try TraceCodec().decode(Data(contentsOf: URL(filePath: trace)))
            script = try SimulationScript(trace: events, catalog: realCatalog, device: device, seed: seed)
            workloadName = "trace \(URL(filePath: trace).lastPathComponent)"
            simulatedDays = script.duration / 86_400
        } else {
            let kind = workload.workload
            let catalog = realCatalog ?? {
                var generator = kind.catalogGenerator(tagCount: tags)
                if let packSize { generator.packSize = packSize.distribution }
                if let sharedPackSize { generator.sharedPackSize = sharedPackSize.distribution }
                return generator.generate(seed: seed)
            }()
            script = kind.script(catalog: catalog, device: device, days: days, seed: seed, hintAccuracy: hintAccuracy,
                                   wrongHints: wrongHints)
            workloadName = kind.rawValue
        }
        if equalPriorities {
            script = script.withEqualPriorities()
            workloadName += " (equal priorities)"
        }
        if let recordTrace {
            try TraceCodec().encode(script.traceEvents).write(to: URL(filePath: recordTrace))
        }
        let scenario = SimulationReport.Scenario(
            workload: workloadName, catalog: script.catalog, days: simulatedDays, seed: seed, device: device)
        var simulator = Simulator(script: script, device: device)
        simulator.hintPrefetch = hintPrefetch.rule
        simulator.prefetchLearning = hintLearning.rule
        let report = SimulationReport(
            scenario: scenario, simulator: simulator, policies: try policies)
        if let svg {
            try Data(SVGChart(report: report).render().utf8).write(to: URL(filePath: svg))
        }
        if json {
            print(String(decoding: try report.json(), as: UTF8.self))
        } else if csv {
            print(report.csv(), terminator: "")
        } else {
            print(report.scenarioSummary())
            print()
            print(report.table(), terminator: "")
            if let svg { print("\nChart written to \(svg)") }
        }
    }
}

/// `--hint-prefetch`: make-room, free-space or off.
struct HintPrefetchArgument: ExpressibleByArgument {
    var rule: HintPrefetch

    init(rule: HintPrefetch) { self.rule = rule }

    init?(argument: String) {
        guard let rule = HintPrefetch(rawValue: argument.lowercased()) else { return nil }
        self.rule = rule
    }

    var defaultValueDescription: String { rule.rawValue }
}

/// `--hint-learning`: standard, off, or `make-room,prefetch[,memory]` thresholds.
struct HintLearningArgument: ExpressibleByArgument {
    var rule: PrefetchLearning.Rule

    init(rule: PrefetchLearning.Rule) { self.rule = rule }

    init?(argument: String) {
        switch argument.lowercased() {
        case "standard": rule = .standard
        case "off": rule = .never
        default:
            let numbers = argument.split(separator: ",").compactMap { Double($0.trimmingCharacters(in: .whitespaces)) }
            guard numbers.count == argument.split(separator: ",").count, (2 ... 3).contains(numbers.count),
                  numbers.allSatisfy({ (0 ... 1).contains($0) }) else { return nil }
            rule = .init(makeRoomFrom: numbers[0], prefetchFrom: numbers[1], memory: numbers.count == 3 ? numbers[2] : PrefetchLearning.Rule.standard.memory)
        }
    }

    var defaultValueDescription: String { "standard" }
}

/// `--wrong-hints`: neighbour or random (its raw values; lowercase as written).
extension WrongHints: ExpressibleByArgument {}

/// `--workload`: levels, openworld or travel.
struct WorkloadArgument: ExpressibleByArgument {
    var workload: Workload

    static let levels = WorkloadArgument(workload: .levels)

    init(workload: Workload) { self.workload = workload }

    init?(argument: String) {
        guard let workload = Workload(rawValue: argument.lowercased()) else { return nil }
        self.workload = workload
    }

    static var allValueStrings: [String] { Workload.allCases.map(\.rawValue) }

    var defaultValueDescription: String { workload.rawValue }
}
