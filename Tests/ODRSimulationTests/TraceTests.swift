import Foundation
@testable import ODRSimulation
import ODRRuntime
import Testing

struct TraceTests {
    @Test func eventsRoundTripThroughJSONLines() throws {
        let events: [TraceEvent] = [
            .catalog(TraceCatalog(
                tags: [.init(name: "level1", preservationPriority: 0.25)],
                packs: [.init(id: "p1", bytes: 1_048_576, downloadBytes: 700_000, tags: ["level1"])])),
            .begin(time: 0, request: 1, tags: ["level1"], priority: .urgent),
            .begin(time: 1.5, request: 2, tags: ["level1"], priority: .background(0.3)),
            .preservationPriority(time: 2, tags: ["level1"], priority: 1),
            .end(time: 600.25, request: 1),
            .end(time: 601, request: 2),
        ]
        let codec = TraceCodec()
        let data = try codec.encode(events)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == events.count)
        #expect(lines[1] == #"{"event":"begin","priority":"urgent","request":1,"t":0,"tags":["level1"]}"#)
        #expect(lines[4] == #"{"event":"end","request":1,"t":600.25}"#)
        #expect(try codec.decode(data) == events)
    }

    @Test func aBadLineIsReportedWithItsNumber() throws {
        let data = Data("""
            {"event":"begin","priority":"urgent","request":1,"t":0,"tags":["a"]}

            {"event":"jump","t":3}
            """.utf8)
        let error = #expect(throws: TraceError.self) { try TraceCodec().decode(data) }
        #expect(error?.code == .unknownEvent)
        #expect(error?.line == 3)
        let malformed = #expect(throws: TraceError.self) { try TraceCodec().decode(Data("{\"event\":\"end\"\n".utf8)) }
        #expect(malformed?.code == .malformedLine)
        #expect(malformed?.line == 1)
        let priority = #expect(throws: TraceError.self) {
            try TraceCodec().decode(Data(#"{"event":"begin","priority":2,"request":1,"t":0,"tags":["a"]}"#.utf8))
        }
        #expect(priority?.code == .invalidValue)
    }

    /// A generated session recorded as a trace and replayed gives the numbers of the original.
    @Test(arguments: Workload.allCases)
    func aRecordedTraceReplaysToTheSameNumbers(_ workload: Workload) throws {
        var device = DeviceSettings(diskCapacity: 4 << 30)
        device.otherAppsSwing = 0
        let catalog = workload.catalogGenerator(tagCount: 40).generate(seed: 3)
        let original = workload.script(catalog: catalog, device: device, days: 5, seed: 3)
        let data = try TraceCodec().encode(original.traceEvents)
        let replayed = try SimulationScript(trace: TraceCodec().decode(data), device: device, seed: 3)
        #expect(replayed.requests.count == original.requests.count)
        #expect(replayed.catalog.packs == original.catalog.packs)
        for policy in [PolicyChoice.default, .belady] {
            let a = policy.run(on: Simulator(script: original, device: device)).metrics
            let b = policy.run(on: Simulator(script: replayed, device: device)).metrics
            #expect(a == b, "\(policy)")
            #expect(a.requests > 10)
        }
    }

    @Test func replayingATraceWithoutACatalogNeedsOne() {
        let error = #expect(throws: TraceError.self) {
            try SimulationScript(trace: [.begin(time: 0, request: 1, tags: ["a"], priority: .urgent)], device: DeviceSettings(), seed: 1)
        }
        #expect(error?.message.contains("--catalog") == true)
    }

    @Test func aTraceNamingAnUnknownTagIsRejected() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a"])
        let error = #expect(throws: TraceError.self) {
            try SimulationScript(
                trace: [.begin(time: 0, request: 1, tags: ["zz"], priority: .urgent)], catalog: catalog,
                device: DeviceSettings(), seed: 1)
        }
        #expect(error?.message.contains("zz") == true)
    }
}
