import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A stale edge: a cache or CDN that still serves an older `catalog.json` after a publish (or after
/// `odrpack prune` removed what it names). Refused, never fatal: the stored catalog serves. And a
/// file the served catalog names that the server lacks is an error naming the file and its URL.
struct StaleCatalogTests {
    /// A game at version 2 whose server then serves version 1's `catalog.json` again; `body` gets
    /// the fixture, the server, and the older `catalog.json`'s bytes (already being served).
    static func withStaleEdge(_ body: (ManagerFixture, CatalogServer) async throws -> Void) async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 200_000)
        let first = try Data(contentsOf: fixture.game.catalog.appending(path: CatalogIndex.fileName))
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            try small.endAccessingResources()
            try fixture.game.write("small/notes.txt", Data("notes, version 2\n".utf8))
            try await fixture.game.build()
            #expect(try await manager.checkForUpdates() == 2)
            let installed = ResourceRequest(tags: ["small"], manager: manager)
            try await installed.beginAccessingResources()
            try installed.endAccessingResources()
            // The edge goes back to the version 1 catalog.json it cached.
            try first.write(to: fixture.game.catalog.appending(path: CatalogIndex.fileName))
            try await body(fixture, server)
        }
    }

    /// The event is awaited: without it the test would wait forever, hence the time limit.
    @Test(.timeLimit(.minutes(2))) func aRolledBackCatalogIsRefusedAndTheStoredOneServesWithTheOfflineEvent() async throws {
        try await Self.withStaleEdge { fixture, server in
            // A new launch on the same store.
            let manager = try fixture.manager(url: server.baseURL)
            let events = manager.events()
            let snapshot = try await manager.loadCatalog()
            #expect(snapshot.version == 2)
            #expect(snapshot.fallback?.reason.code == .catalogRollback)
            #expect(snapshot.fallback?.isStale == true)
            #expect(manager.currentVersion == 2)
            var posted: ResourceError.Code?
            for await event in events {
                if case .catalogCheckFailed(let code, _, _) = event { posted = code; break }
            }
            #expect(posted == .catalogRollback)
            // The store's log says what was refused, as for any refusal.
            let refused = try manager.store.events().filter { $0.kind == .catalog && $0.reason.hasPrefix("refused: error[catalog-rollback]") }
            #expect(!refused.isEmpty)
            // Installed tags serve, and a tag not installed yet installs from the stored version.
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            let notes = try #require(small.url(forResource: "small/notes.txt"))
            #expect(try Data(contentsOf: notes) == Data("notes, version 2\n".utf8))
            try small.endAccessingResources()
            _ = try await manager.fetch(tags: ["big"])
            #expect(try manager.store.verify().isEmpty)
            // An explicit check still reports the refusal to the caller.
            let error = await #expect(throws: ResourceError.self) { try await manager.checkForUpdates() }
            #expect(error?.code == .catalogRollback)
        }
    }

    @Test func odrFetchOfAnInstalledTagBehindAStaleEdgeSucceedsWithAWarning() async throws {
        try await Self.withStaleEdge { fixture, server in
            let store = fixture.stores.appending("store").path
            let fetch = try await ODRExecutable.run(["fetch", "--catalog", server.baseURL.absoluteString, "--store", store, "--watermark", "0", "small"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(fetch.stderr.contains("warning: the catalog server sent a stale catalog.json, refused [catalog-rollback]"), "\(fetch.stderr)")
            #expect(fetch.stderr.contains("going on with the stored copy of the catalog (version 2)"), "\(fetch.stderr)")
            #expect(fetch.stdout.contains("Installed 0 pack(s)") && fetch.stdout.contains("already installed"), "\(fetch.stdout)")
        }
    }

    @Test func aFreshStoreBehindAStaleEdgeTakesWhatItServes() async throws {
        try await Self.withStaleEdge { fixture, server in
            // Stale only means older than what this store accepted: a fresh store has seen nothing.
            let fresh = try fixture.manager(url: server.baseURL, store: "fresh")
            let snapshot = try await fresh.loadCatalog()
            #expect(snapshot.version == 1)
            #expect(snapshot.fallback == nil)
        }
    }

    @Test func aPackTheServerLacksIsAnErrorNamingThePackItsTagsAndTheURL() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 200_000)
        let big = try #require(try fixture.game.manifest(1).packs.first { $0.tags.contains("big") })
        try FileManager.default.removeItem(at: fixture.game.catalog.appending(path: big.archivePath))
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let error = await #expect(throws: ResourceError.self) { _ = try await manager.fetch(tags: ["big"]) }
            #expect(error?.code == .resourceUnavailable)
            let url = server.baseURL.appending(path: big.archivePath).absoluteString
            #expect(error?.message.contains("Pack \(big.id)") == true, "\(String(describing: error))")
            #expect(error?.message.contains("big") == true)
            #expect(error?.message.contains(url) == true, "\(String(describing: error))")
            #expect(error?.message.contains("HTTP 404") == true)
        }
    }

    @Test func aManifestTheServerLacksIsAnErrorNamingTheFileAndTheURL() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 200_000)
        let path = try #require(try fixture.game.index().version(1)?.manifest)
        try FileManager.default.removeItem(at: fixture.game.catalog.appending(path: path))
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            let error = await #expect(throws: ResourceError.self) { try await manager.loadCatalog() }
            #expect(error?.code == .resourceUnavailable)
            #expect(error?.message.contains("\(path), the manifest of version 1") == true, "\(String(describing: error))")
            #expect(error?.message.contains(server.baseURL.appending(path: path).absoluteString) == true, "\(String(describing: error))")
        }
    }
}
