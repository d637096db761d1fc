@testable import ODRSimulation
import ODRRuntime
import Testing

/// The `hinted` policy's learning rule (``PrefetchLearning``, the runtime's): hints that keep naming
/// packs no request uses stop the prefetches, and hints that prove right bring them back.
struct PrefetchLearningSimulationTests {
    /// A short memory (about ten judgments), so a few rounds tell.
    static let rule = PrefetchLearning.Rule(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0.9)

    /// Rounds of 100 s: a hint at the round's start, then at 10 s an urgent request it foresaw or
    /// not, ending at 20 s. Right rounds hint the requested tag, wrong ones a tag no request wants.
    /// Every pack is 100 bytes, one second on the link; the disk holds three.
    static func rounds(wrong: Int, right: Int) throws -> Simulator {
        let count = wrong + right
        let names = (0 ..< count).map { "a\($0)" } + (0 ..< count).map { "w\($0)" }
        let catalog = try SimulationFixtures.catalog(tags: names)
        var builder = ScriptBuilder(catalog: catalog)
        for round in 0 ..< count {
            let start = Double(round) * 100
            let hinted = round < wrong ? "w\(round)" : "a\(round)"
            builder.hint(try catalog.ledgerCatalog.tags(named: [hinted]), likelihood: 0.8, from: start, until: start + 10)
            let request = builder.begin(try catalog.ledgerCatalog.tags(named: ["a\(round)"]), at: start + 10, urgent: true)
            builder.end(request, at: start + 20)
        }
        var device = SimulationFixtures.device(disk: 300)
        device.bandwidth = 100
        return Simulator(script: builder.build(duration: Double(count) * 100), device: device)
    }

    static func hinted(_ simulator: Simulator, rule: PrefetchLearning.Rule) -> SimulationMetrics {
        var simulator = simulator
        simulator.prefetchLearning = rule
        return PolicyChoice.hinted.run(on: simulator).metrics
    }

    @Test func wrongHintsLowerTheMeasureAndStopThePrefetches() throws {
        let simulator = try Self.rounds(wrong: 20, right: 0)
        let never = Self.hinted(simulator, rule: .never)
        // Without the rule every wrong hint prefetches its 100 bytes for nothing.
        #expect(never.prefetchedBytes == 2000)
        #expect(never.bytesDownloaded == 4000)
        let learning = Self.hinted(simulator, rule: Self.rule)
        let measure = try #require(learning.prefetchMeasure)
        #expect(measure < Self.rule.prefetchFrom)
        // A few wrong guesses (judged as they are purged) are enough to stop prefetching.
        #expect(learning.prefetchedBytes <= 500)
        #expect(learning.bytesDownloaded == 2000 + learning.prefetchedBytes)
        // Nothing the wrong hints prefetched spared a wait.
        #expect(learning.stallSeconds == never.stallSeconds)
    }

    @Test func rightHintsBringThePrefetchesBack() throws {
        let simulator = try Self.rounds(wrong: 20, right: 20)
        let learning = Self.hinted(simulator, rule: Self.rule)
        let measure = try #require(learning.prefetchMeasure)
        #expect(measure >= Self.rule.makeRoomFrom)
        // The right rounds judge the held-back hints right until the measure allows prefetches
        // again; from then each request finds its pack installed (a hit, no wait).
        #expect(learning.hits >= 8)
        let noHints = PolicyChoice.default.run(on: simulator).metrics
        #expect(noHints.hits == 0)
        #expect(learning.stallSeconds <= noHints.stallSeconds - 8)
    }

    @Test func theMeasureNeverAllowsMoreThanPerfectHints() throws {
        // Every hint right: the rule never holds anything back, to the byte.
        let simulator = try Self.rounds(wrong: 0, right: 20)
        let learning = Self.hinted(simulator, rule: Self.rule)
        let never = Self.hinted(simulator, rule: .never)
        #expect(learning == never.with(measure: learning.prefetchMeasure))
        #expect(learning.prefetchMeasure == 1)
        #expect(learning.hits == 20)
    }

    /// The safeguard on a generated workload (`travel`, 30 days, the seed 5): hints mostly
    /// wrong cost far less with the rule, and hints mostly right keep their stall gain.
    @Test func onTravelMostlyWrongHintsCostLittleAndMostlyRightOnesStillHalveTheStall() {
        let device = DeviceSettings(diskCapacity: 8 << 30)
        let catalog = Workload.travel.catalogGenerator().generate(seed: 5)
        func metrics(accuracy: Double, wrong: WrongHints) -> (plain: SimulationMetrics, off: SimulationMetrics, learning: SimulationMetrics, belady: Int64) {
            let script = Workload.travel.script(catalog: catalog, device: device, days: 30, seed: 5, hintAccuracy: accuracy, wrongHints: wrong)
            let simulator = Simulator(script: script, device: device)
            return (PolicyChoice.default.run(on: simulator).metrics, Self.hinted(simulator, rule: .never),
                    Self.hinted(simulator, rule: .standard), PolicyChoice.belady.run(on: simulator).metrics.bytesDownloaded)
        }
        let poor = metrics(accuracy: 0.3, wrong: .random)
        let offExtra = Double(poor.off.bytesDownloaded - poor.plain.bytesDownloaded) / Double(poor.belady)
        let learningExtra = Double(poor.learning.bytesDownloaded - poor.plain.bytesDownloaded) / Double(poor.belady)
        #expect(offExtra > 0.8, "without the rule: +\(offExtra)x Belady's")
        #expect(learningExtra < 0.5 * offExtra, "with the rule: +\(learningExtra)x Belady's, without +\(offExtra)x")
        #expect(poor.learning.stallSeconds <= 1.05 * poor.plain.stallSeconds)
        let good = metrics(accuracy: 0.7, wrong: .neighbour)
        #expect(good.learning.stallSeconds <= 0.5 * good.plain.stallSeconds,
                "hinted \(good.learning.stallSeconds) s, default \(good.plain.stallSeconds) s")
        // Where `hinted`'s extra bytes go: into prefetched packs no request used. Packs that
        // prefetches pushed out cost next to nothing more (at most 0.02x Belady's bytes), so no rule
        // about *making room* can trim the bytes; only prefetching fewer wrong guesses can
        // (ODRSIM.md, "Where the extra bytes go"). The same runs as above: a test of its own ran
        // them again, and two such tests at once held both of the test pool's threads for a minute.
        let extra = good.learning.bytesDownloaded - good.plain.bytesDownloaded
        #expect(extra > 0)
        #expect(good.learning.unusedPrefetchBytes > 0)
        #expect(extra - good.learning.unusedPrefetchBytes <= good.belady / 50,
                "extra \(extra) B, of which unused prefetches \(good.learning.unusedPrefetchBytes) B")
    }
}

private extension SimulationMetrics {
    func with(measure: Double?) -> SimulationMetrics {
        var copy = self
        copy.prefetchMeasure = measure
        return copy
    }
}
