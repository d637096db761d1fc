import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A catalog is its id, not its URL (docs/STORE.md, "Catalogs and their origins"): a game moved to
/// a new CDN continues its stored catalog, online and offline, and a URL or mirror that serves
/// another catalog, or the same id under other keys, is refused.
struct CatalogMoveTests {
    /// A URL where nothing listens: the new CDN of a player without network.
    static let unreachable = URL(string: "http://127.0.0.1:9/game/")!

    /// Installs `tags` through a manager of `url` in `fixture`'s store `store`, then lets it go.
    static func install(_ tags: [String], fixture: ManagerFixture, url: URL, store: String = "store",
                        _ configure: (inout ResourceManager.Configuration) -> Void = { _ in }) async throws {
        let manager = try fixture.manager(url: url, store: store, configure)
        try await manager.prepare()
        for tag in tags {
            let request = ResourceRequest(tags: [tag], manager: manager)
            try await request.beginAccessingResources()
            try request.endAccessingResources()
        }
    }

    /// Body bytes `server` sent, for the paths `include` accepts.
    static func sent(_ server: CatalogServer, where include: (String) -> Bool) async -> Int {
        await server.waitUntilIdle()
        return server.requests().filter { include($0.path) }.reduce(0) { $0 + $1.bytesSent }
    }

    @Test func aCDNMoveOfAFiveThousandFileCatalogSendsNoPackAndLittleMetadata() async throws {
        let tags = (0..<5).map { "t\($0)" }
        let rules = """
            { "catalogID": "moved", "tags": { \(tags.map { "\"\($0)\": { \"include\": [\"\($0)\"] }" }.joined(separator: ", ")) } }
            """
        let game = try CatalogFixture(rules: rules)
        for file in 0..<5_000 {
            try game.write("t\(file % 5)/f\(file).bin", deterministicBytes(count: 64 + file % 200, seed: UInt64(file)))
        }
        try await game.build()
        let fixture = ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-move-store"))
        let newOrigin = try OriginFailoverTests.copy(of: game.catalog)
        try await withTestServer(root: game.catalog) { old in
            try await Self.install(tags, fixture: fixture, url: old.baseURL)
            try await withTestServer(root: newOrigin.url) { new in
                let manager = try fixture.manager(url: new.baseURL) { $0.mirrors = [old.baseURL] }
                try await manager.prepare()
                for tag in tags {
                    let request = ResourceRequest(tags: [tag], manager: manager)
                    try await request.beginAccessingResources()
                    #expect(request.path(forResource: "\(tag)/f\(tags.firstIndex(of: tag) ?? 0).bin") != nil)
                    try request.endAccessingResources()
                }
                let packBytes = await Self.sent(new) { $0.hasPrefix("/packs/") }
                let metadataBytes = await Self.sent(new) { !$0.hasPrefix("/packs/") && $0 != "/catalog.json" }
                #expect(packBytes == 0)
                // Nothing but catalog.json: the manifest and its metadata were found in the store.
                #expect(new.requests().map(\.path) == ["/catalog.json"])
                #expect(metadataBytes <= 64 << 10, "\(new.requests().map { "\($0.path) \($0.bytesSent)" })")
                // One catalog, reached through both origins.
                #expect(try manager.store.storedCatalogIDs() == ["moved"])
                #expect(try manager.store.catalogKey(new.baseURL) == manager.store.catalogKey(old.baseURL))
            }
        }
    }

    /// How an offline game after a move names its catalog: the old URL as a mirror, the catalog
    /// id, or nothing when the store holds only this catalog.
    enum Hint: CaseIterable { case oldURLAsMirror, catalogID, onlyCatalog }

    @Test(arguments: Hint.allCases)
    func offlineAfterAMoveTheStoredCatalogServes(_ hint: Hint) async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        var oldURL: URL?
        try await withTestServer(root: fixture.game.catalog) { old in
            oldURL = old.baseURL
            try await Self.install(["small"], fixture: fixture, url: old.baseURL)
        }
        let old = try #require(oldURL)
        let manager = try fixture.manager(url: Self.unreachable) { configuration in
            switch hint {
            case .oldURLAsMirror: configuration.mirrors = [old]
            case .catalogID: configuration.catalogID = "fixture-game"
            case .onlyCatalog: break
            }
        }
        try await manager.prepare(online: false)
        #expect(manager.currentVersion == 1)
        let request = ResourceRequest(tags: ["small"], manager: manager)
        try await request.beginAccessingResources()
        #expect(request.path(forResource: "small/notes.txt").map { try? String(contentsOfFile: $0, encoding: .utf8) } == "notes\n")
        try request.endAccessingResources()
    }

    @Test func offlineWithSeveralCatalogsTheCatalogIDChooses() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        let other = try CatalogFixture(rules: #"{ "catalogID": "other-game", "tags": { "x": { "include": ["x"] } } }"#)
        try other.write("x/a.txt", Data("x\n".utf8))
        try await other.build()
        try await withTestServer(root: fixture.game.catalog) { server in
            try await Self.install(["small"], fixture: fixture, url: server.baseURL)
        }
        try await withTestServer(root: other.catalog) { server in
            try await Self.install(["x"], fixture: fixture, url: server.baseURL)
        }
        let unnamed = try fixture.manager(url: Self.unreachable)
        do throws(ResourceError) {
            try await unnamed.prepare(online: false)
            Issue.record("prepare chose a catalog among two")
        } catch {
            #expect(error.code == .catalogUnavailable)
            #expect(error.message.contains("'fixture-game'") && error.message.contains("'other-game'") && error.message.contains("catalog id"), "\(error.message)")
        }
        let named = try fixture.manager(url: Self.unreachable) { $0.catalogID = "other-game" }
        try await named.prepare(online: false)
        let request = ResourceRequest(tags: ["x"], manager: named)
        try await request.beginAccessingResources()
        #expect(request.path(forResource: "x/a.txt") != nil)
        try request.endAccessingResources()

        let unknown = try fixture.manager(url: Self.unreachable) { $0.catalogID = "third-game" }
        do throws(ResourceError) {
            try await unknown.prepare(online: false)
            Issue.record("prepare used a catalog of another id")
        } catch {
            #expect(error.code == .catalogUnavailable && error.message.contains("'third-game'"), "\(error.message)")
        }
    }

    @Test func aMirrorThatServesAnotherCatalogIDIsRefusedNamingBoth() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        let other = try CatalogFixture(rules: #"{ "catalogID": "other-game", "tags": { "x": { "include": ["x"] } } }"#)
        try other.write("x/a.txt", Data("x\n".utf8))
        try await other.build()
        var oldURL: URL?
        try await withTestServer(root: fixture.game.catalog) { old in
            oldURL = old.baseURL
            try await Self.install(["small"], fixture: fixture, url: old.baseURL)
        }
        try await withTestServer(root: other.catalog) { wrongMirror in
            // The primary is gone; the mirror answers with another catalog.
            let old = try #require(oldURL)
            let manager = try fixture.manager(url: old) { configuration in
                configuration.mirrors = [wrongMirror.baseURL]
                configuration.allowsUnsignedCatalogFromMirrors = true
            }
            do throws(ResourceError) {
                try await manager.prepare()
                Issue.record("a mirror serving another catalog was accepted")
            } catch {
                #expect(error.code == .invalidCatalog)
                #expect(error.message.contains("'other-game'") && error.message.contains("'fixture-game'")
                        && error.message.contains(wrongMirror.baseURL.absoluteString), "\(error.message)")
            }
            #expect(try manager.store.storedCatalogIDs() == ["fixture-game"])
            #expect(manager.currentVersion == 1)
        }
    }

    @Test func aNewURLServingTheSameIDUnderOtherKeysIsRefused() async throws {
        let first = try await SignedCatalogTests.World.make()
        let otherKey = try SigningKey(seed: Data(32..<64))
        let second = try await SignedCatalogTests.World.make(keys: [otherKey])
        let store = first.fixture.stores.appending("store")
        try await withTestServer(root: first.root) { server in
            let manager = try first.manager(url: server.baseURL)
            try await manager.prepare()
        }
        try await withTestServer(root: second.root) { server in
            let manager = try second.manager(url: server.baseURL, trusting: [otherKey.publicKey]) { $0.storeDirectory = store }
            do throws(ResourceError) {
                try await manager.prepare()
                Issue.record("a catalog of the same id under other keys was accepted")
            } catch {
                #expect(error.code == .untrustedCatalog)
                #expect(error.message.contains("two catalogs with one id"), "\(error.message)")
            }
            #expect(try manager.store.followedCatalogURLs().count == 1)
        }
    }
}
