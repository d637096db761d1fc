import Foundation
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The game loop of docs/RUNTIME.md and the DocC article, played through the sample game on a
/// 64 KiB/s connection: with the documented prefetch, no level after the first waits.
struct SampleGameLoopTests {
    @Test func theDocumentedLoopNeverWaitsAfterTheFirstLevel() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-sample-game")
        let catalog = try await SampleGame.buildCatalog(in: directory)
        try await withTestServer(root: catalog, conditions: NetworkConditions(bytesPerSecond: 64 << 10)) { server in
            var configuration = ResourceManager.Configuration(catalogURL: server.baseURL, storeDirectory: directory.appending("store"))
            configuration.cacheBudget = 1 << 30
            let manager = try ResourceManager(configuration: configuration)
            try await manager.prepare()

            // The documented loop, with the waits counted and `play` standing for the player's
            // time in a level: it ends when the next level's prefetch has finished (at most 60 s).
            var waited: [Int] = []
            var current: ResourceRequest?
            for level in 1...5 {
                let request = ResourceRequest(tags: ["level\(level)"], manager: manager)
                if await !request.conditionallyBeginAccessingResources() {
                    waited.append(level)
                    request.loadingPriority = .urgent
                    try await request.beginAccessingResources()
                }
                try current?.endAccessingResources()
                current = request

                var prefetch: Task<Void, any Error>?
                if level < 5 { prefetch = try manager.prefetch(tags: ["level\(level + 1)"], priority: .loading(0.1)) }

                let map = try #require(request.url(forResource: "map", withExtension: "json", subdirectory: "Levels/Level\(level)"))
                #expect(try Data(contentsOf: map) == Data(contentsOf: SampleGame.assets.appending(path: "Levels/Level\(level)/map.json")))
                if let prefetch { try await Self.play(until: prefetch) }
            }
            try current?.endAccessingResources()
            #expect(waited.allSatisfy { $0 == 1 }, "levels that waited: \(waited)")
        }
    }

    @Test func prefetchRefusesAnUnknownTagAndACatalogNotYetLoadedAtOnce() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            let early = #expect(throws: ResourceError.self) { try manager.prefetch(tags: ["small"]) }
            #expect(early?.code == .catalogUnavailable)
            try await manager.loadCatalog()
            let unknown = #expect(throws: ResourceError.self) { try manager.prefetch(tags: ["small", "no-such-tag"]) }
            #expect(unknown?.code == .invalidTag)
            #expect(ManagerFixture.packRequests(server).isEmpty)
            // A prefetch holds nothing, and a request then begins without downloading.
            try await manager.prefetch(tags: ["small"]).value
            let request = ResourceRequest(tags: ["small"], manager: manager)
            #expect(await request.conditionallyBeginAccessingResources())
            try request.endAccessingResources()
        }
    }

    /// A split catalog (`odrpack build`'s default) describes only the tags a device used: the
    /// documented loop's prefetch of the next level describes it first instead of refusing it.
    @Test func prefetchOfASplitCatalogDescribesItsTagsFirst() async throws {
        let game = try CatalogFixture.game(bigBytes: 1000)
        try await game.build(splitMetadata: true)
        try await withTestServer(root: game.catalog) { server in
            let configuration = ResourceManager.Configuration(catalogURL: server.baseURL, storeDirectory: game.directory.appending("store"))
            let manager = try ResourceManager(configuration: configuration)
            try await manager.loadCatalog()
            let size = #expect(throws: ResourceError.self) { try manager.downloadSize(forTags: ["big"]) }
            #expect(size?.code == .catalogUnavailable, "big is not described yet")

            try await manager.prefetch(tags: ["big"]).value
            let request = ResourceRequest(tags: ["big"], manager: manager)
            #expect(await request.conditionallyBeginAccessingResources(), "the prefetch installed big")
            let level = try #require(request.url(forResource: "level", withExtension: "json", subdirectory: "big"))
            #expect(try Data(contentsOf: level) == game.contents(of: "big/level.json"))
            try request.endAccessingResources()

            let unknown = await #expect(throws: ResourceError.self) { try await manager.prefetch(tags: ["small", "no-such-tag"]).value }
            #expect(unknown?.code == .invalidTag, "\(String(describing: unknown))")
        }
    }

    /// The player's time in a level: until `prefetch` finishes, or 60 s.
    private static func play(until prefetch: Task<Void, any Error>) async throws {
        let timeout = Task {
            try await Task.sleep(for: .seconds(60))
            prefetch.cancel()
        }
        defer { timeout.cancel() }
        try await prefetch.value
    }
}
