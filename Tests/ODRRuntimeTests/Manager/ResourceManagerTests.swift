import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The manager's own API over a real catalog on loopback: sizes, priorities, the gauge, prepare,
/// events, and the request controls (priority, pause, resume) as the server sees them.
struct ResourceManagerTests {
    @Test func downloadSizeCountsOnlyPacksNotInstalled() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        let manifest = try fixture.game.manifest(1)
        func archiveBytes(_ tag: String) -> Int64 {
            manifest.packs.filter { $0.tags.contains(tag) }.reduce(0) { $0 + $1.archiveBytes }
        }
        let shared = manifest.packs.filter { $0.tags == ["big", "small"] }.reduce(Int64(0)) { $0 + $1.archiveBytes }
        #expect(shared > 0, "the fixture's small and big share a pack")
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            #expect(try manager.downloadSize(forTags: ["small"]) == archiveBytes("small"))
            #expect(try manager.downloadSize(forTags: ["small", "big"]) == archiveBytes("small") + archiveBytes("big") - shared)

            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            #expect(try manager.downloadSize(forTags: ["small"]) == 0)
            #expect(try manager.downloadSize(forTags: ["big"]) == archiveBytes("big") - shared, "the shared pack is already here")
            do throws(ResourceError) { _ = try manager.downloadSize(forTags: ["big", "level9"]); Issue.record("unknown tag sized") } catch {
                #expect(error.code == .invalidTag)
            }
        }
    }

    @Test func preservationPriorityPersistsAndRejectsBadInput() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        var catalogURL: URL?
        try await withTestServer(root: fixture.game.catalog) { server in
            catalogURL = server.baseURL
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            #expect(try manager.preservationPriority(forTag: "small") == 0.3, "the catalog's default")
            try manager.setPreservationPriority(0.9, forTags: ["small"])
            #expect(try manager.preservationPriority(forTag: "small") == 0.9)

            let refusals: [(Double, Set<String>, ResourceError.Code)] = [
                (0.5, ["small", "nope"], .invalidTag), (1.5, ["big"], .invalidArgument), (-0.1, ["big"], .invalidArgument),
                (.nan, ["big"], .invalidArgument),
            ]
            for (priority, tags, code) in refusals {
                do throws(ResourceError) {
                    try manager.setPreservationPriority(priority, forTags: tags)
                    Issue.record("accepted \(priority) for \(tags)")
                } catch {
                    #expect(error.code == code)
                    if code == .invalidArgument { #expect(error.message.contains("\(priority)") && error.message.contains("0...1")) }
                }
            }
            #expect(try manager.preservationPriority(forTag: "small") == 0.9, "a refused call changes nothing")
            #expect(try manager.preservationPriority(forTag: "big") == 0.7)
        }
        // A new manager on the same store, with the server gone, remembers the app's setting.
        let again = try fixture.manager(url: try #require(catalogURL))
        #expect(try again.preservationPriority(forTag: "small") == 0.9)
    }

    @Test func theStoreCountsEachBeginOfAPacksUseAcrossRestarts() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        let packs = try fixture.game.manifest(1).packs
        #expect(packs.contains { $0.tags == ["big", "small"] }, "small and big share a pack")
        /// Each pack's expected count: the begun requests whose tags need it.
        func expectCounts(_ store: ResourceStore, small: Int, big: Int) throws {
            for pack in packs {
                let expected = (pack.tags.contains("small") ? small : 0) + (pack.tags.contains("big") ? big : 0)
                #expect(try store.pack(id: pack.id)?.useCount == expected, "pack of \(pack.tags)")
            }
        }
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            for _ in 0 ..< 3 {
                let small = ResourceRequest(tags: ["small"], manager: manager)
                try await small.beginAccessingResources()
                try small.endAccessingResources()
            }
            #expect(await ResourceRequest(tags: ["small"], manager: manager).conditionallyBeginAccessingResources())
            try await ResourceRequest(tags: ["big"], manager: manager).beginAccessingResources()
            manager.lastUse.flush()
            try expectCounts(manager.store, small: 4, big: 1)

            // A new manager on the same store goes on counting.
            let again = try fixture.manager(url: server.baseURL)
            try await again.prepare()
            #expect(await ResourceRequest(tags: ["small"], manager: again).conditionallyBeginAccessingResources())
            again.lastUse.flush()
            try expectCounts(again.store, small: 5, big: 1)
        }
    }

    @Test func gaugeShowsEachTagsStateAndSizes() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 100_000)
        let manifest = try fixture.game.manifest(1)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            func gauge(_ tag: String) throws -> TagGauge { try #require(manager.gauge().first { $0.name == tag }) }
            #expect(try gauge("small").state == .notDownloaded)
            #expect(try gauge("small").downloadBytes == manager.downloadSize(forTags: ["small"]))
            #expect(try gauge("small").installedBytes == manifest.tags.first { $0.name == "small" }?.installedBytes)

            let small = ResourceRequest(tags: ["small"], manager: manager)
            try await small.beginAccessingResources()
            #expect(try gauge("small").state == .inUse)
            #expect(try gauge("small").downloadBytes == 0)
            #expect(try gauge("big").state == .notDownloaded)
            #expect(try gauge("big").downloadBytes == manager.downloadSize(forTags: ["big"]))

            try small.endAccessingResources()
            #expect(try gauge("small").state == .downloaded)
            try manager.setPreservationPriority(0.25, forTags: ["big"])
            #expect(try gauge("big").preservationPriority == 0.25)
        }
    }

    @Test func prepareInstallsInitialTagsThenPrefetchesInOrder() async throws {
        let fixture = try await ManagerFixture.onePackPerTag(["boot", "first", "second", "later"], bytes: 20_000, rules: """
            {
              "tags": {
                "boot": { "include": ["boot"] },
                "first": { "include": ["first"] },
                "second": { "include": ["second"] },
                "later": { "include": ["later"] }
              },
              "initialInstall": ["boot"],
              "prefetchOrder": ["second", "first"]
            }
            """)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.maximumConcurrentTransfers = 1 }
            try await manager.prepare()
            // Ready: the initial-install tag is local the moment prepare returns.
            #expect(await ResourceRequest(tags: ["boot"], manager: manager).conditionallyBeginAccessingResources())
            await manager.waitForPrefetch()
            #expect(await ResourceRequest(tags: ["second"], manager: manager).conditionallyBeginAccessingResources())
            #expect(await ResourceRequest(tags: ["first"], manager: manager).conditionallyBeginAccessingResources())
            #expect(await !ResourceRequest(tags: ["later"], manager: manager).conditionallyBeginAccessingResources(), "not in the prefetch order")
            let packs = ManagerFixture.packRequests(server)
            #expect(packs == [try fixture.packPath(ofTag: "boot"), try fixture.packPath(ofTag: "second"), try fixture.packPath(ofTag: "first")])
        }
    }

    @Test func raisingAQueuedRequestToUrgentMovesItAhead() async throws {
        let fixture = try await ManagerFixture.onePackPerTag(["a", "b", "c", "d"], bytes: 300_000, rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] }, "d": { "include": ["d"] } } }
            """)
        // One transfer at a time, and `a` takes about two seconds: the rest wait in the queue.
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 150_000)) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.maximumConcurrentTransfers = 1 }
            try await manager.prepare()

            let first = ResourceRequest(tags: ["a"], manager: manager)
            let running = await ManagerFixture.beginAndAwaitFirstBytes(first)

            var queued: [ResourceRequest] = []
            var tasks: [Task<Void, any Error>] = [running]
            for (tag, priority) in [("b", 0.1), ("c", 0.6), ("d", 0.3)] {
                let request = ResourceRequest(tags: [tag], manager: manager)
                request.loadingPriority = .loading(priority)
                queued.append(request)
                tasks.append(Task { try await request.beginAccessingResources() })
            }
            // Wait until every begin has its download (on a loaded machine the tasks may start late),
            // then make the lowest one urgent.
            let deadline = ContinuousClock.now + .seconds(60)
            while Set(manager.gauge().filter { $0.state == .downloading }.map(\.name)) != ["a", "b", "c", "d"] {
                guard ContinuousClock.now < deadline else { Issue.record("the begins never reached the manager"); return }
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(first.state == .requested, "a is still downloading, so the others are queued")
            queued[0].loadingPriority = .urgent
            for task in tasks { try await task.value }
            let order = try ["a", "b", "c", "d"].map { try fixture.packPath(ofTag: $0) }
            #expect(ManagerFixture.packRequests(server) == order, "\(ManagerFixture.packRequests(server).map { path in order.firstIndex(of: path).map { ["a", "b", "c", "d"][$0] } ?? path })")
        }
    }

    @Test func pausingProgressStopsBytesAndResumingFinishes() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 512 << 10)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["big"], manager: manager)
            let begin = await ManagerFixture.beginAndAwaitFirstBytes(request)
            request.progress.pause()
            #expect(request.progress.isPaused)
            // Bytes already in flight may still land (later on a loaded machine); once the count has
            // settled, nothing moves while paused.
            var paused = request.progress.completedUnitCount
            for _ in 0..<40 {
                try await Task.sleep(for: .milliseconds(250))
                let now = request.progress.completedUnitCount
                if now == paused { break }
                paused = now
            }
            try await Task.sleep(for: .milliseconds(800))
            #expect(request.progress.completedUnitCount == paused, "no bytes arrive while paused")
            #expect(paused < request.progress.totalUnitCount - 1, "paused part way")
            #expect(request.state == .requested)

            request.progress.resume()
            try await begin.value
            #expect(request.state == .accessing)
            #expect(request.progress.fractionCompleted == 1)
            #expect(try Data(contentsOf: #require(request.url(forResource: "big/music.bin"))) == fixture.game.contents(of: "big/music.bin"))
        }
    }

    @Test func quickPauseAndResumePairsNeverLeaveTheDownloadPaused() async throws {
        // Foundation runs pausing and resuming handlers asynchronously, so they can arrive out of
        // order; whatever the order, the request ends unpaused and finishes.
        let fixture = try await ManagerFixture.make(bigBytes: 1 << 20)
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 1 << 20)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["big"], manager: manager)
            let begin = await ManagerFixture.beginAndAwaitFirstBytes(request)
            for _ in 0..<300 {
                request.progress.pause()
                request.progress.resume()
            }
            #expect(!request.progress.isPaused)
            let finished = await withTaskGroup(of: Bool.self) { group in
                group.addTask { (try? await begin.value) != nil }
                group.addTask {
                    // A hang guard, not a schedule: after 90 s the begin is cancelled so the test ends.
                    guard (try? await Task.sleep(for: .seconds(90))) != nil else { return true }
                    request.progress.cancel()
                    return false
                }
                let first = await group.next() ?? false
                group.cancelAll()
                return first
            }
            #expect(finished, "the download stayed paused after the last resume")
            #expect(request.state == .accessing)
        }
    }

    @Test func completionHandlerFormReportsSuccessAndErrors() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let good = ResourceRequest(tags: ["small"], manager: manager)
            let goodError: ResourceError? = await withCheckedContinuation { continuation in
                good.beginAccessingResources { continuation.resume(returning: $0) }
            }
            #expect(goodError == nil)
            #expect(good.state == .accessing)

            let bad = ResourceRequest(tags: ["nope"], manager: manager)
            // The handler gets the typed error itself: no cast.
            let badError: ResourceError? = await withCheckedContinuation { continuation in
                bad.beginAccessingResources { continuation.resume(returning: $0) }
            }
            #expect(badError?.code == .invalidTag)
        }
    }

    @Test func installsArePostedToNotificationCenter() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let seen = NotificationRecorder()
            let observer = NotificationCenter.default.addObserver(forName: ResourceManager.packInstalledNotification, object: manager, queue: nil) { note in
                if case .packInstalled(let id, _, _)? = note.userInfo?["event"] as? ResourceManagerEvent { seen.add(id) }
            }
            defer { NotificationCenter.default.removeObserver(observer) }
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            let expected = Set(try fixture.game.manifest(1).packs.filter { $0.tags.contains("small") }.map(\.id))
            #expect(seen.ids == expected)
        }
    }
}

/// Pack ids seen by a notification observer, which runs on the posting thread.
private final class NotificationRecorder: Sendable {
    private let seen = Locked<Set<String>>([])
    func add(_ id: String) { seen.withLock { _ = $0.insert(id) } }
    var ids: Set<String> { seen.withLock { $0 } }
}
