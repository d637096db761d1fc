import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

extension ManagerEventLog {
    var hintedStarts: [String] { all.compactMap { if case let .hintedPrefetchStarted(id, _, _) = $0 { id } else { nil } } }
    var hintedCancels: [String] { all.compactMap { if case let .hintedPrefetchCancelled(id) = $0 { id } else { nil } } }
    var installed: [String] { all.compactMap { if case let .packInstalled(id, _, _) = $0 { id } else { nil } } }
}

/// Anticipation hints (``ResourceManager/anticipate(tags:likelihood:)``) over a real catalog on
/// loopback and a real store: prefetching, cancelling, yielding to requests, purge order, bad input.
struct AnticipationHintTests {
    static let rules = """
        { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "big": { "include": ["big"] } } }
        """

    /// `a` and `b` one 60 KB file each; `big` eight files of 100 KB, so a cancelled download of it
    /// has verified whole entries to keep.
    static func fixture() async throws -> ManagerFixture {
        let game = try CatalogFixture(rules: rules)
        try game.write("a/data.bin", deterministicBytes(count: 60_000, seed: 1))
        try game.write("b/data.bin", deterministicBytes(count: 60_000, seed: 2))
        for index in 0..<8 { try game.write("big/\(index).bin", deterministicBytes(count: 100_000, seed: UInt64(10 + index))) }
        try await game.build()
        return ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-hint-store"))
    }

    static func packID(_ manager: ResourceManager, tag: String) throws -> String {
        try #require(manager.tags.first { $0.name == tag }?.packs.first)
    }

    @Test func aHintInstallsAMissingPackAndReportsItAsAHintedPrefetch() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let events = ManagerEventLog(manager)
            let a = try Self.packID(manager, tag: "a")
            let hint = try manager.anticipate(tags: ["a"], likelihood: 0.8)
            try await waitUntil("the hinted pack to install") { try manager.store.installedPackIDs().contains(a) }
            #expect(events.hintedStarts == [a])
            try await waitUntil("the install event") { events.installed.contains(a) }
            // The store's log tells the prefetch's start and end, around the install's own line.
            // Pack lines only: loading the catalog logged a `catalog` line first.
            try await waitUntil("the prefetch's last log line") { try manager.store.events().filter { $0.kind != .catalog }.count == 3 }
            let log = try manager.store.events().filter { $0.kind != .catalog }
            #expect(log.map(\.kind) == [.hint, .install, .hint])
            #expect(log.allSatisfy { $0.packID == a })
            #expect(log.first?.reason == "prefetch started: hinted at likelihood 0.8 (tags: a)")
            #expect((log.first?.bytes ?? 0) > 0)
            #expect(log.last?.reason == "prefetch installed: before any request asked for it")
            #expect(log.last?.bytes == log[1].bytes, "the installed bytes, as the install line says")
            // Nothing is held: the in-use count stays zero, and a request now begins without downloading.
            #expect(manager.state.withLock { $0.ledger?.inUseBytes ?? -1 } == 0)
            let request = ResourceRequest(tags: ["a"], manager: manager)
            #expect(await request.conditionallyBeginAccessingResources())
            try request.endAccessingResources()
            try hint.end()
            #expect(try manager.store.installedPackIDs().contains(a), "ending a hint leaves installed packs installed")
            #expect(ManagerFixture.packRequests(server).count == 1)
            // A hint on installed packs starts nothing, and logs nothing.
            try manager.anticipate(tags: ["a"], likelihood: 0.5).end()
            #expect(try manager.store.events().filter { $0.kind != .catalog }.count == 3)
        }
    }

    /// 0 from ``ResourceManager/downloadSize(forTags:)`` once meant "installed" to a C check, which
    /// then ended the hint while the install was still moving verified entries into packs/, and
    /// read the whole archive's size there: the size must only fall while a download runs.
    @Test func theDownloadSizeOnlyFallsWhileAHintedPrefetchRuns() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 400_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let events = ManagerEventLog(manager)
            let big = try Self.packID(manager, tag: "big")
            var last = try manager.downloadSize(forTags: ["big"])
            #expect(last > 0)
            let hint = try manager.anticipate(tags: ["big"], likelihood: 0.5)
            var rises: [String] = []
            try await waitUntil("the hinted pack to install") {
                let size = try manager.downloadSize(forTags: ["big"])
                if size > last { rises.append("\(last) -> \(size)") }
                last = size
                return events.installed.contains(big)
            }
            #expect(rises.isEmpty, "the size rose during the install: \(rises)")
            #expect(try manager.downloadSize(forTags: ["big"]) == 0)
            try hint.end()
        }
    }

    /// The state between an install moving its verified entries out of staging and recording the
    /// pack installed, held still: a download with nothing left to move, no staging, no installed
    /// row. The store's plan alone reads the whole archive there.
    @Test func aRunningDownloadCountsWhatItHasLeftToMove() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let a = try Self.packID(manager, tag: "a")
            let archive = try manager.downloadSize(forTags: ["a"])
            #expect(archive > 0)
            let download = PackDownload(pack: a, bytes: archive)
            download.retain()
            manager.state.withLock { $0.downloads[a] = download }
            download.update(received: archive / 4, of: archive)
            #expect(try manager.downloadSize(forTags: ["a"]) == archive - archive / 4)
            download.update(received: archive, of: archive)
            #expect(try manager.downloadSize(forTags: ["a"]) == 0)
            // Abandoned, a request would start another download: the whole plan again.
            download.release()
            #expect(download.isAbandoned)
            #expect(try manager.downloadSize(forTags: ["a"]) == archive)
            manager.state.withLock { $0.downloads[a] = nil }
        }
    }

    @Test func endingAHintCancelsItsPrefetchAndKeepsVerifiedEntries() async throws {
        let fixture = try await Self.fixture()
        // 800 KB at 100 KB/s: the prefetch runs for seconds.
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let events = ManagerEventLog(manager)
            let big = try Self.packID(manager, tag: "big")
            let hint = try manager.anticipate(tags: ["big"], likelihood: 0.5)
            let download = try #require(manager.state.withLock { $0.downloads[big] })
            // Past two entries: at least one is verified and kept in staging.
            try await waitUntil("two entries of the prefetch to arrive") { download.received > 250_000 }
            try hint.end()
            #expect(download.isAbandoned)
            await download.finished()
            #expect(events.hintedCancels == [big])
            // The store's log tells the prefetch's start and cancellation, with the bytes it had.
            let log = try manager.store.events().filter { $0.packID == big }
            #expect(log.map(\.kind) == [.hint, .hint])
            #expect(log.first?.reason == "prefetch started: hinted at likelihood 0.5 (tags: big)")
            #expect(log.last?.reason == "prefetch cancelled: every hint naming it ended")
            #expect((log.last?.bytes ?? 0) > 250_000)
            #expect(try !manager.store.installedPackIDs().contains(big))
            let staged = manager.store.stagedPacks().first { $0.packID == big }
            #expect((staged?.bytes ?? 0) >= 100_000, "verified entries stay for the next install")
            #expect(manager.state.withLock { $0.hints.isEmpty && $0.downloads[big] == nil })
        }
    }

    @Test(arguments: [TransferPriority.urgent, .normal])
    func aRequestTakesTheBandwidthFromAHintedPrefetchWhichResumesAfter(priority: TransferPriority) async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let big = try Self.packID(manager, tag: "big"), b = try Self.packID(manager, tag: "b")
            let hint = try manager.anticipate(tags: ["big"], likelihood: 0.5)
            let prefetch = try #require(manager.state.withLock { $0.downloads[big] })
            try await waitUntil("the prefetch's first bytes") { prefetch.received > 0 }
            let request = ResourceRequest(tags: ["b"], manager: manager)
            request.loadingPriority = priority
            // The request's first bytes arrive while the prefetch is paused, not after it.
            let begin = await ManagerFixture.beginAndAwaitFirstBytes(request)
            #expect(manager.state.withLock { $0.yieldingToWaits.contains(big) }, "the prefetch yields while the request downloads")
            #expect(!prefetch.isFinished)
            try await begin.value
            // The request's 60 KB came in while the 800 KB prefetch was still going: it did not wait for it.
            #expect(!prefetch.isFinished)
            #expect(try manager.store.installedPackIDs().contains(b))
            #expect(manager.state.withLock { $0.yieldingToWaits.isEmpty && $0.downloadWaits == 0 })
            try request.endAccessingResources()
            // And the prefetch resumes once the request's download is done.
            await prefetch.finished()
            #expect(try manager.store.installedPackIDs().contains(big))
            try hint.end()
        }
    }

    /// Issue 24: "a hinted prefetch never delays a request's first byte by more than one in-flight
    /// chunk". Counted in bytes the prefetch's transfers took from the network (not time): from
    /// just before the request begins until its pack is installed, the prefetch takes at most one
    /// chunk (one curl write callback, 16 KiB); then it resumes. Once the synchronous begin has
    /// returned, the prefetch is paused and takes not a byte.
    ///
    /// The server sends 100 KB/s in slices of 5 KB, so the chunk is never a slice split by chance.
    @Test(arguments: [TransferPriority.urgent, .normal])
    func aRequestBeginningStopsAHintedPrefetchWithinOneChunk(priority: TransferPriority) async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            let transport = try NetworkBytesTransport()
            let manager = try fixture.manager(url: server.baseURL) { $0.transport = transport }
            try await manager.loadCatalog()
            let big = try Self.packID(manager, tag: "big"), b = try Self.packID(manager, tag: "b")
            let snapshot = try #require(manager.state.withLock { $0.snapshot })
            let bigURL = snapshot.packURL(id: big), bURL = snapshot.packURL(id: b)
            let hint = try manager.anticipate(tags: ["big"], likelihood: 0.5)
            try await waitUntil("the prefetch to be under way") { transport.networkBytes(of: bigURL) > 50_000 }
            // What the prefetch had taken when the request's pack was installed: before the request's
            // wait ends, so before the prefetch resumes.
            let atInstall = Locked<Int64?>(nil)
            let token = manager.observeEvents { event in
                guard case let .packInstalled(id, _, _) = event, id == b else { return }
                let bytes = transport.networkBytes(of: bigURL)
                atInstall.withLock { $0 = bytes }
            }
            defer { manager.removeEventObserver(token) }
            let request = ResourceRequest(tags: ["b"], manager: manager)
            request.loadingPriority = priority
            let before = transport.networkBytes(of: bigURL)
            let outcome = Locked<Result<Void, ResourceError>?>(nil)
            // The synchronous begin: when it returns, the request has begun.
            let begin = try request.startAccessingResources { result in outcome.withLock { $0 = result } }
            let atBegin = transport.networkBytes(of: bigURL)
            #expect(transport.isPaused(bigURL), "a begun request finds the prefetch paused, not paused later by a task")
            await begin.value
            try #require(outcome.withLock { $0 }).get()
            let atRequestInstalled = try #require(atInstall.withLock { $0 })
            let during = atRequestInstalled - before
            #expect(during <= Int64(TransferSession.chunkBytes),
                    "the prefetch took \(during) bytes while the request downloaded; one chunk is \(TransferSession.chunkBytes)")
            #expect(atRequestInstalled == atBegin, "not a byte once the begin returned")
            #expect(transport.networkBytes(of: bURL) >= 60_000, "the request downloaded its pack meanwhile")
            let prefetch = try #require(manager.state.withLock { $0.downloads[big] })
            #expect(!prefetch.isFinished, "the prefetch was still going when the request began")
            // And it goes on after the request's download.
            let resumedFrom = transport.networkBytes(of: bigURL)
            try await waitUntil("the prefetch to resume") { transport.networkBytes(of: bigURL) > resumedFrom }
            try request.endAccessingResources()
            try hint.end()
        }
    }

    @Test func aRequestJoiningAHintedPrefetchIsNotPausedByIt() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 400_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let big = try Self.packID(manager, tag: "big")
            let hint = try manager.anticipate(tags: ["big", "a"], likelihood: 0.5)
            let prefetch = try #require(manager.state.withLock { $0.downloads[big] })
            try await waitUntil("the prefetch's first bytes") { prefetch.received > 0 }
            // A request for the hinted tag joins the prefetch, which then runs for it.
            let request = ResourceRequest(tags: ["big"], manager: manager)
            try await request.beginAccessingResources()
            #expect(request.state == .accessing)
            #expect(ManagerFixture.packRequests(server).filter { $0.contains(big) }.count >= 1)
            let log = try manager.store.events().filter { $0.packID == big }
            #expect(log.map(\.kind) == [.hint, .install, .hint])
            #expect(log.last?.reason == "prefetch installed: a request (or prefetch, fetch) joined it first")
            try request.endAccessingResources()
            try hint.end()
            #expect(manager.state.withLock { $0.yieldingToWaits.isEmpty && $0.hints.isEmpty })
        }
    }

    @Test func purgingKeepsAPackHintedAt09OverAnUnhintedOne() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.loadCatalog()
            let a = try Self.packID(manager, tag: "a"), b = try Self.packID(manager, tag: "b")
            // b is used first, so it is the least recently used: plain LRU purges it first.
            for tag in ["b", "a"] {
                let request = ResourceRequest(tags: [tag], manager: manager)
                try await request.beginAccessingResources()
                try request.endAccessingResources()
                if tag == "b" { try await Task.sleep(for: .milliseconds(20)) }  // distinct last-use times
            }
            #expect(try manager.purgePlan(bytes: 1).deletions.map(\.packID) == [b])
            let hint = try manager.anticipate(tags: ["b"], likelihood: 0.9)
            let plan = try manager.purgePlan(bytes: 120_000)
            #expect(plan.deletions.map(\.packID) == [a, b])
            #expect(plan.deletions.last?.reason == .leastLikelyHint)
            let purged = try await manager.purge(bytes: 1)
            #expect(purged.deletions.map(\.packID) == [a])
            try hint.end()
            #expect(try manager.purgePlan(bytes: 1).deletions.map(\.packID) == [b])
            // Hinted again, b is the last pack: purged as the least likely hinted, and logged so.
            let again = try manager.anticipate(tags: ["b"], likelihood: 0.9)
            let last = try await manager.purge(bytes: 1)
            #expect(last.deletions.map(\.packID) == [b])
            #expect(last.deletions.first?.reason == .leastLikelyHint)
            let line = try #require(try manager.store.events().last)
            #expect(line.kind == .purge && line.packID == b)
            #expect(line.reason == PurgeReason.leastLikelyHint.rawValue + " (tags: b)", "the reason, and the tags the pack served")
            try again.end()
        }
    }

    @Test func hintedBytesNoRequestUsedStopPrefetchesUntilARequestUsesHintedBytes() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            // No memory: the measure is the last judgment, so one wrong and one right guess tell.
            let manager = try fixture.manager(url: server.baseURL) { $0.prefetchLearning = .init(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0) }
            try await manager.loadCatalog()
            let events = ManagerEventLog(manager)
            let a = try Self.packID(manager, tag: "a"), b = try Self.packID(manager, tag: "b")
            #expect(manager.prefetchMeasure == 1)
            // A wrong guess: a is prefetched, the hint ends, and a goes before any request used it.
            let wrong = try manager.anticipate(tags: ["a"], likelihood: 0.8)
            try await waitUntil("the hinted pack to install") { try manager.store.installedPackIDs().contains(a) && events.installed.contains(a) }
            try await waitUntil("the prefetch's last log line") { try manager.store.events().contains { $0.reason == "prefetch installed: before any request asked for it" } }
            try wrong.end()
            #expect(manager.prefetchMeasure == 1, "not judged while the pack may still be used")
            #expect(try await manager.purge(bytes: 1).deletions.map(\.packID) == [a])
            #expect(manager.prefetchMeasure == 0)
            #expect(manager.prefetchLearning.allowance == PrefetchLearning.Allowance.none)
            // Now a hint starts nothing (it still orders purging), and its pack awaits a request.
            let held = try manager.anticipate(tags: ["b"], likelihood: 0.8)
            #expect(events.hintedStarts == [a])
            #expect(manager.state.withLock { $0.downloads[b] } == nil)
            // The hint was right: the request downloads b itself, and the measure recovers.
            let request = ResourceRequest(tags: ["b"], manager: manager)
            try await request.beginAccessingResources()
            #expect(manager.prefetchMeasure == 1)
            #expect(manager.prefetchLearning.allowance == .makeRoom)
            try request.endAccessingResources()
            try held.end()
            // Prefetching again.
            let again = try manager.anticipate(tags: ["a"], likelihood: 0.8)
            #expect(events.hintedStarts == [a, a])
            try again.end()
        }
    }

    /// The measure is kept in the store: a manager that learned its hints go unused writes it, the
    /// next manager on the store starts from it (holding prefetches back), and `odr status`, another
    /// process, reports it.
    @Test(.enabled(if: ODRExecutable.url != nil))
    func theMeasureSurvivesARestartAndOdrStatusReportsIt() async throws {
        let fixture = try await Self.fixture()
        let rule = PrefetchLearning.Rule(makeRoomFrom: 0.6, prefetchFrom: 0.4, memory: 0)
        try await withTestServer(root: fixture.game.catalog) { server in
            do {
                let manager = try fixture.manager(url: server.baseURL) { $0.prefetchLearning = rule }
                try await manager.loadCatalog()
                #expect(try manager.store.prefetchLearning() == nil, "a new store has none")
                let events = ManagerEventLog(manager)
                let a = try Self.packID(manager, tag: "a")
                let wrong = try manager.anticipate(tags: ["a"], likelihood: 0.8)
                try await waitUntil("the hinted pack to install") { try manager.store.installedPackIDs().contains(a) && events.installed.contains(a) }
                try await waitUntil("the prefetch's last log line") { try manager.store.events().contains { $0.reason == "prefetch installed: before any request asked for it" } }
                try wrong.end()
                #expect(try await manager.purge(bytes: 1).deletions.map(\.packID) == [a])
                #expect(manager.prefetchMeasure == 0)
                try await waitUntil("the measure in the store") { try manager.store.prefetchLearning()?.judgments == 1 }
                #expect(try manager.store.prefetchLearning()?.measure == 0)
            }
            // A restart: the new manager holds prefetches back from the start.
            let restarted = try fixture.manager(url: server.baseURL) { $0.prefetchLearning = rule }
            try await restarted.loadCatalog()
            #expect(restarted.prefetchMeasure == 0 && restarted.prefetchLearning.judgments == 1)
            #expect(restarted.prefetchLearning.allowance == PrefetchLearning.Allowance.none)
            let b = try Self.packID(restarted, tag: "b")
            let held = try restarted.anticipate(tags: ["b"], likelihood: 0.8)
            #expect(restarted.state.withLock { $0.downloads[b] } == nil, "no prefetch starts")
            // Ended before any request began b: the held-back pack is judged unused too.
            try held.end()
            try await waitUntil("the second judgment in the store") { try restarted.store.prefetchLearning()?.judgments == 2 }

            let common = ["--catalog", server.baseURL.absoluteString, "--store", fixture.stores.appending("store").path]
            struct Status: Decodable {
                struct Learning: Decodable { var measure: Double; var judgments: Int; var allowance: String }
                var prefetchLearning: Learning?
            }
            let json = try await ODRExecutable.run(["status", "--json"] + common)
            #expect(json.status == 0, "\(json.stderr)")
            let learning = try #require(try JSONDecoder().decode(Status.self, from: Data(json.stdout.utf8)).prefetchLearning)
            #expect(learning.measure == 0 && learning.judgments == 2 && learning.allowance == "none")
            let text = try await ODRExecutable.run(["status"] + common)
            #expect(text.stdout.contains("hints: 0% of recent hinted prefetched bytes were used (measure 0.00, 2 hinted pack(s) judged); hinted prefetches are held back under the standard rule"),
                    "\(text.stdout)")
        }
    }

    @Test func badInputGetsTypedErrorsAndManyHintsCostLittle() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            #expect(throws: ResourceError.self) { _ = try manager.anticipate(tags: ["a"], likelihood: 0.5) }
            do throws(ResourceError) {
                _ = try manager.anticipate(tags: ["a"], likelihood: 0.5)
            } catch {
                #expect(error.code == .catalogUnavailable)
            }
            try await manager.loadCatalog()
            for bad in [-0.1, 1.5, .nan, .infinity] {
                do throws(ResourceError) {
                    _ = try manager.anticipate(tags: ["a"], likelihood: bad)
                    Issue.record("likelihood \(bad) was accepted")
                } catch {
                    #expect(error.code == .invalidArgument)
                }
            }
            do throws(ResourceError) {
                _ = try manager.anticipate(tags: ["a", "nope"], likelihood: 0.5)
                Issue.record("an unknown tag was accepted")
            } catch {
                #expect(error.code == .invalidTag)
            }
            #expect(manager.state.withLock { $0.hints.isEmpty && $0.downloads.isEmpty }, "a rejected hint leaves nothing behind")
            // Installed first, so the many hints below start no download.
            let request = ResourceRequest(tags: ["a"], manager: manager)
            try await request.beginAccessingResources()
            try request.endAccessingResources()
            let hint = try manager.anticipate(tags: ["a"], likelihood: 0.3)
            try hint.end()
            do throws(ResourceError) {
                try hint.end()
                Issue.record("a hint ended twice")
            } catch {
                #expect(error.code == .endBeforeBegin)
            }
            var hints: [ResourceHint] = []
            for index in 0..<5_000 { hints.append(try manager.anticipate(tags: ["a"], likelihood: Double(index % 10) / 10)) }
            let a = try Self.packID(manager, tag: "a")
            #expect(manager.state.withLock { $0.hints.likelihood(ofPack: a) } == 0.9)
            #expect(try manager.purgePlan(bytes: 1).deletions.first?.reason == .leastLikelyHint)
            hints.removeAll()  // released hints end themselves
            #expect(manager.state.withLock { $0.hints.isEmpty })
        }
    }

    /// With one transfer slot held by a paused download, the game queues `first` then `second` at
    /// the same priority; a hint on `second` (`hinted`) makes it start first, as the server's log
    /// shows; without the hint they start in arrival order.
    @Test(arguments: [false, true])
    func aHintedDownloadStartsFirstAmongEqualPriorities(hinted: Bool) async throws {
        let fixture = try await ManagerFixture.onePackPerTag(["busy", "first", "second"], bytes: 200_000, rules: """
            { "tags": { "busy": { "include": ["busy"] }, "first": { "include": ["first"] }, "second": { "include": ["second"] } } }
            """)
        // 200 KB at 100 KB/s: the busy download is still running when the test pauses it.
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.maximumConcurrentTransfers = 1 }
            try await manager.loadCatalog()
            let snapshot = try #require(manager.state.withLock { $0.snapshot })
            let url = { (tag: String) throws -> URL in snapshot.packURL(id: try Self.packID(manager, tag: tag)) }
            let busy = ResourceRequest(tags: ["busy"], manager: manager)
            let busyBegin = await ManagerFixture.beginAndAwaitFirstBytes(busy)
            // A paused transfer keeps its slot: nothing else starts until it resumes.
            manager.transport.setPaused(true, for: try url("busy"))
            var begins: [Task<Void, any Error>] = []
            var requests: [ResourceRequest] = []
            for tag in ["first", "second"] {
                let request = ResourceRequest(tags: [tag], manager: manager)
                request.loadingPriority = .normal
                requests.append(request)
                begins.append(Task { try await request.beginAccessingResources() })
                let tagURL = try url(tag)
                try await waitUntil("\(tag)'s transfer to queue") { manager.transport.liveTransferCount(for: tagURL) == 1 }
            }
            let hint = hinted ? try manager.anticipate(tags: ["second"], likelihood: 0.9) : nil
            #expect(ManagerFixture.packRequests(server).count == 1, "only busy's pack was asked for while its slot was held")
            manager.transport.setPaused(false, for: try url("busy"))
            try await busyBegin.value
            for begin in begins { try await begin.value }
            let ids = try ["busy", "first", "second"].map { ($0, try Self.packID(manager, tag: $0)) }
            var order: [String] = []
            for path in ManagerFixture.packRequests(server) {
                if let (tag, _) = ids.first(where: { path.contains($0.1) }), !order.contains(tag) { order.append(tag) }
            }
            #expect(order == (hinted ? ["busy", "second", "first"] : ["busy", "first", "second"]))
            for request in [busy] + requests { try request.endAccessingResources() }
            try hint?.end()
        }
    }
}

/// Passes transfers to a libcurl ``TransferEngine`` unchanged and keeps each one's operation, so a
/// test can count the bytes each took from the network.
final class NetworkBytesTransport: Transport {
    private let base: TransferEngine
    private let operations = Locked<[(url: URL, operation: TransferOperation)]>([])

    init() throws { base = try TransferEngine() }

    func transfer(_ request: TransferRequest, into sink: any TransferSink) -> any TransferHandle {
        let handle = base.transfer(request, into: sink)
        if let operation = handle as? TransferOperation { operations.withLock { $0.append((request.url, operation)) } }
        return handle
    }

    /// Body bytes every transfer of `url` so far took from the network.
    func networkBytes(of url: URL) -> Int64 {
        operations.withLock { $0.filter { $0.url == url }.map(\.operation) }.reduce(0) { $0 + $1.networkBytes }
    }

    /// Whether `url` has transfers that have not ended, and its caller paused every one.
    func isPaused(_ url: URL) -> Bool {
        let live = operations.withLock { $0.filter { $0.url == url && !$0.operation.isStopped }.map(\.operation) }
        return !live.isEmpty && live.allSatisfy(\.control.userPaused)
    }
}
