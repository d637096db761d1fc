@testable import ODRSimulation
import ODRRuntime
import Testing

struct NetworkLinkTests {
    @Test func downloadsQueueOnTheLink() {
        var link = NetworkLink(bandwidth: 100, latency: 1, offline: [])
        #expect(link.download(bytes: 1000, at: 0) == 11)
        // Asked for at 5, it waits for the first to finish at 11.
        #expect(link.download(bytes: 100, at: 5) == 13)
        #expect(link.download(bytes: 100, at: 50) == 52)
    }

    @Test func transfersPauseWhileOffline() {
        var link = NetworkLink(bandwidth: 100, latency: 0, offline: [5 ..< 105, 200 ..< 300])
        // 10 s of work: 5 s before the outage, the rest after it.
        #expect(link.download(bytes: 1000, at: 0) == 110)
        // Asked for during an outage: starts when it ends.
        #expect(link.download(bytes: 100, at: 250) == 301)
    }

    @Test func aHintedQueuedDownloadMovesAheadOfEqualPrioritiesAndItsTimesFollowOutages() {
        var link = NetworkLink(bandwidth: 100, latency: 0, offline: [15 ..< 25])
        let (x, b, c, u) = (PackIndex(0), PackIndex(1), PackIndex(2), PackIndex(3))
        #expect(link.enqueue(bytes: 1000, at: 0, priority: .normal, hintLikelihood: 0, packs: [x]).end == 10)
        // 10-15, then the outage, then 25-30.
        #expect(link.enqueue(bytes: 1000, at: 1, priority: .normal, hintLikelihood: 0, packs: [b]).end == 30)
        #expect(link.enqueue(bytes: 200, at: 2, priority: .normal, hintLikelihood: 0, packs: [c]).end == 32)
        #expect(link.reorder(at: 3) { _ in 0 }.isEmpty, "no hints: arrival order")
        // c hinted: it runs 10-12 and b 12-15 and 25-32; x, running, keeps its place however hinted.
        let moved = link.reorder(at: 3) { $0 == [c] || $0 == [x] ? 0.9 : 0 }
        #expect(moved.map(\.packs) == [[c], [b]])
        #expect(moved.map(\.oldEnd) == [32, 30])
        #expect(moved.map(\.newEnd) == [12, 32])
        // An urgent download queued after them is ordered among urgent ones only (the link stays
        // first come, first served across priorities).
        #expect(link.enqueue(bytes: 100, at: 4, priority: .urgent, hintLikelihood: 0, packs: [u]).end == 33)
        #expect(link.reorder(at: 5) { $0 == [u] || $0 == [c] ? 0.9 : 0 }.isEmpty)
        // c's hint ended and b's began: b goes first again, c behind it; u keeps its place.
        let swapped = link.reorder(at: 5) { $0 == [b] ? 0.9 : 0 }
        #expect(swapped.map(\.packs) == [[b], [c]])
        #expect(swapped.map(\.newEnd) == [30, 32])
    }

    @Test func anOfflineDeviceStallsTheUrgentRequest() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a"], bytes: 100)
        var builder = ScriptBuilder(catalog: catalog)
        let request = builder.begin(try catalog.ledgerCatalog.tags(named: ["a"]), at: 10, urgent: true)
        builder.end(request, at: 20)
        builder.offlineWindows = [0 ..< 3600]
        var device = SimulationFixtures.device(disk: 1000)
        device.bandwidth = 100
        let result = Simulator(script: builder.build(duration: 4000), device: device).run(RuntimePolicy())
        // Online at 3600, then 1 s of transfer: the player waited from 10 to 3601.
        #expect(result.metrics.stallSeconds == 3591)
    }

    @Test func greedyDualSizeKeepsSmallPacksThatCostLatency() throws {
        // a is small (its download is mostly latency), b large; both used once, then c needs room.
        var catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"])
        catalog = try SimulatedCatalog(
            name: "sizes", tags: catalog.tags,
            packs: [
                .init(id: "pack-a", bytes: 10, downloadBytes: 10, tags: [TagIndex(0)]),
                .init(id: "pack-b", bytes: 200, downloadBytes: 200, tags: [TagIndex(1)]),
                .init(id: "pack-c", bytes: 200, downloadBytes: 200, tags: [TagIndex(2)]),
            ])
        let script = try SimulationFixtures.script(catalog, playing: ["b", "a", "c"])
        var device = SimulationFixtures.device(disk: 400)
        device.latency = 1
        device.bandwidth = 100
        var simulator = Simulator(script: script, device: device)
        simulator.logsPurges = true
        // LRU evicts b (older); so does GDS, but because b's credit per byte is lower, not its age:
        // swap the order and GDS still evicts b while LRU evicts a.
        let swapped = try SimulationFixtures.script(catalog, playing: ["a", "b", "c"])
        var swappedSimulator = Simulator(script: swapped, device: device)
        swappedSimulator.logsPurges = true
        #expect(PolicyChoice.gds.run(on: simulator).purges.map(\.pack) == ["pack-b"])
        #expect(PolicyChoice.gds.run(on: swappedSimulator).purges.map(\.pack) == ["pack-b"])
        #expect(PolicyChoice.lru.run(on: swappedSimulator).purges.map(\.pack) == ["pack-a"])
    }
}
