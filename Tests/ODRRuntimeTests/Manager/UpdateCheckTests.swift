import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A running app learns of a new catalog version without calling prepare() again, and the new
/// version takes effect only after the requests on the old one end.
struct UpdateCheckTests {
    @Test(.timeLimit(.minutes(1))) func aNewVersionWaitsForTheRequestsOnTheOldOneToEnd() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let events = manager.events()
            #expect(try await manager.checkForUpdates() == 1, "nothing new yet")

            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            try fixture.game.write("small/notes.txt", Data("version two\n".utf8))
            try await fixture.game.build()

            #expect(try await manager.checkForUpdates() == 2)
            #expect(manager.currentVersion == 1, "a request still uses version 1")
            let url = try #require(request.url(forResource: "small/notes.txt"))
            #expect(try Data(contentsOf: url) == Data("notes\n".utf8))

            try request.endAccessingResources()
            #expect(manager.currentVersion == 2)
            var updated: Int?
            for await event in events {
                if case .catalogUpdated(let version) = event { updated = version; break }
            }
            #expect(updated == 2)
        }
    }

    @Test func periodicChecksFindANewVersion() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            try fixture.game.write("small/notes.txt", Data("version two\n".utf8))
            try await fixture.game.build()
            server.clearRequests()
            let start = ContinuousClock.now
            manager.checkForUpdates(every: .zero)  // raised to one second
            let deadline = start + .seconds(30)
            while manager.currentVersion != 2 {
                guard ContinuousClock.now < deadline else { Issue.record("no periodic check adopted version 2"); return }
                try await Task.sleep(for: .milliseconds(10))
            }
            manager.checkForUpdates(every: nil)
            // A zero interval is raised to a second: a check per second at most, not a busy loop.
            let elapsed = (ContinuousClock.now - start).components.seconds
            let checks = server.requests().filter { $0.path == "/catalog.json" }.count
            #expect(checks <= Int(elapsed) + 2, "\(checks) checks in \(elapsed) s")
        }
    }
}
