import ODRFormat
@testable import ODRRuntime
@testable import ODRSimulation
import Testing

/// Properties that hold on every generated scenario, checked over many seeds.
struct PolicyPropertyTests {
    static let seeds: [UInt64] = Array(1 ... 12)

    /// With packs of equal size, Belady's MIN is optimal: no online policy downloads fewer bytes.
    /// (With mixed sizes it is a heuristic and may lose by a little; see docs/ODRSIM.md.)
    @Test(arguments: Workload.allCases, seeds)
    func beladyNeverDownloadsMoreThanAnyPolicy(_ workload: Workload, seed: UInt64) {
        let (script, device) = SimulationFixtures.generated(workload, seed: seed, packSize: .fixed(32 << 20))
        let results = SimulationFixtures.runAll(script, device: device)
        let belady = results["belady"]!.metrics
        #expect(belady.requests > 50)
        for (policy, result) in results {
            #expect(result.metrics.outOfSpaceFailures == 0, "\(policy)")
            // `hinted` knows what comes next from the hints (and pays for wrong ones): Belady's
            // MIN without hints bounds the policies that download only what requests ask for.
            guard policy != PolicyChoice.hinted.rawValue else { continue }
            #expect(belady.bytesDownloaded <= result.metrics.bytesDownloaded, "\(policy) beat Belady on seed \(seed)")
        }
    }

    /// No policy ever purges a pack that a request holding it has begun and not yet ended, checked
    /// against the script itself rather than the ledger.
    @Test(arguments: Workload.allCases, [UInt64(3), 4, 5])
    func inUsePacksAreNeverPurged(_ workload: Workload, seed: UInt64) {
        // Small packs on a small disk for travel, so that every workload purges.
        let (script, device) = SimulationFixtures.generated(workload, seed: seed, disk: workload == .travel ? 1 << 30 : 6 << 30)
        var held: [Int: (begin: Double, end: Double)] = [:]
        for event in script.events {
            switch event.action {
            case .begin(let request): held[Int(request)] = (event.time, .infinity)
            case .end(let request): held[Int(request)]?.end = event.time
            default: continue
            }
        }
        var holders: [String: [(begin: Double, end: Double)]] = [:]
        for (request, span) in held {
            for tag in script.tags(of: request) {
                for pack in script.catalog.ledgerCatalog.packs(of: tag) {
                    holders[script.catalog.packs[pack.index].id, default: []].append(span)
                }
            }
        }
        let results = SimulationFixtures.runAll(script, device: device)
        var purges = 0
        for (policy, result) in results {
            purges += result.purges.count
            for purge in result.purges {
                let holding = holders[purge.pack, default: []].filter { $0.begin < purge.time && purge.time < $0.end }
                #expect(holding.isEmpty, "\(policy) purged \(purge.pack) at \(purge.time) while it was in use")
            }
        }
        #expect(purges > 0)
    }

    @Test(arguments: Workload.allCases)
    func theSameSeedGivesTheSameNumbers(_ workload: Workload) {
        let first = SimulationFixtures.generated(workload, seed: 7)
        let second = SimulationFixtures.generated(workload, seed: 7)
        #expect(first.0.events == second.0.events)
        let a = SimulationFixtures.runAll(first.0, device: first.1)
        let b = SimulationFixtures.runAll(second.0, device: second.1)
        for policy in PolicyChoice.allCases {
            #expect(a[policy.rawValue]!.metrics == b[policy.rawValue]!.metrics)
            #expect(a[policy.rawValue]!.samples == b[policy.rawValue]!.samples)
            #expect(a[policy.rawValue]!.purges == b[policy.rawValue]!.purges)
        }
        let other = SimulationFixtures.generated(workload, seed: 8)
        #expect(other.0.events != first.0.events)
    }

    /// The simulator merges its recency list of each priority into the planner's purge order; on
    /// every purge of real runs, the merged order must be the planner's order (packs of one
    /// priority used at the same instant may come in either order) over exactly the candidates.
    @Test(arguments: Workload.allCases, [false, true])
    func theSimulatorsMergedOrderIsThePlannersOrder(_ workload: Workload, hints: Bool) {
        final class Tally { var plans = 0, outOfOrder = 0, ties = 0, hinted = 0 }
        struct Checking: EvictionPolicy {
            var runtime: RuntimePolicy
            let tally: Tally
            var name: String { "checking" }
            var takesHints: Bool { runtime.takesHints }
            mutating func plan(_ candidates: PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
                let planner = runtime.planner
                let merged = Array(IteratorSequence(candidates.makePurgeOrderIterator(planner: planner)))
                let all = candidates.all()
                tally.plans += 1
                tally.hinted += all.filter(\.isHinted).count
                if Set(merged.map(\.id)) != Set(all.map(\.id)) || merged.count != all.count { tally.outOfOrder += 1 }
                for (earlier, later) in zip(merged, merged.dropFirst()) where planner.goesBefore(later, earlier, now: candidates.now) {
                    let tie = later.lastUse == earlier.lastUse && later.preservationPriority == earlier.preservationPriority
                        && later.hintLikelihood == earlier.hintLikelihood
                    if tie { tally.ties += 1 } else { tally.outOfOrder += 1 }
                }
                return runtime.plan(candidates, bytesNeeded: bytesNeeded)
            }
        }
        let (script, device) = SimulationFixtures.generated(workload, seed: 3, disk: workload == .travel ? 1 << 30 : 6 << 30)
        #expect(!script.catalog.hubTags.isEmpty)
        let tally = Tally()
        _ = Simulator(script: script, device: device).run(Checking(runtime: RuntimePolicy(takesHints: hints), tally: tally))
        #expect(tally.plans > 20)
        // With hints, some purges see hinted candidates, which must come after the others.
        #expect((tally.hinted > 0) == hints)
        #expect(tally.outOfOrder == 0, "\(tally.outOfOrder) pairs out of order in \(tally.plans) plans")
    }

    /// The simulator feeds the runtime's planner lazily from rank lists; on any candidates, that
    /// must give the plan the array form gives.
    @Test(arguments: Array(UInt64(1) ... 40))
    func plannerInPurgeOrderMatchesThePlannerOnAnArray(seed: UInt64) {
        var random = SimulationRandom(seed: seed)
        let candidates = (0 ..< 1 + Int(random.next() % 40)).map { id in
            PurgeCandidate(
                id: id, bytes: SizeDistribution.logNormal(median: 40 << 20, sigma: 1.2).sample(using: &random),
                lastUse: Double(random.next() % 50), preservationPriority: [0.2, 0.5, 0.9][Int(random.next() % 3)],
                isSuperseded: random.chance(0.1), isInUse: random.chance(0.2),
                hintLikelihood: random.chance(0.7) ? 0 : [0.3, 0.9, 1, .nan][Int(random.next() % 4)])
        }
        let need = Int64(random.unit() * 600 * Double(1 << 20))
        let planner = PurgePlanner()
        let now = 60.0
        let ordered = planner.ordered(candidates, now: now)
        let top = ordered.filter { !$0.isSuperseded }.map(\.preservationPriority).max() ?? 0
        var iterator = ordered.makeIterator()
        let streamed = planner.plan(bytesNeeded: need, topPriority: top) { iterator.next() }
        let plan = planner.plan(candidates.shuffled(using: &random), bytesNeeded: need, now: now)
        #expect(streamed == plan)
        #expect(plan.deletions.allSatisfy { id in !candidates[id.id].isInUse })
        let available = candidates.filter { !$0.isInUse }.reduce(0) { $0 + $1.bytes }
        #expect(plan.shortfall == max(0, need - available))
    }
}
