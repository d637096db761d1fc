import ArgumentParser
import CODR
import Foundation
import Logging
import ODRBuilder
import ODRFormat
import ODRRuntime
import ODRServe
import ODRSimulation

/// `odrbench request`: the cost of a request on installed tags, and of opening a manager.
///
/// 1. `conditionallyBeginAccessingResources()` + `endAccessingResources()` on installed tags of a
///    catalog of --tags tags and --tags x --files-per-tag files: median and 99th percentile per
///    pair (targets: under 20 µs and under 200 µs), next to the same begin/end on a bare `Ledger`,
///    the least any request must do, and through the C API (libodr's `odr_request_conditionally_begin`
///    + `odr_request_end`, each pair timed next to a Swift pair of the same tag, alternating which
///    goes first; target: median within 1.1x of the Swift pairs of that loop), and
///    `anticipate(tags:likelihood:)` + `ResourceHint.end()` on the same tags (target: median under
///    20 µs; the tags are installed, so no prefetch starts: the figure is the hint's own cost).
/// 2. Opening a `ResourceManager` on a store with --installed installed packs (target: under
///    50 ms), next to opening the bare `ResourceStore` and listing its packs.
/// 3. What checking signatures adds to `prepare()`: the catalog is signed, and `prepare()` runs
///    with and without the builder's key trusted (target: under 1 ms added), next to the
///    signature and expiry check alone.
/// 4. The pairs of 1. on catalogs with two variant axes (`resolution` 1x/2x, `texture`
///    astc/etc2), by a manager that chooses `resolution=2x,1x` and `texture=astc` (same target:
///    variant resolution happens when the catalog is opened, so it must add nothing per request):
///    one where a request holds one pack, as in 1., and one where it holds three (common, 2x,
///    ASTC), which shows what each pack a request holds costs (its lease).
/// 5. The pairs of 1. in a game that shares its store (issue 43; target: median within 1.1x of
///    the same pairs with no peer downloading): the manager shares in this process
///    (`startSharing`, default limits) while a peer, `curl` in a child process pinned to the last
///    core, downloads the installed files of the first 200 tags and a 16 MiB file of the first
///    tag (again after every 100 small files) from it by digest over two connections, in a loop,
///    so that the share sends bytes at its rate limit (32 MiB/s by default), not only answers
///    small requests. Blocks of pairs alternate between no peer (paused with SIGSTOP; the
///    share listens, idle) and the peer downloading (SIGCONT), so the machine's drift hits both
///    alike. (Stopping the share between blocks is not possible on one port: the paused peer's
///    closed connections hold it.)
struct RequestBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "request",
        abstract: "Conditional begin + end on installed tags (10,000-tag catalog), and opening a manager.",
        discussion: """
            Generates an assets tree (one folder per tag, --files-per-tag small files in each), \
            builds it with the builder into a file:// catalog, installs the packs of the first \
            --installed tags into a store, then times:
              - --pairs conditional begin + end pairs on random installed tags, each
                timed alone; a bare Ledger begin/end of the same tags is the baseline;
                the same pairs through the C API (odr_request_conditionally_begin +
                odr_request_end), each timed next to a Swift pair of the same tag on
                a Swift manager open beside the C one (alternating which goes
                first), give the C API / Swift ratio;
              - anticipate(tags:likelihood:) + end() of a hint, on the same
                installed tags (no prefetch starts), each pair timed alone;
              - opening a ResourceManager on the store (--opens times; median and
                best), against opening the ResourceStore alone and listing its
                installed packs;
              - prepare() (--prepares times) on the signed catalog, by a manager that
                trusts the builder's key and by one that trusts none; the difference
                is what checking the signature costs, next to the check alone;
              - prepare() of a new version in which one tag's pack changed, by a
                manager on a copy of the store (once: the copy's catalog is rebuilt
                for it), the cost of an update check that finds one change;
              - the same pairs on two catalogs with two variant axes (--variant-tags
                tags), by a manager choosing resolution=2x,1x and texture=astc:
                one where each tag's files are all variants of one axis (the
                device holds one pack per request, as above), one where each tag
                has common files and both axes (it holds three); 0 skips them;
              - --sharing-pairs pairs while the manager shares its store in this
                process (startSharing, default limits) and a peer (curl, a child
                process pinned to the last core) downloads its files by digest in
                a loop, in blocks alternating with as many pairs with the peer
                paused (the share idle); 0 skips them.

            Targets: median pair < 20 us, 99th percentile < 200 us (also with variants); C API \
            pair within 1.1x of Swift's; while a peer downloads from the share, median within 1.1x of no peer; hint anticipate + end median < 20 us; opening < 50 ms; signatures add < 1 ms to prepare(); \
            with --split-metadata, prepare() of a version that changed one pack < 100 ms.

            Example: swift run -c release odrbench request --tags 10000 --installed 1000 [--split-metadata]
            """
    )

    @Option(help: "Tags in the generated catalog.")
    var tags = 10_000

    @Option(name: .customLong("files-per-tag"), help: "Files in each tag's folder.")
    var filesPerTag = 10

    @Option(help: "Tags whose packs are installed before timing (one pack each).")
    var installed = 1_000

    @Option(help: "Conditional begin + end pairs to time.")
    var pairs = 200_000

    @Option(help: "Times to open a manager on the store.")
    var opens = 7

    @Option(help: "Times to run prepare() with and without trusted keys.")
    var prepares = 41

    @Flag(name: .customLong("split-metadata"), help: "Build the catalog with split metadata (format 3), as odrpack build --split-metadata does.")
    var splitMetadata = false

    @Option(name: .customLong("variant-tags"), help: "Tags in the generated two-axis variant catalog (0: skip that case).")
    var variantTags = 10_000

    @Option(name: .customLong("sharing-pairs"), help: "Pairs timed while a peer downloads from the share, and as many with no peer (0: skip).")
    var sharingPairs = 100_000

    @Option(help: ArgumentHelp(
        "Keep the generated assets, catalog and store in this folder, and reuse them when it already holds a run's.",
        discussion: "Lets a profiler (perf record -- odrbench request --work DIR) skip the minute of setup on later runs.",
        valueName: "dir"))
    var work: String?

    func validate() throws {
        guard tags > 0, filesPerTag > 0, pairs > 0, opens > 0, prepares > 0 else {
            throw ValidationError("--tags, --files-per-tag, --pairs, --opens and --prepares must be positive.")
        }
        guard sharingPairs >= 0 else { throw ValidationError("--sharing-pairs must be 0 (skip) or positive.") }
        guard (1...tags).contains(installed) else { throw ValidationError("--installed must be between 1 and --tags.") }
        guard variantTags == 0 || (installed...).contains(variantTags) else {
            throw ValidationError("--variant-tags must be 0 (skip) or at least --installed.")
        }
    }

    func run() async throws {
        let work = self.work.map { URL(filePath: $0, directoryHint: .isDirectory) }
            ?? FileManager.default.temporaryDirectory.appending(path: "odrbench-request-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { if self.work == nil { try? FileManager.default.removeItem(at: work) } }
        let names = (0..<tags).map { String(format: "t%05d", $0) }
        let clock = ContinuousClock()

        print("== odrbench request: \(tags) tags, \(tags * filesPerTag) files, \(installed) installed ==")
        let assets = work.appending(path: "assets"), catalog = work.appending(path: "catalog")
        let storeURL = work.appending(path: "store")
        let catalogURL = URL(filePath: catalog.path, directoryHint: .isDirectory)
        // A finished setup leaves this file; its text names the parameters it was made with.
        let setupMark = work.appending(path: "setup-done"), setup = "\(tags) \(filesPerTag) \(installed) signed\(splitMetadata ? " split" : "")\(sharingPairs > 0 ? " peer16" : "")"
        let keyURL = work.appending(path: "bench.key")
        if (try? String(contentsOf: setupMark, encoding: .utf8)) == setup {
            print("reusing the catalog and store in \(work.path)")
        } else {
            for item in [assets, catalog, storeURL, keyURL, PublicSigningKey.fileURL(forPrivateKeyAt: keyURL)] {
                try? FileManager.default.removeItem(at: item)
            }
            try SigningKey.generate().write(to: keyURL)
            let generate = try clock.measure { try generateAssets(at: assets, names: names) }
            print("generated the assets in \(format(generate.seconds))")
            var options = BuildOptions(assets: assets, output: catalog)
            options.concurrency = 2
            options.signing = try CatalogSigning(keyFiles: [keyURL])
            options.splitMetadata = splitMetadata
            let report = try await measuring("built the catalog (\(tags) packs)") {
                try await CatalogBuilder(options: options).build()
            }
            guard report.packs.count >= tags else { throw ValidationFailure("expected one pack per tag, got \(report.packs.count)") }
            try await measuring("installed \(installed) packs from file://") {
                try await install(tags: Array(names.prefix(installed)), catalog: catalogURL, store: storeURL)
            }
            try Data(setup.utf8).write(to: setupMark)
        }

        // 2. Opening, first: later runs would find the database in the page cache anyway.
        var managerOpens: [Double] = [], storeOpens: [Double] = [], uncleanOpens: [Double] = [], firstLookups: [Double] = []
        var configuration = ResourceManager.Configuration(catalogURL: catalogURL, storeDirectory: storeURL)
        configuration.freeSpaceWatermark = 0
        for _ in 0..<opens {
            storeOpens.append(try clock.measure {
                let store = try ResourceStore(directory: storeURL)
                guard try store.installedPackIDs().count == installed else { throw ValidationFailure("the store lost packs") }
            }.seconds)
            // Closing the manager (freeing the catalog) is not part of opening it.
            var opened: ResourceManager?
            managerOpens.append(try clock.measure {
                opened = try ResourceManager(configuration: configuration)
            }.seconds)
            guard opened?.currentVersion != nil else { throw ValidationFailure("the manager found no stored catalog") }
            do {
                // Files stay in the compact manifest's bytes at open; the first lookup reads one record.
                let request = ResourceRequest(tags: [names[0]], manager: opened!)
                guard await request.conditionallyBeginAccessingResources() else { throw ValidationFailure("\(names[0]) is not installed") }
                var found: String?
                firstLookups.append(clock.measure { found = request.path(forResource: "\(names[0])/f0.txt") }.seconds)
                guard let found, FileManager.default.fileExists(atPath: found) else { throw ValidationFailure("the first file lookup failed") }
                try request.endAccessingResources()
            }
            opened = nil
            // As after a crash: another store is open, so nobody vouches for a clean close and
            // opening checks every installed entry.
            let holder = try ResourceStore(directory: storeURL)
            uncleanOpens.append(try clock.measure {
                opened = try ResourceManager(configuration: configuration)
            }.seconds)
            guard opened?.store.repairReport.checkedEveryEntry == true else { throw ValidationFailure("expected a full check") }
            opened = nil
            withExtendedLifetime(holder) {}
        }

        // 1. Requests on installed tags.
        var random = SimulationRandom(seed: 42)
        let picks = (0..<pairs).map { _ in names[Int(random.next() % UInt64(installed))] }
        var durations: [Double] = []
        let baseline: [Double], hintDurations: [Double], compared: (swift: [Double], c: [Double])
        do {
            let manager = try ResourceManager(configuration: configuration)
            guard manager.currentVersion != nil else { throw ValidationFailure("the manager found no stored catalog") }
            durations = try await swiftPairs(manager: manager, picks: picks)
            baseline = try ledgerPairs(manager: manager, picks: picks)
            hintDurations = try hintPairs(manager: manager, picks: picks)
            compared = try await comparedPairs(swift: manager, catalog: catalogURL, store: storeURL, picks: picks)
        }

        let median = durations.percentileOfSorted(0.5), p99 = durations.percentileOfSorted(0.99)
        print("")
        print("conditional begin + end, \(pairs) pairs on installed tags:")
        print("  median \(micro(median)), p90 \(micro(durations.percentileOfSorted(0.9))), p99 \(micro(p99)), max \(micro(durations.last ?? 0))")
        print("  baseline, bare Ledger begin/end of the same tags: median \(micro(baseline.percentileOfSorted(0.5))), p99 \(micro(baseline.percentileOfSorted(0.99)))")
        print("  target median < 20 us: \(median < 20e-6 ? "met" : "NOT met"); p99 < 200 us: \(p99 < 200e-6 ? "met" : "NOT met")")
        let cMedian = compared.c.percentileOfSorted(0.5), swiftMedian = compared.swift.percentileOfSorted(0.5)
        let ratio = cMedian / max(swiftMedian, 1e-9)
        print("  through the C API (odr_request_conditionally_begin + odr_request_end), same pairs, each next to the Swift pair of its tag:")
        print("    C median \(micro(cMedian)), p99 \(micro(compared.c.percentileOfSorted(0.99))); Swift in the same loop: median \(micro(swiftMedian)), p99 \(micro(compared.swift.percentileOfSorted(0.99)))")
        print(String(format: "  C API / Swift median: %.2fx; target < 1.1x: %@", ratio, ratio < 1.1 ? "met" : "NOT met"))
        let hintMedian = hintDurations.percentileOfSorted(0.5)
        print("anticipate + end of a hint, \(pairs) pairs on the same installed tags:")
        print("  median \(micro(hintMedian)), p90 \(micro(hintDurations.percentileOfSorted(0.9))), p99 \(micro(hintDurations.percentileOfSorted(0.99))), max \(micro(hintDurations.last ?? 0))")
        print("  target median < 20 us: \(hintMedian < 20e-6 ? "met" : "NOT met")")
        managerOpens.sort()
        storeOpens.sort()
        uncleanOpens.sort()
        let openMedian = managerOpens.percentileOfSorted(0.5)
        print("opening a manager on a store with \(installed) installed packs (catalog of \(tags) tags, \(tags * filesPerTag) files):")
        print("  after a clean close: median \(milli(openMedian)), best \(milli(managerOpens[0])) over \(opens) opens")
        print("  after a crash (every installed entry checked): median \(milli(uncleanOpens.percentileOfSorted(0.5)))")
        print("  baseline, opening the store alone and listing its packs: median \(milli(storeOpens.percentileOfSorted(0.5)))")
        print("  then the first file lookup (path(forResource:)): median \(micro(firstLookups.sorted().percentileOfSorted(0.5)))")
        print("  target < 50 ms: \(openMedian < 0.05 ? "met" : "NOT met")")

        try await measureSignatureCost(configuration: configuration, key: try PublicSigningKey.load(from: PublicSigningKey.fileURL(forPrivateKeyAt: keyURL)),
                                       catalog: catalog)
        try await measureUpdatePrepare(work: work, key: keyURL, name: names[0])
        if variantTags > 0 { try await measureVariantPairs(work: work, plainMedian: median) }
        if sharingPairs > 0 { try await measureWhileSharing(configuration: configuration, names: names, work: work) }
    }

    /// 5. Conditional begin + end pairs while the manager shares its store and a peer downloads
    /// from it, against the same pairs with the peer paused, in alternating blocks (see the type's
    /// documentation).
    private func measureWhileSharing(configuration: ResourceManager.Configuration, names: [String], work: URL) async throws {
        let manager = try ResourceManager(configuration: configuration)
        // What the peer downloads: the installed files of the first tags, by digest.
        let shared = Array(names.prefix(min(installed, 200)))
        var digests: [String] = []
        for name in shared {
            let request = ResourceRequest(tags: [name], manager: manager)
            guard await request.conditionallyBeginAccessingResources() else { throw ValidationFailure("\(name) is not installed") }
            for file in 0..<filesPerTag {
                guard let path = request.path(forResource: "\(name)/f\(file).txt") else { throw ValidationFailure("\(name)/f\(file).txt is not installed") }
                digests.append(try ContentHash.sha256Hex(ofFileAt: URL(filePath: path)))
            }
            try request.endAccessingResources()
        }
        // And the first tag's 16 MiB file, which carries most of the peer's bytes: asked again
        // after every 100 small files, so that one of the peer's two connections is nearly always
        // pulling bytes at the share's rate limit while the other makes requests.
        let first = ResourceRequest(tags: [names[0]], manager: manager)
        guard await first.conditionallyBeginAccessingResources(), let big = first.path(forResource: "\(names[0])/peer.bin") else {
            throw ValidationFailure("\(names[0])/peer.bin is not installed")
        }
        let bigDigest = try ContentHash.sha256Hex(ofFileAt: URL(filePath: big))
        try first.endAccessingResources()
        digests = stride(from: 0, to: digests.count, by: 100).flatMap { [bigDigest] + digests[$0..<min($0 + 100, digests.count)] }
        let quiet = Logger(label: "odrbench.share") { _ in SwiftLogNoOpLogHandler() }
        let server = try await manager.startSharing(port: 0, logger: quiet)
        let port = server.port
        let list = work.appending(path: "share-urls-\(getpid()).txt")
        defer { try? FileManager.default.removeItem(at: list) }
        try Data(digests.map { "url = \"http://127.0.0.1:\(port)/odr/v1/sha256/\($0)\"\noutput = \"/dev/null\"\n" }.joined().utf8).write(to: list)
        // The peer: curl over two connections (the share's per-address limit), in a loop, in a
        // process group of its own so SIGSTOP and SIGCONT reach the curl that runs.
        let cores = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        var command = ["sh", "-c", "while :; do curl -s --parallel --parallel-max 2 -K '\(list.path)'; done"]
        if cores > 1, FileManager.default.isExecutableFile(atPath: "/usr/bin/taskset") { command = ["/usr/bin/taskset", "-c", "\(cores - 1)"] + command }
        let peer = try ChildProcess.spawn(command, stdout: "/dev/null", stderr: "/dev/null", ownGroup: true)
        defer {
            kill(-peer, SIGKILL)
            _ = try? ChildProcess.wait(peer, name: "the peer")
        }
        kill(-peer, SIGSTOP)

        let blocks = 20, perBlock = max(1, sharingPairs / blocks)
        var random = SimulationRandom(seed: 43)
        var alone: [Double] = [], sharing: [Double] = []
        var sent: Int64 = 0, served = 0, sharingSeconds = 0.0
        for block in 0..<(2 * blocks) {
            let shares = block % 2 == 1
            if shares {
                let resumed = server.bytesSent
                kill(-peer, SIGCONT)
                // Timing starts once the peer downloads again (at most 5 s).
                let deadline = ContinuousClock.now + .seconds(5)
                while server.bytesSent == resumed, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(2)) }
                guard server.bytesSent > resumed else { throw ValidationFailure("the peer (curl) downloaded nothing from the share at \(server.baseURL)") }
            }
            let (sentBefore, servedBefore, start) = (server.bytesSent, server.requestCount, ContinuousClock.now)
            for _ in 0..<perBlock {
                let request = ResourceRequest(tags: [names[Int(random.next() % UInt64(installed))]], manager: manager)
                let duration = try await Self.timedPair(request)
                if shares { sharing.append(duration) } else { alone.append(duration) }
            }
            if shares {
                sharingSeconds += (ContinuousClock.now - start).seconds
                sent += server.bytesSent - sentBefore
                served += server.requestCount - servedBefore
                kill(-peer, SIGSTOP)
                // The share sends what the stopped peer's socket buffers still take, then has
                // nothing it can send: the next block starts once no byte went out for 20 ms (at
                // most a second). Waiting for the share to be idle would wait forever for the rest
                // of a 16 MiB body.
                var last = server.bytesSent
                let settle = ContinuousClock.now + .seconds(1)
                while ContinuousClock.now < settle {
                    try await Task.sleep(for: .milliseconds(20))
                    let now = server.bytesSent
                    if now == last { break }
                    last = now
                }
            }
        }
        await server.stop()
        alone.sort()
        sharing.sort()
        let aloneMedian = alone.percentileOfSorted(0.5), sharingMedian = sharing.percentileOfSorted(0.5)
        let ratio = sharingMedian / max(aloneMedian, 1e-9)
        print("conditional begin + end while sharing the store (\(alone.count) pairs each, in \(blocks) alternating blocks):")
        print("  sharing, no peer: median \(micro(aloneMedian)), p99 \(micro(alone.percentileOfSorted(0.99)))")
        print("  sharing, a peer downloading: median \(micro(sharingMedian)), p99 \(micro(sharing.percentileOfSorted(0.99)))"
            + String(format: "; the peer got %.0f files/s, %.1f MiB/s", Double(served) / max(sharingSeconds, 1e-9), Double(sent) / max(sharingSeconds, 1e-9) / 1_048_576))
        print(String(format: "  peer downloading / no peer median: %.2fx; target < 1.1x: %@", ratio, ratio < 1.1 ? "met" : "NOT met"))
    }

    /// Conditional begin + end of each pick on `manager`, each pair timed alone; sorted.
    private func swiftPairs(manager: ResourceManager, picks: [String]) async throws -> [Double] {
        var durations: [Double] = []
        durations.reserveCapacity(picks.count)
        for name in picks {
            let request = ResourceRequest(tags: [name], manager: manager)
            durations.append(try await Self.timedPair(request))
        }
        return durations.sorted()
    }

    /// One conditional begin + end of `request`, timed. The caller holds `request`, so freeing it
    /// is not timed (nor is `odr_request_destroy` in ``timedPair(_:_:)``).
    private static func timedPair(_ request: ResourceRequest) async throws -> Double {
        let start = ContinuousClock.now
        guard await request.conditionallyBeginAccessingResources() else {
            throw ValidationFailure("\(request.tags.sorted()) is installed, yet the conditional begin failed")
        }
        try request.endAccessingResources()
        return (ContinuousClock.now - start).seconds
    }

    /// `anticipate` + `end` of a hint of each pick on `manager`, each pair timed alone; sorted.
    private func hintPairs(manager: ResourceManager, picks: [String]) throws -> [Double] {
        let clock = ContinuousClock()
        var durations: [Double] = []
        durations.reserveCapacity(picks.count)
        for name in picks {
            let start = clock.now
            let hint = try manager.anticipate(tags: [name], likelihood: 0.7)
            try hint.end()
            durations.append((clock.now - start).seconds)
        }
        return durations.sorted()
    }

    /// The device's choice in the variant cases: 2x (else 1x), and ASTC textures.
    static let variantChoice = VariantPreferences(["resolution": ["2x", "1x"], "texture": ["astc"]])

    /// The two-axis catalogs of 4., by what a request for one tag holds.
    enum VariantShape: String, CaseIterable {
        /// Every file of a tag is a variant on one axis (even tags resolution, odd tags texture):
        /// two packs per tag, of which the device takes one, as in the plain catalog. The same
        /// requests as 1., so the figure shows what resolving variants adds.
        case onePackPerRequest = "one-pack"
        /// Each tag's plain files plus `img.png`/`img@2x.png` and `tex.astc.ktx2`/`tex.etc2.ktx2`:
        /// five packs per tag, of which the device takes three (common, 2x, ASTC), each a lease.
        case commonPlusBothAxes = "three-packs"

        /// Packs per tag in the catalog, and of those the device takes.
        var packs: (built: Int, chosen: Int) { self == .onePackPerRequest ? (2, 1) : (5, 3) }
    }

    /// 4. The pairs on two-axis catalogs, by a manager that chooses 2x and ASTC.
    private func measureVariantPairs(work: URL, plainMedian: Double) async throws {
        for shape in VariantShape.allCases {
            try await measureVariantPairs(shape, work: work, plainMedian: plainMedian)
        }
    }

    private func measureVariantPairs(_ shape: VariantShape, work: URL, plainMedian: Double) async throws {
        let clock = ContinuousClock()
        let names = (0..<variantTags).map { String(format: "v%05d", $0) }
        let assets = work.appending(path: "variant-\(shape.rawValue)-assets"), catalog = work.appending(path: "variant-\(shape.rawValue)-catalog")
        let storeURL = work.appending(path: "variant-\(shape.rawValue)-store")
        let catalogURL = URL(filePath: catalog.path, directoryHint: .isDirectory)
        let setupMark = work.appending(path: "variant-\(shape.rawValue)-setup-done"), setup = "\(variantTags) \(filesPerTag) \(installed) \(shape.rawValue)"
        print("")
        if (try? String(contentsOf: setupMark, encoding: .utf8)) == setup {
            print("reusing the two-axis catalog (\(shape.rawValue)) and store in \(work.path)")
        } else {
            for item in [assets, catalog, storeURL] { try? FileManager.default.removeItem(at: item) }
            let generate = try clock.measure { try generateVariantAssets(shape, at: assets, names: names) }
            print("generated the two-axis assets (\(shape.rawValue)) in \(format(generate.seconds))")
            var options = BuildOptions(assets: assets, output: catalog)
            options.concurrency = 2
            options.splitMetadata = false  // whole: the manager lists every tag at once, as measured before split metadata was the default
            let report = try await measuring("built the two-axis catalog (\(variantTags) tags, \(shape.packs.built) packs each)") {
                try await CatalogBuilder(options: options).build()
            }
            guard report.packs.count >= shape.packs.built * variantTags else {
                throw ValidationFailure("expected \(shape.packs.built) packs per tag, got \(report.packs.count) for \(variantTags) tags")
            }
            try await measuring("installed the chosen packs of \(installed) tags from file://") {
                try await install(tags: Array(names.prefix(installed)), catalog: catalogURL, store: storeURL, variants: Self.variantChoice)
            }
            try Data(setup.utf8).write(to: setupMark)
        }
        var configuration = ResourceManager.Configuration(catalogURL: catalogURL, storeDirectory: storeURL)
        configuration.freeSpaceWatermark = 0
        configuration.variants = Self.variantChoice
        let manager = try ResourceManager(configuration: configuration)
        let packsPerTag = manager.tags.first?.packs.count ?? 0
        guard packsPerTag == shape.packs.chosen else {
            throw ValidationFailure("the 2x + ASTC device should need \(shape.packs.chosen) pack(s) per tag, not \(packsPerTag)")
        }
        var random = SimulationRandom(seed: 43)
        let picks = (0..<pairs).map { _ in names[Int(random.next() % UInt64(installed))] }
        let durations = try await swiftPairs(manager: manager, picks: picks)
        let median = durations.percentileOfSorted(0.5), p99 = durations.percentileOfSorted(0.99)
        print("conditional begin + end, two variant axes, \(variantTags) tags x \(shape.packs.built) packs (the device holds \(shape.packs.chosen) per request), \(pairs) pairs:")
        print("  median \(micro(median)), p90 \(micro(durations.percentileOfSorted(0.9))), p99 \(micro(p99)), max \(micro(durations.last ?? 0))")
        print(String(format: "  / plain median (1 pack per request): %.2fx", median / max(plainMedian, 1e-9)))
        print("  target median < 20 us: \(median < 20e-6 ? "met" : "NOT met"); p99 < 200 us: \(p99 < 200e-6 ? "met" : "NOT met")")
    }

    /// The assets of a two-axis catalog (see ``VariantShape``).
    private func generateVariantAssets(_ shape: VariantShape, at assets: URL, names: [String]) throws {
        try FileManager.default.createDirectory(at: assets, withIntermediateDirectories: true)
        func write(_ text: String, _ path: String) throws {
            let url = assets.appending(path: path)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }
        for (index, name) in names.enumerated() {
            for file in 0..<filesPerTag {
                let text = String(repeating: "\(name) file \(file): tile data 0123456789\n", count: 3)
                switch shape {
                case .commonPlusBothAxes:
                    try write(text, "\(name)/f\(file).txt")
                case .onePackPerRequest:
                    let variants = index % 2 == 0 ? ["f\(file).png", "f\(file)@2x.png"] : ["f\(file).astc.ktx2", "f\(file).etc2.ktx2"]
                    for variant in variants { try write(text + variant, "\(name)/\(variant)") }
                }
            }
            if shape == .commonPlusBothAxes {
                for variant in ["img.png", "img@2x.png", "tex.astc.ktx2", "tex.etc2.ktx2"] {
                    try write("\(name) \(variant): texel data 0123456789\n", "\(name)/\(variant)")
                }
            }
        }
        let rules = names.map { "\"\($0)\": [\"\($0)\"]" }.joined(separator: ",\n")
        let variants = """
            "variants": [
              { "axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x", "files": ["**/*.png"] },
              { "axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"] }
            ]
            """
        try Data("{\"tags\": {\n\(rules)\n},\n\(variants)\n}\n".utf8).write(to: assets.appending(path: TagRules.defaultFileName))
    }

    /// 3. `prepare()` by a manager trusting the builder's key against one trusting none (each in
    /// turn, so drift in the machine's load hits both alike), and the signature check alone.
    private func measureSignatureCost(configuration: ResourceManager.Configuration, key: PublicSigningKey, catalog: URL) async throws {
        let clock = ContinuousClock()
        var trusting = configuration
        trusting.trustedKeys = [key]
        let plain = try ResourceManager(configuration: configuration), checked = try ResourceManager(configuration: trusting)
        var without: [Double] = [], with: [Double] = []
        for round in 0..<(prepares + 1) {
            let a = try await clock.measure { try await plain.prepare() }.seconds
            let b = try await clock.measure { try await checked.prepare() }.seconds
            // The first round warms caches for both.
            if round > 0 { without.append(a); with.append(b) }
        }
        let index = try CatalogIndex.decode(from: Data(contentsOf: catalog.appending(path: CatalogIndex.fileName)))
        let trust = try TrustedKeySet(keys: [key])
        var checks: [Double] = []
        for _ in 0..<1_000 {
            checks.append(try clock.measure {
                _ = try index.verifySignatures(trusting: trust)
                guard let expiry = index.expiryDate, expiry > Date() else { throw ValidationFailure("the bench catalog expired") }
            }.seconds)
        }
        without.sort()
        with.sort()
        checks.sort()
        let added = with.percentileOfSorted(0.5) - without.percentileOfSorted(0.5)
        print("prepare() on the signed catalog (\(prepares) runs each, file://):")
        print("  trusting the builder's key: median \(milli(with.percentileOfSorted(0.5))); trusting no key (baseline): median \(milli(without.percentileOfSorted(0.5)))")
        print("  added by checking signatures: \(micro(added)) (the check alone: median \(micro(checks.percentileOfSorted(0.5))), catalog.json of \(index.versions.count) version(s))")
        print("  target < 1 ms: \(added < 0.001 ? "met" : "NOT met")")
    }

    /// `prepare()` of a version that changed one file of tag `name`, on copies of the assets,
    /// catalog and store (so the originals stay reusable with `--work`): the copy's catalog is
    /// rebuilt incrementally with the change, and a manager on the copied store, with the version
    /// before loaded from the store, prepares once. For a split catalog that is fetching `catalog.json`, the new top
    /// manifest, one bin and one table, and assembling the part the store uses from its cache.
    private func measureUpdatePrepare(work: URL, key: URL, name: String) async throws {
        let copy = work.appending(path: "update-copy")
        try? FileManager.default.removeItem(at: copy)
        try FileManager.default.createDirectory(at: copy, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: copy) }
        for item in ["assets", "catalog", "store"] {
            try FileManager.default.copyItem(at: work.appending(path: item), to: copy.appending(path: item))
        }
        let assets = copy.appending(path: "assets"), catalog = copy.appending(path: "catalog")
        try Data("\(name) changed for the update bench\n".utf8).write(to: assets.appending(path: "\(name)/f0.txt"))
        var options = BuildOptions(assets: assets, output: catalog)
        options.concurrency = 2
        options.signing = try CatalogSigning(keyFiles: [key])
        options.splitMetadata = splitMetadata
        _ = try await measuring("rebuilt the copy with one changed file") { try await CatalogBuilder(options: options).build() }
        // The copied store follows the original catalog's URL: the rebuilt copy takes its place
        // while prepare() runs, and the original comes back after.
        let original = work.appending(path: "catalog"), aside = work.appending(path: "catalog.original")
        try FileManager.default.moveItem(at: original, to: aside)
        try FileManager.default.moveItem(at: catalog, to: original)
        defer {
            try? FileManager.default.moveItem(at: original, to: catalog)
            try? FileManager.default.moveItem(at: aside, to: original)
        }
        var configuration = ResourceManager.Configuration(catalogURL: URL(filePath: original.path, directoryHint: .isDirectory),
                                                          storeDirectory: copy.appending(path: "store"))
        configuration.freeSpaceWatermark = 0
        let manager = try ResourceManager(configuration: configuration)
        // As a game that runs on the stored version checks for an update: that one is loaded first.
        let before = try await manager.loadCatalog(online: false).version
        let clock = ContinuousClock()
        let elapsed = try await clock.measure { _ = try await manager.prepare() }.seconds
        guard let after = manager.currentVersion, after == before + 1 else {
            throw ValidationFailure("prepare() did not move from version \(before) to the next")
        }
        print("prepare() of version \(after), which changed the pack of \(name) (\(splitMetadata ? "split metadata" : "whole manifest"), file://, once):")
        print("  \(milli(elapsed))\(splitMetadata ? "; target < 100 ms: \(elapsed < 0.1 ? "met" : "NOT met")" : " (the < 100 ms target is for split metadata: --split-metadata)")")
    }

    /// One folder per tag, small text files in each (distinct contents, so nothing deduplicates),
    /// and rules that give each folder its tag.
    private func generateAssets(at assets: URL, names: [String]) throws {
        for name in names {
            let folder = assets.appending(path: name)
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            for file in 0..<filesPerTag {
                let text = String(repeating: "\(name) file \(file): tile data 0123456789\n", count: 3)
                try Data(text.utf8).write(to: folder.appending(path: "f\(file).txt"))
            }
        }
        if sharingPairs > 0, let first = names.first {
            // What a peer pulls from a game that shares is mostly large files: without one, the
            // peer's load on the share would be requests, not bytes.
            var random = SplitMix64(seed: 43)
            var bytes = [UInt8](repeating: 0, count: Self.peerFileBytes)
            random.fill(&bytes)
            try Data(bytes).write(to: assets.appending(path: "\(first)/peer.bin"))
        }
        let rules = names.map { "\"\($0)\": [\"\($0)\"]" }.joined(separator: ",\n")
        try Data("{\"tags\": {\n\(rules)\n}}\n".utf8).write(to: assets.appending(path: TagRules.defaultFileName))
    }

    /// The size of the incompressible file the first tag holds when sharing is measured: 16 MiB.
    static let peerFileBytes = 16 << 20

    /// Installs the packs of `tags` without flushing (the figures are about reading, not installing).
    private func install(tags: [String], catalog: URL, store storeURL: URL, variants: VariantPreferences = VariantPreferences()) async throws {
        let store = try ResourceStore(directory: storeURL, synchronousWrites: false)
        let engine = try TransferEngine()
        let client = CatalogClient(catalogURL: catalog, store: store, transport: engine, variants: variants)
        // A split catalog describes the tags when they are first used; a whole one already does.
        let snapshot = try await client.describe(Set(tags), in: try await client.snapshot())
        var installer = PackInstaller(store: store, transport: engine)
        installer.maximumConcurrentInstalls = 4
        let summary = try await installer.install(try snapshot.packs(forTags: tags), from: snapshot)
        let expected = snapshot.lookup.packs(forTags: tags).count
        guard summary.installed.count == expected else {
            throw ValidationFailure("installed \(summary.installed.count) packs, expected \(expected)")
        }
    }

    /// The C API against Swift on the same pairs: for each pick, a conditional begin + end through
    /// the C API (`odr_request_conditionally_begin` + `odr_request_end`, on a manager the C API
    /// opens beside `swift`) and one through Swift on `swift`, each timed alone, alternating which
    /// goes first; creating and freeing requests is not timed. Both sorted.
    ///
    /// Timing the two side by side, rather than all the Swift pairs and then all the C pairs, keeps
    /// the ratio about the two APIs: this 2-core machine's speed drifts between phases a few seconds
    /// apart, and whatever ran in between (the ledger and hint pairs) leaves the heap and caches to
    /// whichever phase comes next. Run in sequence, C / Swift ranged 1.00x-1.19x between runs of
    /// the same build.
    private func comparedPairs(swift manager: ResourceManager, catalog: URL, store: URL, picks: [String]) async throws
        -> (swift: [Double], c: [Double])
    {
        var config: OpaquePointer?
        try Self.check(odr_config_create(&config), "odr_config_create")
        defer { odr_config_free(config) }
        try Self.check(odr_config_set_string(config, ODR_OPT_CATALOG_URL, catalog.absoluteString), "catalog URL")
        try Self.check(odr_config_set_string(config, ODR_OPT_STORE_DIRECTORY, store.path), "store directory")
        try Self.check(odr_config_set_int(config, ODR_OPT_FREE_SPACE_WATERMARK, 0), "watermark")
        var cManager: OpaquePointer?
        try Self.check(odr_manager_create(config, &cManager), "odr_manager_create")
        defer { odr_manager_destroy(cManager) }
        var swift: [Double] = [], c: [Double] = []
        swift.reserveCapacity(picks.count)
        c.reserveCapacity(picks.count)
        for (index, name) in picks.enumerated() {
            let request = ResourceRequest(tags: [name], manager: manager)
            var handle: OpaquePointer?
            try name.withCString { tag in
                var tags: [UnsafePointer<CChar>?] = [tag]
                try Self.check(odr_request_create(cManager, &tags, 1, &handle), "odr_request_create")
            }
            defer { odr_request_destroy(handle) }
            if index.isMultiple(of: 2) {
                swift.append(try await Self.timedPair(request))
                c.append(try Self.timedPair(handle, name))
            } else {
                c.append(try Self.timedPair(handle, name))
                swift.append(try await Self.timedPair(request))
            }
        }
        return (swift.sorted(), c.sorted())
    }

    /// One conditional begin + end of the C request `handle` (for tag `name`), timed.
    private static func timedPair(_ handle: OpaquePointer?, _ name: String) throws -> Double {
        var began: Int32 = 0
        let start = ContinuousClock.now
        let begin = odr_request_conditionally_begin(handle, &began)
        let end = odr_request_end(handle)
        let duration = (ContinuousClock.now - start).seconds
        try check(begin, "odr_request_conditionally_begin")
        guard began == 1 else { throw ValidationFailure("\(name) is installed, yet the C API's conditional begin failed") }
        try check(end, "odr_request_end")
        return duration
    }

    private static func check(_ status: odr_status, _ what: String) throws {
        guard status == ODR_OK else {
            throw ValidationFailure("\(what): \(String(cString: odr_status_name(status))): \(String(cString: odr_error_message()))")
        }
    }

    /// Times a bare ledger's begin + end of the same tags, each pair alone.
    private func ledgerPairs(manager: ResourceManager, picks: [String]) throws -> [Double] {
        let manifest = manager.tags
        var packs: [String: (bytes: Int64, tags: [String])] = [:]
        for tag in manifest {
            for pack in tag.packs { packs[pack, default: (0, [])].tags.append(tag.name) }
        }
        let catalog = try LedgerCatalog(
            tags: manifest.map(\.name),
            packs: packs.sorted { $0.key < $1.key }.map { .init(id: $0.key, bytes: 1, tags: $0.value.tags) })
        var ledger = Ledger(catalog: catalog)
        let clock = ContinuousClock()
        var durations: [Double] = []
        durations.reserveCapacity(picks.count)
        for name in picks {
            guard let tag = catalog.tag(named: name) else { throw ValidationFailure("no tag \(name)") }
            let start = clock.now
            _ = try ledger.begin([tag])
            _ = try ledger.end([tag])
            durations.append((clock.now - start).seconds)
        }
        return durations.sorted()
    }

    private func measuring<T>(_ what: String, _ body: () async throws -> T) async throws -> T {
        let start = ContinuousClock.now
        let value = try await body()
        print("\(what) in \(format((ContinuousClock.now - start).seconds))")
        return value
    }

    private func format(_ seconds: Double) -> String { String(format: "%.1f s", seconds) }
    private func micro(_ seconds: Double) -> String { String(format: "%.1f us", seconds * 1e6) }
    private func milli(_ seconds: Double) -> String { String(format: "%.1f ms", seconds * 1e3) }
}
