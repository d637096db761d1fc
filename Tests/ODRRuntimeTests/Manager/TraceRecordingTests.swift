import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A real manager over loopback records what its requests did as a trace, which decodes with
/// `TraceCodec` to exactly the events the test caused.
struct TraceRecordingTests {
    @Test func recordsBeginsEndsAndPriorities() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        let manifest = try fixture.game.manifest(1)
        let traceURL = fixture.stores.appending("session.jsonl")
        let clock = ManualClock(now: 1_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.clock = clock }
            try await manager.prepare()
            try manager.setPreservationPriority(0.9, forTags: ["big"])
            let earlier = ResourceRequest(tags: ["small"], manager: manager)
            try await earlier.beginAccessingResources()

            try manager.startRecordingTrace(to: traceURL)
            #expect(manager.traceRecordingURL == traceURL)
            clock.advance(1)
            let small = ResourceRequest(tags: ["small"], manager: manager)
            small.loadingPriority = .urgent
            #expect(await small.conditionallyBeginAccessingResources())
            clock.advance(1)
            try earlier.endAccessingResources()            // began before recording: not recorded
            let big = ResourceRequest(tags: ["big"], manager: manager)
            big.loadingPriority = .loading(0.25)
            #expect(await !big.conditionallyBeginAccessingResources())
            server.injectFaults(.status(404), path: try fixture.packPath(ofTag: "big"))
            await #expect(throws: ResourceError.self) { try await big.beginAccessingResources() }
            clock.advance(1)
            try await big.beginAccessingResources()
            clock.advance(1)
            try manager.setPreservationPriority(0.1, forTags: ["small", "big"])
            clock.advance(1)
            try small.endAccessingResources()
            clock.advance(1)
            do {
                let both = ResourceRequest(tags: ["small", "big"], manager: manager)
                try await both.beginAccessingResources()
                withExtendedLifetime(both) { clock.advance(1) }
            }
            clock.advance(1)
            await #expect(throws: ResourceError.self) {
                try await ResourceRequest(tags: ["nope"], manager: manager).beginAccessingResources()
            }
            try manager.stopRecordingTrace()
            #expect(manager.traceRecordingURL == nil)
            try big.endAccessingResources()                // after the stop: not recorded
        }

        let events = try TraceCodec().decode(Data(contentsOf: traceURL))
        guard case .catalog(let catalog)? = events.first else {
            Issue.record("the first line is not the catalog: \(events)")
            return
        }
        #expect(catalog.tags.map(\.name) == manifest.tags.map(\.name))
        #expect(catalog.tags.map(\.preservationPriority) == manifest.tags.map(\.preservationPriority), "the defaults")
        #expect(catalog.packs.map(\.id) == manifest.packs.map(\.id))
        #expect(catalog.packs.map(\.bytes) == manifest.packs.map(\.installedBytes))
        #expect(catalog.packs.map(\.downloadBytes) == manifest.packs.map(\.archiveBytes))
        #expect(catalog.packs.map(\.tags) == manifest.packs.map(\.tags))
        #expect(Array(events.dropFirst()) == [
            .preservationPriority(time: 0, tags: ["big"], priority: 0.9),    // set before recording
            .begin(time: 1, request: 1, tags: ["small"], priority: .urgent),
            .begin(time: 2, request: 2, tags: ["big"], priority: .background(0.25)),
            .end(time: 2, request: 2),                                       // its download failed
            .begin(time: 3, request: 3, tags: ["big"], priority: .background(0.25)),
            .preservationPriority(time: 4, tags: ["big", "small"], priority: 0.1),
            .end(time: 5, request: 1),
            .begin(time: 6, request: 4, tags: ["big", "small"], priority: .background(0.5)),
            .end(time: 7, request: 4),                                       // by deinit
        ])
        let times = events.compactMap(\.time)
        #expect(times == times.sorted())
    }

    /// Each hint the manager gives out is a `hint` line with its tags and likelihood, and its end a
    /// `hint-end`, however it ends; refused hints, and hints from before the recording, write nothing.
    @Test func recordsHintsAndTheirEnds() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        let traceURL = fixture.stores.appending("session.jsonl")
        let clock = ManualClock(now: 1_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.clock = clock }
            try await manager.prepare()
            let earlier = try manager.anticipate(tags: ["small"], likelihood: 0.2)

            try manager.startRecordingTrace(to: traceURL)
            clock.advance(1)
            let next = try manager.anticipate(tags: ["small", "big"], likelihood: 0.9)
            clock.advance(1)
            #expect(throws: ResourceError.self) { try manager.anticipate(tags: ["nope"], likelihood: 0.5) }
            #expect(throws: ResourceError.self) { try manager.anticipate(tags: ["big"], likelihood: .nan) }
            try earlier.end()                                  // began before recording: not recorded
            clock.advance(1)
            do {
                let dropped = try manager.anticipate(tags: ["big"], likelihood: 0.25)
                withExtendedLifetime(dropped) { clock.advance(1) }
            }
            clock.advance(1)
            try next.end()
            #expect(throws: ResourceError.self) { try next.end() }   // ended twice: recorded once
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            try request.endAccessingResources()
            try manager.stopRecordingTrace()
        }
        let events = try TraceCodec().decode(Data(contentsOf: traceURL))
        guard case .catalog? = events.first else {
            Issue.record("the first line is not the catalog: \(events)")
            return
        }
        #expect(Array(events.dropFirst()) == [
            .hint(time: 1, hint: 1, tags: ["big", "small"], likelihood: 0.9),
            .hint(time: 3, hint: 2, tags: ["big"], likelihood: 0.25),
            .endHint(time: 4, hint: 2),                                      // by deinit
            .endHint(time: 5, hint: 1),
            .begin(time: 5, request: 1, tags: ["small"], priority: .background(0.5)),
            .end(time: 5, request: 1),
        ], "hints are numbered apart from requests")
    }

    /// Recording may start before `prepare()`: the catalog line is the version of the first event,
    /// and stays the only one when the manager moves to a newer version.
    @Test func theCatalogLineIsTheVersionOfTheFirstEvent() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        let traceURL = fixture.stores.appending("session.jsonl")
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try manager.startRecordingTrace(to: traceURL)
            try await manager.prepare()
            try await ResourceRequest(tags: ["small"], manager: manager).beginAccessingResources()

            try fixture.game.write("small/extra.txt", Data("version 2\n".utf8))
            try await fixture.game.build()
            try await manager.prepare()
            #expect(manager.currentVersion == 2)
            #expect(await ResourceRequest(tags: ["small"], manager: manager).conditionallyBeginAccessingResources() == false)
            try await ResourceRequest(tags: ["small"], manager: manager).beginAccessingResources()
            try manager.stopRecordingTrace()
        }
        let events = try TraceCodec().decode(Data(contentsOf: traceURL))
        let catalogs = events.compactMap { event -> TraceCatalog? in
            if case .catalog(let catalog) = event { catalog } else { nil }
        }
        #expect(catalogs.map { $0.packs.map(\.id) } == [try fixture.game.manifest(1).packs.map(\.id)])
        let kinds = events.dropFirst().map { String(describing: $0).prefix { $0 != "(" } }
        #expect(kinds == ["begin", "end", "begin", "end"], "the second catalog version adds no catalog line")
    }

    @Test func aFileThatCannotBeCreatedIsATypedErrorAtStart() throws {
        let directory = try TemporaryDirectory(prefix: "odr-trace")
        let manager = try ResourceManager(configuration: .init(
            catalogURL: URL(string: "http://127.0.0.1:9/")!, storeDirectory: directory.appending("store")))
        let missing = directory.appending("no-such-folder/session.jsonl")
        let error = #expect(throws: TraceError.self) { try manager.startRecordingTrace(to: missing) }
        #expect(error?.code == .writeFailed)
        #expect(error?.message.contains(missing.path) == true)
        #expect(error?.message.contains("does not exist") == true)
        #expect(manager.traceRecordingURL == nil)

        // A recording with no catalog and no event is an empty file; stopping twice is harmless.
        let empty = directory.appending("empty.jsonl")
        try manager.startRecordingTrace(to: empty)
        try manager.startRecordingTrace(to: directory.appending("second.jsonl"))
        #expect(try Data(contentsOf: empty).isEmpty)
        try manager.stopRecordingTrace()
        try manager.stopRecordingTrace()
    }
}
