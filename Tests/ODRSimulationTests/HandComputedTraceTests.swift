@testable import ODRSimulation
import ODRRuntime
import Testing

/// Three tags of one 100-byte pack each on a disk that holds two: every policy's evictions are
/// worked out by hand in the comments.
struct HandComputedTraceTests {
    @Test func evictionsOfEachPolicyOnABCAB() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"])
        let script = try SimulationFixtures.script(catalog, playing: ["a", "b", "c", "a", "b"])
        let results = SimulationFixtures.runAll(script, device: SimulationFixtures.device(disk: 200))
        func purged(_ policy: PolicyChoice) -> [String] { results[policy.rawValue]!.purges.map(\.pack) }

        // LRU: c evicts a, a evicts b, b evicts c: five misses.
        #expect(purged(.lru) == ["pack-a", "pack-b", "pack-c"])
        #expect(results["lru"]!.metrics.misses == 5)
        // Equal priorities and sizes: the runtime's planner is LRU.
        #expect(purged(.default) == purged(.lru))
        #expect(purged(.priorityLRU) == purged(.lru))
        // Equal sizes and costs: Greedy-Dual-Size breaks credit ties by recency, like LRU.
        #expect(purged(.gds) == purged(.lru))
        // Belady: at c, a is needed next at request 4 and b at 5, so b goes; a then hits; at b,
        // neither a nor c is needed again and the lower id (a) goes. Four misses, one hit.
        #expect(purged(.belady) == ["pack-b", "pack-a"])
        #expect(results["belady"]!.metrics.misses == 4)
        #expect(results["belady"]!.metrics.hits == 1)
        #expect(results["belady"]!.metrics.bytesDownloaded == 400)
        #expect(results["lru"]!.metrics.bytesDownloaded == 500)
    }

    @Test func priorityKeepsTheHighPriorityTag() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"], priorities: ["a": 0.9, "b": 0.1, "c": 0.1])
        let script = try SimulationFixtures.script(catalog, playing: ["a", "b", "c", "a", "b"])
        let results = SimulationFixtures.runAll(script, device: SimulationFixtures.device(disk: 200))
        // At c the low-priority b goes although a is older; a then hits; at b, c (low) goes.
        for policy in [PolicyChoice.default, .priorityLRU] {
            #expect(results[policy.rawValue]!.purges.map(\.pack) == ["pack-b", "pack-c"], "\(policy)")
            #expect(results[policy.rawValue]!.purges.map(\.reason) == ["low-preservation-priority", "low-preservation-priority"])
            #expect(results[policy.rawValue]!.metrics.hits == 1)
        }
        // Plain LRU ignores priority.
        #expect(results["lru"]!.purges.map(\.pack) == ["pack-a", "pack-b", "pack-c"])
    }

    @Test func aHeldTagIsNeverEvicted() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"], priorities: ["a": 0])
        var builder = ScriptBuilder(catalog: catalog)
        let tags = catalog.ledgerCatalog
        // a is held for the whole run while b and c take turns: the oldest, lowest-priority pack
        // is in use, so every policy must evict the other one.
        let held = builder.begin(try tags.tags(named: ["a"]), at: 0, urgent: true)
        for (i, name) in ["b", "c", "b", "c"].enumerated() {
            let request = builder.begin(try tags.tags(named: [name]), at: Double(i + 1) * 60, urgent: true)
            builder.end(request, at: Double(i + 1) * 60 + 30)
        }
        builder.end(held, at: 600)
        let results = SimulationFixtures.runAll(builder.build(duration: 600), device: SimulationFixtures.device(disk: 200))
        for (policy, result) in results {
            #expect(!result.purges.map(\.pack).contains("pack-a"), "\(policy)")
            #expect(result.purges.map(\.pack) == ["pack-b", "pack-c", "pack-b"], "\(policy)")
        }
    }

    @Test func aRequestThatCannotFitFailsWithoutPurging() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"])
        var builder = ScriptBuilder(catalog: catalog)
        let tags = catalog.ledgerCatalog
        let first = builder.begin(try tags.tags(named: ["a"]), at: 0, urgent: true)
        let second = builder.begin(try tags.tags(named: ["b"]), at: 10, urgent: true)
        // Both a and b are in use on a 250-byte disk: c cannot fit.
        let third = builder.begin(try tags.tags(named: ["c"]), at: 20, urgent: true)
        for request in [first, second, third] { builder.end(request, at: 30) }
        let results = SimulationFixtures.runAll(builder.build(duration: 60), device: SimulationFixtures.device(disk: 250))
        for (policy, result) in results {
            #expect(result.metrics.outOfSpaceFailures == 1, "\(policy)")
            #expect(result.purges.isEmpty, "\(policy)")
            #expect(result.metrics.bytesDownloaded == 200, "\(policy)")
        }
    }

    @Test func theInUseLimitRefusesARequest() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b"])
        var builder = ScriptBuilder(catalog: catalog)
        let tags = catalog.ledgerCatalog
        let first = builder.begin(try tags.tags(named: ["a"]), at: 0, urgent: true)
        let second = builder.begin(try tags.tags(named: ["b"]), at: 10, urgent: true)
        builder.end(first, at: 20)
        builder.end(second, at: 20)
        var device = SimulationFixtures.device(disk: 1000)
        device.inUseLimit = 150
        let result = Simulator(script: builder.build(duration: 60), device: device).run(RuntimePolicy())
        #expect(result.metrics.inUseLimitRefusals == 1)
        #expect(result.metrics.bytesDownloaded == 100)
    }

    @Test func stallIsTheWaitForUrgentDownloads() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b"], bytes: 1_000_000)
        let script = try SimulationFixtures.script(catalog, playing: ["a", "b", "a"])
        var device = SimulationFixtures.device(disk: 10_000_000)
        device.bandwidth = 100_000
        device.latency = 0.5
        let result = Simulator(script: script, device: device).run(RuntimePolicy())
        // Two downloads of 10 s each plus 0.5 s latency; the replay of a is a hit.
        #expect(result.metrics.stallSeconds == 21)
        #expect(result.metrics.hits == 1)
    }
}
