import Foundation
import ODRRuntime
import ODRSimulation
import ODRTestSupport
import Testing

/// A trace recorded from a real `ResourceManager` replays in the simulator, as `odrsim run --trace` does.
struct RecordedTraceReplayTests {
    @Test func aTraceRecordedFromAManagerReplays() async throws {
        let game = try CatalogFixture.game(bigBytes: 10_000)
        try await game.build()
        let directory = try TemporaryDirectory(prefix: "odr-recorded-trace")
        let traceURL = directory.appending("session.jsonl")
        // The catalog directory over file://: a real manager, with no server.
        var configuration = ResourceManager.Configuration(catalogURL: game.catalog, storeDirectory: directory.appending("store"))
        configuration.freeSpaceWatermark = 0
        let manager = try ResourceManager(configuration: configuration)
        try manager.startRecordingTrace(to: traceURL)
        try await manager.prepare()

        let small = ResourceRequest(tags: ["small"], manager: manager)
        small.loadingPriority = .urgent
        try await small.beginAccessingResources()
        // The game hints what comes next, and withdraws the hint once it asked for it.
        let next = try manager.anticipate(tags: ["big"], likelihood: 0.8)
        let prefetch = ResourceRequest(tags: ["big"], manager: manager)
        prefetch.loadingPriority = .loading(0.1)
        try await prefetch.beginAccessingResources()
        try next.end()
        try manager.setPreservationPriority(1, forTags: ["big"])
        try small.endAccessingResources()
        #expect(await ResourceRequest(tags: ["small", "big"], manager: manager).conditionallyBeginAccessingResources())
        try prefetch.endAccessingResources()
        try manager.stopRecordingTrace()

        let events = try TraceCodec().decode(Data(contentsOf: traceURL))
        let begins = events.filter { if case .begin = $0 { true } else { false } }.count
        #expect(begins == 3)
        var device = DeviceSettings(diskCapacity: 1 << 30)
        device.otherAppsBytes = 0
        device.otherAppsSwing = 0
        let script = try SimulationScript(trace: events, device: device, seed: 1)
        #expect(script.requests.count == begins)
        #expect(PolicyChoice.default.run(on: Simulator(script: script, device: device)).metrics.requests == begins)
        // The hint replays as the game gave it, to the policy that reads hints.
        #expect(script.hints.map(\.likelihood) == [0.8])
        #expect(script.tags(ofHint: 0).map { script.catalog.tags[$0.index].name } == ["big"])
        #expect(script.hints.first?.isRight == true, "a request for big began while the hint lived")
        #expect(script.hintEvents.count == 2)
        #expect(PolicyChoice.hinted.run(on: Simulator(script: script, device: device)).metrics.requests == begins)
    }
}
