import ArgumentParser
import ODRRuntime
import ODRSimulation

/// `odrbench sim`: simulated tag requests per second under the runtime's purge policy, and the wall
/// time of a Belady's MIN run, against a ledger-only replay of the same script as the baseline.
struct SimBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sim",
        abstract: "odrsim throughput: requests per second (default policy) and a 1-million-request Belady run.",
        discussion: """
            Generates a travel workload (Zipf popularity) on a catalog of --tags tags and an 8 GiB \
            device, then times:

            1. the default policy over --requests requests (target: at least 2 million requests \
            per second on one core), against the baseline of beginning and ending the same \
            requests on a bare Ledger (the least any simulation must do);
            2. Belady's MIN over --belady-requests requests, including reading the future \
            (target: under 5 seconds).

            Each figure is the best of --runs. Generating the script is not timed.
            """
    )

    @Option(help: "Tags in the generated catalog.")
    var tags = 1000

    @Option(help: "Requests timed under the default policy.")
    var requests = 2_000_000

    @Option(help: "Requests timed under Belady's MIN.")
    var beladyRequests = 1_000_000

    @Option(help: "Runs of each measurement; the best is reported.")
    var runs = 3

    func validate() throws {
        guard tags > 0, requests > 0, beladyRequests > 0, runs > 0 else {
            throw ValidationError("Tags, requests and runs must be positive.")
        }
    }

    func run() async throws {
        let device = DeviceSettings(diskCapacity: 8 << 30)
        let catalog = Workload.travel.catalogGenerator(tagCount: tags).generate(seed: 1)
        print("Generating \(requests) and \(beladyRequests) requests over \(catalog.tags.count) tags, \(catalog.packs.count) packs ...")
        // Some ten requests a simulated day: generate enough days and stop at the request count.
        let main = Workload.travel.script(catalog: catalog, device: device, days: Double(requests) / 4, seed: 1, maxRequests: requests)
        let belady = Workload.travel.script(catalog: catalog, device: device, days: Double(beladyRequests) / 4, seed: 2, maxRequests: beladyRequests)

        let baseline = best { ledgerReplay(main) }
        var result: SimulationResult?
        let simulated = best { result = Simulator(script: main, device: device).run(RuntimePolicy()) }
        let beladyTime = best { _ = Simulator(script: belady, device: device).run(BeladyPolicy(script: belady)) }

        let count = Double(main.requests.count)
        let rate = count / simulated
        let metrics = result?.metrics ?? SimulationMetrics()
        print("default policy: \(main.requests.count) requests in \(seconds(simulated)) = \(millions(rate)) M requests/s (target >= 2 M/s: \(rate >= 2e6 ? "met" : "NOT met"))")
        print("  hit rate \(percent(metrics.hitRate)), \(metrics.purgedPacks) packs purged")
        print("  baseline, ledger begin/end only: \(millions(count / baseline)) M requests/s; simulation costs \(ratio(simulated / baseline))x the baseline")
        print("belady: \(belady.requests.count) requests in \(seconds(beladyTime)) (target < 5 s: \(beladyTime < 5 ? "met" : "NOT met")); \(ratio(beladyTime / simulated * count / Double(belady.requests.count)))x the default policy's time per request")
    }

    /// Begins and ends every request of `script` on a bare ledger.
    private func ledgerReplay(_ script: SimulationScript) {
        var ledger = Ledger(catalog: script.catalog.ledgerCatalog, inUseLimit: .max)
        for event in script.events {
            switch event.action {
            case .begin(let request): _ = try? ledger.begin(script.tags(of: Int(request)))
            case .end(let request): _ = try? ledger.end(script.tags(of: Int(request)))
            default: continue
            }
        }
        precondition(ledger.inUseBytes == 0, "every request ends")
    }

    private func best(_ body: () -> Void) -> Double {
        var fastest = Double.infinity
        for _ in 0 ..< runs {
            let start = ContinuousClock.now
            body()
            let elapsed = ContinuousClock.now - start
            fastest = min(fastest, Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18)
        }
        return fastest
    }

    private func seconds(_ value: Double) -> String { "\(ratio(value)) s" }
    private func millions(_ value: Double) -> String { ratio(value / 1e6) }
    private func percent(_ value: Double) -> String { "\(ratio(value * 100))%" }
    private func ratio(_ value: Double) -> String { "\((value * 100).rounded() / 100)" }
}
