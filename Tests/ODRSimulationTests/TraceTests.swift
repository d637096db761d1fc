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
            .hint(time: 601.5, hint: 1, tags: ["level1"], likelihood: 0.9),
            .endHint(time: 700, hint: 1),
        ]
        let codec = TraceCodec()
        let data = try codec.encode(events)
        let lines = String(decoding: data, as: UTF8.self).split(separator: "\n")
        #expect(lines.count == events.count)
        #expect(lines[1] == #"{"event":"begin","priority":"urgent","request":1,"t":0,"tags":["level1"]}"#)
        #expect(lines[4] == #"{"event":"end","request":1,"t":600.25}"#)
        #expect(lines[6] == #"{"event":"hint","hint":1,"likelihood":0.9,"t":601.5,"tags":["level1"]}"#)
        #expect(lines[7] == #"{"event":"hint-end","hint":1,"t":700}"#)
        #expect(try codec.decode(data) == events)
    }

    /// A hint line whose likelihood is not a number in 0...1 is the trace's typed error, with its line.
    @Test(arguments: ["1.5", "-0.25", "\"NaN\"", "\"Infinity\"", "NaN"])
    func aHintWithABadLikelihoodIsRejected(_ likelihood: String) throws {
        let data = Data("""
            {"event":"begin","priority":"urgent","request":1,"t":0,"tags":["a"]}
            {"event":"hint","hint":1,"likelihood":\(likelihood),"t":1,"tags":["b"]}
            """.utf8)
        let error = #expect(throws: TraceError.self) { try TraceCodec().decode(data) }
        #expect(error?.line == 2)
        // A bare NaN is not JSON at all; a number or string outside 0...1 is a value out of range.
        #expect(error?.code == (likelihood == "NaN" ? .malformedLine : .invalidValue), "\(String(describing: error))")
    }

    /// A hint ending line without its number, and an unknown event, as a reader before hints
    /// refuses a `hint` line.
    @Test func aHintLineWithoutItsFieldsIsMalformed() throws {
        let missing = #expect(throws: TraceError.self) { try TraceCodec().decode(Data(#"{"event":"hint-end","t":1}"#.utf8)) }
        #expect(missing?.code == .malformedLine)
        let noTags = #expect(throws: TraceError.self) {
            try TraceCodec().decode(Data(#"{"event":"hint","hint":1,"likelihood":0.5,"t":1}"#.utf8))
        }
        #expect(noTags?.code == .malformedLine)
        let newer = #expect(throws: TraceError.self) { try TraceCodec().decode(Data(#"{"event":"hint-start","hint":1,"t":1}"#.utf8)) }
        #expect(newer?.code == .unknownEvent)
        #expect(newer?.message.contains("newer runtime") == true)
    }

    /// Replaying checks that hints fit the catalog and each other: each mistake is `invalid-value`
    /// with a message that names it.
    @Test(arguments: [
        ("an unknown tag", [TraceEvent.hint(time: 0, hint: 1, tags: ["a", "zz"], likelihood: 0.5)], "zz"),
        ("an end of a hint that never began", [.endHint(time: 1, hint: 7)], "ends hint 7, which did not begin"),
        ("a hint ended twice", [.hint(time: 0, hint: 1, tags: ["a"], likelihood: 0.5), .endHint(time: 1, hint: 1), .endHint(time: 2, hint: 1)],
         "ends hint 1, which did not begin"),
        ("a live number begun again", [.hint(time: 0, hint: 1, tags: ["a"], likelihood: 0.5), .hint(time: 1, hint: 1, tags: ["b"], likelihood: 0.5)],
         "begins hint 1 while"),
        ("an end before the beginning", [.hint(time: 5, hint: 1, tags: ["a"], likelihood: 0.5), .endHint(time: 4, hint: 1)], "before it began"),
        ("a NaN likelihood built in code", [.hint(time: 0, hint: 1, tags: ["a"], likelihood: .nan)], "outside 0...1"),
        ("a likelihood over 1 built in code", [.hint(time: 0, hint: 1, tags: ["a"], likelihood: 1.01)], "outside 0...1"),
    ] as [(String, [TraceEvent], String)])
    func aTraceWithBadHintsIsRejectedOnReplay(_ what: String, _ events: [TraceEvent], _ message: String) throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b"])
        let error = #expect(throws: TraceError.self, "\(what)") {
            try SimulationScript(trace: events, catalog: catalog, device: DeviceSettings(), seed: 1)
        }
        #expect(error?.code == .invalidValue, "\(what)")
        #expect(error?.message.contains(message) == true, "\(what): \(String(describing: error))")
    }

    /// A replayed hint is right when a request for each of its tags began while it lived.
    @Test func aReplayedHintIsRightWhenItsTagsWereAskedFor() throws {
        let catalog = try SimulationFixtures.catalog(tags: ["a", "b", "c"])
        let script = try SimulationScript(trace: [
            .hint(time: 0, hint: 1, tags: ["b"], likelihood: 0.9),
            .hint(time: 0, hint: 2, tags: ["b", "c"], likelihood: 0.5),
            .hint(time: 0, hint: 3, tags: ["c"], likelihood: 0.5),
            .begin(time: 1, request: 1, tags: ["a", "b"], priority: .urgent),
            .endHint(time: 1, hint: 1),
            .endHint(time: 1, hint: 3),
            .begin(time: 2, request: 2, tags: ["c"], priority: .urgent),
        ], catalog: catalog, device: DeviceSettings(), seed: 1)
        #expect(script.hints.map(\.isRight) == [true, true, false])
        #expect(script.hintEvents.map(\.action) == [.hint(0), .hint(1), .hint(2), .endHint(0), .endHint(2)])
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

    /// A generated session recorded as a trace and replayed gives the numbers of the original,
    /// `hinted`'s too: the same hints, at the same times.
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
        #expect(replayed.hints.count == original.hints.count)
        #expect(replayed.hints.count > 10)
        #expect(replayed.hints.map(\.likelihood) == original.hints.map(\.likelihood))
        #expect(replayed.hintEvents.map(\.time) == original.hintEvents.map(\.time))
        #expect(replayed.hints.indices.allSatisfy { Array(replayed.tags(ofHint: $0)) == Array(original.tags(ofHint: $0)) })
        #expect(PolicyChoice.hinted.run(on: Simulator(script: replayed, device: device)).metrics.prefetchedBytes > 0,
                "the replayed hints prefetch")
        // Without its hint lines the same trace gives `hinted` nothing to prefetch.
        let bare = try SimulationScript(
            trace: TraceCodec().decode(data).filter { if case .hint = $0 { false } else if case .endHint = $0 { false } else { true } },
            device: device, seed: 3)
        #expect(PolicyChoice.hinted.run(on: Simulator(script: bare, device: device)).metrics.prefetchedBytes == 0)
        for policy in [PolicyChoice.default, .belady, .hinted] {
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
