import Foundation
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Events name tags, not only packs: a game learns that "small" is ready without mapping pack ids.
struct TagEventTests {
    @Test func aTagIsAvailableOnceAllItsPacksAreInstalledAndPurgedWhenOneGoes() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 20_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let log = ManagerEventLog(manager)
            let manifest = try fixture.game.manifest(1)

            _ = try await manager.fetch(tags: ["small"])
            // Each installed pack names the tags it serves; "small" is available once, after the last of its packs.
            var installed: [String: [String]] = [:]
            for case let .packInstalled(id, _, tags) in log.all { installed[id] = tags }
            let smallPacks = manifest.packs.filter { $0.tags.contains("small") }
            #expect(installed == Dictionary(uniqueKeysWithValues: smallPacks.map { ($0.id, $0.tags) }))
            let available = log.all.compactMap { if case let .tagAvailable(tag) = $0 { tag } else { nil } }
            #expect(available == ["small"], "\(log.all)")
            let lastInstall = try #require(log.all.lastIndex { if case .packInstalled = $0 { true } else { false } })
            #expect(log.all.firstIndex(of: .tagAvailable(tag: "small"))! > lastInstall)

            _ = try await manager.fetch(tags: ["big"])
            #expect(log.all.compactMap { if case let .tagAvailable(tag) = $0 { tag } else { nil } } == ["small", "big"])

            // Purging everything: each purged pack names its tags, and each tag that was available is purged once.
            try await manager.purge(bytes: Int64.max)
            var purged: [String: [String]] = [:]
            for case let .packPurged(id, _, _, tags) in log.all { purged[id] = tags }
            #expect(purged == Dictionary(uniqueKeysWithValues: manifest.packs.map { ($0.id, $0.tags) }))
            let gone = log.all.compactMap { if case let .tagPurged(tag) = $0 { tag } else { nil } }
            #expect(gone.sorted() == ["big", "small"], "\(log.all)")
        }
    }
}
