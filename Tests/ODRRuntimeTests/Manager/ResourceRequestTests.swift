import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Requests against a real catalog served over loopback, installed into real stores.
struct ResourceRequestTests {
    @Test func beginDownloadsAndTheFilesAreReadable() async throws {
        let fixture = try await ManagerFixture.make()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            #expect(request.state == .accessing)
            let map = try #require(request.url(forResource: "map", withExtension: "json", subdirectory: "small"))
            #expect(try Data(contentsOf: map) == fixture.game.contents(of: "small/map.json"))
            let twin = try #require(request.path(forResource: "small/copy/map-again.json"))
            #expect(FileManager.default.contents(atPath: twin) == (try fixture.game.contents(of: "small/map.json")))
            #expect(request.url(forResource: "shared/palette.bin") != nil, "shared packs come with the tag")
            #expect(request.url(forResource: "big/music.bin") == nil, "a tag the request does not hold")
            #expect(request.progress.fractionCompleted == 1)
            try request.endAccessingResources()
            #expect(request.url(forResource: "small/map.json") == nil)
        }
    }

    @Test func stateMachineMisuseIsReportedWithItsCode() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["small"], manager: manager)
            #expect(throws: ResourceError.self) { try request.endAccessingResources() }
            do throws(ResourceError) { try request.endAccessingResources() } catch { #expect(error.code == .endBeforeBegin) }
            try await request.beginAccessingResources()
            do throws(ResourceError) { try await request.beginAccessingResources(); Issue.record("begin twice succeeded") } catch { #expect(error.code == .beginTwice) }
            try request.endAccessingResources()
            do throws(ResourceError) { try request.endAccessingResources(); Issue.record("end twice succeeded") } catch { #expect(error.code == .endBeforeBegin) }
            do throws(ResourceError) { try await request.beginAccessingResources(); Issue.record("begin after end succeeded") } catch { #expect(error.code == .beginAfterEnd) }
            #expect(request.state == .ended)
        }
    }

    @Test func unknownTagIsAnInvalidTagErrorAndChangesNothing() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["small", "level9"], manager: manager)
            do throws(ResourceError) { try await request.beginAccessingResources(); Issue.record("unknown tag accepted") } catch {
                #expect(error.code == .invalidTag)
                #expect(error.message.contains("level9"))
            }
            #expect(request.state == .initial)
            #expect(ManagerFixture.packRequests(server).isEmpty)
        }
    }

    @Test func conditionalBeginNeverDownloads() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let first = ResourceRequest(tags: ["small"], manager: manager)
            #expect(await first.conditionallyBeginAccessingResources() == false)
            #expect(first.state == .initial)
            await server.waitUntilIdle()
            #expect(ManagerFixture.packRequests(server).isEmpty)

            try await first.beginAccessingResources()
            try first.endAccessingResources()
            let downloaded = ManagerFixture.packRequests(server).count
            let second = ResourceRequest(tags: ["small"], manager: manager)
            #expect(await second.conditionallyBeginAccessingResources())
            #expect(second.state == .accessing)
            #expect(second.url(forResource: "small/notes.txt") != nil)
            await server.waitUntilIdle()
            #expect(ManagerFixture.packRequests(server).count == downloaded)
        }
    }

    @Test func concurrentRequestsForTheSameTagsDownloadEachPackOnce() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 2 << 20)
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 8 << 20)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let requests = (0..<6).map { ResourceRequest(tags: $0 % 2 == 0 ? ["big"] : ["big", "small"], manager: manager) }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for request in requests { group.addTask { try await request.beginAccessingResources() } }
                try await group.waitForAll()
            }
            #expect(requests.allSatisfy { $0.state == .accessing })
            await server.waitUntilIdle()
            let packs = ManagerFixture.packRequests(server)
            #expect(packs.count == Set(packs).count, "each pack downloaded once: \(packs)")
            #expect(Set(packs).count == (try fixture.game.manifest(1)).packs.count)
        }
    }

    @Test func inUseLimitRefusesAndChangesNothing() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        let bigBytes = try #require(try fixture.game.manifest(1).tags.first { $0.name == "big" }).installedBytes
        try await withTestServer(root: fixture.game.catalog) { server in
            // Room for big alone, not for big beside small's own pack.
            let manager = try fixture.manager(url: server.baseURL) { $0.inUseLimit = bigBytes + 1000 }
            try await manager.prepare()
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            let before = ManagerFixture.packRequests(server)
            let big = ResourceRequest(tags: ["big"], manager: manager)
            do throws(ResourceError) { try await big.beginAccessingResources(); Issue.record("over the limit succeeded") } catch {
                #expect(error.code == .exceededMaximumInUseSize)
            }
            #expect(big.state == .initial)
            await server.waitUntilIdle()
            #expect(ManagerFixture.packRequests(server) == before, "nothing was downloaded")
            // The small request still holds its tags, and ending it frees room for big.
            #expect(small.url(forResource: "small/map.json") != nil)
            try small.endAccessingResources()
            try await big.beginAccessingResources()
            #expect(big.state == .accessing)
        }
    }

    @Test func purgeNeverRemovesPacksInUseAndFollowsReleases() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let small = ResourceRequest(tags: ["small"], manager: manager)
            let big = ResourceRequest(tags: ["big"], manager: manager)
            try await small.beginAccessingResources()
            try await big.beginAccessingResources()
            #expect(try await manager.purge(bytes: 1 << 40).deletions.isEmpty, "everything is in use")

            try big.endAccessingResources()
            let manifest = try fixture.game.manifest(1)
            let bigOnly = Set(manifest.packs.filter { $0.tags == ["big"] }.map(\.id))
            let plan = try manager.purgePlan(bytes: 1 << 40)
            #expect(Set(plan.deletions.map(\.packID)) == bigOnly, "only the pack no request holds; the shared one stays")
            let done = try await manager.purge(bytes: 1 << 40)
            #expect(Set(done.deletions.map(\.packID)) == bigOnly)
            #expect(done.shortfall > 0)
            for id in bigOnly { #expect(!FileManager.default.fileExists(atPath: manager.store.packURL(id: id).path)) }
            #expect(small.url(forResource: "shared/palette.bin") != nil)
            #expect(try Data(contentsOf: #require(small.url(forResource: "small/map.json"))) == fixture.game.contents(of: "small/map.json"))
        }
    }

    @Test func deinitEndsAccess() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 200_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            do {
                let request = ResourceRequest(tags: ["big"], manager: manager)
                try await request.beginAccessingResources()
                #expect(try await manager.purge(bytes: 1 << 40).deletions.isEmpty)
            }
            let done = try await manager.purge(bytes: 1 << 40)
            #expect(!done.deletions.isEmpty, "released by deinit, so purgeable")
        }
    }

    @Test(.timeLimit(.minutes(1))) func cacheBudgetPurgesTheLeastRecentlyUsedReleasedPacksWithAReason() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        let sizes = try fixture.game.manifest(1).tags.reduce(into: [String: Int64]()) { $0[$1.name] = $1.installedBytes }
        try await withTestServer(root: fixture.game.catalog) { server in
            // Room for big's packs (their files in whole blocks and their folders: about 20 KiB over
            // the manifest's sizes), not for big's and small's (over 50 KiB on disk) together.
            let manager = try fixture.manager(url: server.baseURL) { $0.cacheBudget = sizes["big"]! + 32 << 10 }
            try await manager.prepare()
            let events = manager.events()
            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            try small.endAccessingResources()
            let big = ResourceRequest(tags: ["big"], manager: manager)
            try await big.beginAccessingResources()
            #expect(big.state == .accessing)
            var purged: [PurgeReason] = []
            for await event in events {
                if case .packPurged(_, _, let reason, _) = event { purged.append(reason) }
                if case .packInstalled = event, purged.count > 0 { break }
            }
            #expect(!purged.isEmpty)
            #expect(try manager.store.usage().installedBytes <= sizes["big"]! + 32 << 10)
        }
    }

    @Test func concurrentInstallsNeverOverrunTheCacheBudget() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        let manifest = try fixture.game.manifest(1)
        let sizes = manifest.tags.reduce(into: [String: Int64]()) { $0[$1.name] = $1.installedBytes }
        // As above: room for big's packs on disk, not for small's too.
        let budget = try #require(sizes["big"]) + 32 << 10
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.cacheBudget = budget }
            try await manager.prepare()
            // On an empty store, small's and big's packs (three, one shared) start installing at
            // once; each fits the budget alone, not all together. Reservations must stop the
            // installs that would overrun it, which fail with cache-budget-exceeded, instead of all three
            // passing the check.
            let outcomes = try await withThrowingTaskGroup(of: ResourceError.Code?.self) { group in
                for tags: Set<String> in [["small"], ["big"]] {
                    group.addTask {
                        let request = ResourceRequest(tags: tags, manager: manager)
                        do throws(ResourceError) {
                            try await request.beginAccessingResources()
                            return nil
                        } catch {
                            return error.code
                        }
                    }
                }
                return try await group.reduce(into: [ResourceError.Code?]()) { $0.append($1) }
            }
            let packs = try manager.store.packs().map { "\($0.id.prefix(6)) \($0.installedBytes) \($0.isInstalled)" }
            #expect(try manager.store.usage().installedBytes <= budget, "\(outcomes) \(packs) budget \(budget) sizes \(sizes)")
            #expect(outcomes.allSatisfy { $0 == nil || $0 == .cacheBudgetExceeded }, "\(outcomes)")
        }
    }

    @Test func offlineStartUsesTheStoredCatalog() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        var catalogURL: URL?
        try await withTestServer(root: fixture.game.catalog) { server in
            catalogURL = server.baseURL
            let manager = try fixture.manager(url: server.baseURL)
            let online = try await manager.prepare()
            #expect(online.fallback == nil)
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            try request.endAccessingResources()
        }
        // The server is gone: the same URL now refuses connections.
        let manager = try fixture.manager(url: try #require(catalogURL))
        let log = ManagerEventLog(manager)
        let snapshot = try await manager.prepare()
        #expect(manager.currentVersion == 1)
        // The game can tell it plays offline, and since when: the returned snapshot and an event say so.
        let fallback = try #require(snapshot.fallback)
        #expect(fallback.reason.code == .networkUnavailable, "\(fallback.reason)")
        let checkedAt = try #require(fallback.checkedAt)
        #expect(abs(checkedAt - Date().timeIntervalSince1970) < 600)
        let failures = log.all.compactMap { event -> (ResourceError.Code, Double?)? in
            if case let .catalogCheckFailed(code, _, storedCheckedAt) = event { (code, storedCheckedAt) } else { nil }
        }
        #expect(failures.count == 1 && failures.first?.0 == .networkUnavailable && failures.first?.1 == checkedAt, "\(log.all)")
        let request = ResourceRequest(tags: ["small"], manager: manager)
        #expect(await request.conditionallyBeginAccessingResources())
        #expect(try Data(contentsOf: #require(request.url(forResource: "small/map.json"))) == fixture.game.contents(of: "small/map.json"))
    }

    @Test func cancellingProgressFailsTheBeginWithCancelledAndHoldsNothing() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 4 << 20)
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 256 << 10)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["big"], manager: manager)
            let begin = await ManagerFixture.beginAndAwaitFirstBytes(request)
            request.progress.cancel()
            do { try await begin.value; Issue.record("cancelled begin succeeded") } catch let error as ResourceError {
                #expect(error.code == .cancelled)
            }
            #expect(request.state == .initial)
            #expect(try await manager.purge(bytes: 1 << 40).shortfall > 0)
        }
    }

    @Test func manyConcurrentRequestsOverOverlappingTagsFinishWithoutDeadlock() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let tagSets: [Set<String>] = [["small"], ["big"], ["small", "big"]]
            try await withThrowingTaskGroup(of: Void.self) { group in
                for i in 0..<1000 {
                    group.addTask {
                        let request = ResourceRequest(tags: tagSets[i % 3], manager: manager)
                        if await !request.conditionallyBeginAccessingResources() {
                            try await request.beginAccessingResources()
                        }
                        #expect(request.state == .accessing)
                        try request.endAccessingResources()
                    }
                }
                try await group.waitForAll()
            }
            // Every tag was released: everything can be purged now.
            let done = try await manager.purge(bytes: 1 << 40)
            #expect(done.deletions.count == (try fixture.game.manifest(1)).packs.count)
        }
    }
}
