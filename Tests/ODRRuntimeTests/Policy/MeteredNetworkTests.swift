import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A network probe whose answer the test sets, counting how often it was asked.
final class SwitchableNetwork: NetworkConditionProbe {
    private let state: Locked<(condition: NetworkCondition, checks: Int)>

    init(_ condition: NetworkCondition) { state = Locked((condition, 0)) }

    func currentCondition() -> NetworkCondition {
        state.withLock { state in
            state.checks += 1
            return state.condition
        }
    }

    func set(_ condition: NetworkCondition) { state.withLock { $0.condition = condition } }
    var checks: Int { state.withLock { $0.checks } }
}

extension ManagerEventLog {
    var waiting: [DownloadHold] { all.compactMap { if case let .downloadWaiting(_, reason) = $0 { reason } else { nil } } }
    var resumed: [String] { all.compactMap { if case let .downloadResumed(id) = $0 { id } else { nil } } }
}

/// The download policy over a real catalog on loopback, with an injected network probe: which
/// downloads may use a metered network, the daily metered budget, waiting and resuming, and the
/// re-checks of the network.
struct MeteredNetworkTests {
    static let rules = """
        { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] } },
          "prefetchOrder": ["c"] }
        """

    static func fixture() async throws -> ManagerFixture {
        try await ManagerFixture.onePackPerTag(["a", "b", "c"], bytes: 60_000, rules: rules)
    }

    /// A manager over `server` whose network is `network`, with `policy` applied and no timers
    /// unless the test gives a clock.
    static func manager(_ fixture: ManagerFixture, _ server: CatalogServer, network: SwitchableNetwork, store: String = "store",
                        clock: (any ManagerClock)? = nil, _ policy: (inout DownloadPolicy) -> Void = { _ in }) throws -> ResourceManager {
        try fixture.manager(url: server.baseURL, store: store) { configuration in
            configuration.networkProbe = network
            configuration.diskCheckInterval = nil
            configuration.downloadPolicy.networkCheckInterval = nil
            if let clock {
                configuration.clock = clock
                configuration.downloadPolicy.networkCheckInterval = .seconds(30)
            }
            policy(&configuration.downloadPolicy)
        }
    }

    /// Begins `tags` at `priority` and returns the error, or `nil` when the begin succeeded.
    static func begin(_ tags: Set<String>, _ manager: ResourceManager, priority: TransferPriority) async -> ResourceError? {
        let request = ResourceRequest(tags: tags, manager: manager)
        request.loadingPriority = priority
        do throws(ResourceError) {
            try await request.beginAccessingResources()
            return nil
        } catch {
            return error
        }
    }

    /// Begins `tags` at `priority` in a task and returns once the manager says the download waits
    /// for `reason`.
    static func beginUntilWaiting(_ tags: Set<String>, _ manager: ResourceManager, priority: TransferPriority,
                                  events: ManagerEventLog, reason: DownloadHold) async throws -> (ResourceRequest, Task<Void, any Error>) {
        let request = ResourceRequest(tags: tags, manager: manager)
        request.loadingPriority = priority
        let begin = Task { try await request.beginAccessingResources() }
        try await waitUntil("the download to wait (\(reason))") { events.waiting.last == reason }
        return (request, begin)
    }

    @Test func urgentDownloadsUseAMeteredNetworkByDefault() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered))
            try await manager.loadCatalog()
            #expect(await Self.begin(["a"], manager, priority: .urgent) == nil)
            #expect(await Self.begin(["b"], manager, priority: .normal) == nil, "a request's default priority counts as urgent")
            #expect(ManagerFixture.packRequests(server).count == 2)
            #expect(manager.meteredBytesToday > 0, "bytes over a metered network are counted")
        }
    }

    @Test func urgentDownloadsForbiddenOnMeteredFailWithNetworkPolicyAndDownloadNothing() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered)) {
                $0.allowsMeteredUrgent = false
                $0.waitsWhenForbidden = false
            }
            try await manager.loadCatalog()
            let error = await Self.begin(["a"], manager, priority: .urgent)
            #expect(error?.code == .networkPolicy)
            #expect(error?.message.contains("allowsMeteredUrgent") == true && error?.message.contains("--allow-metered") == true)
            #expect(ManagerFixture.packRequests(server).isEmpty)
            #expect(manager.meteredBytesToday == 0)
        }
    }

    @Test func nonUrgentDownloadsWaitOnMeteredByDefaultAndStayCancellable() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered))
            let events = ManagerEventLog(manager)
            try await manager.loadCatalog()
            let (request, begin) = try await Self.beginUntilWaiting(["a"], manager, priority: .loading(0.2), events: events,
                                                                    reason: .meteredNonUrgentNotAllowed)
            #expect(request.state == .requested)
            request.progress.cancel()
            let outcome = await begin.result
            #expect((outcome.failureValue as? ResourceError)?.code == .cancelled)
            #expect(request.state == .initial)
            #expect(ManagerFixture.packRequests(server).isEmpty, "nothing travelled over the metered network")
        }
    }

    @Test func nonUrgentDownloadsFailWithNetworkPolicyWhenTheyMayNotWait() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered)) { $0.waitsWhenForbidden = false }
            try await manager.loadCatalog()
            let error = await Self.begin(["a"], manager, priority: .loading(0.1))
            #expect(error?.code == .networkPolicy)
            #expect(error?.message.contains("allowsMeteredNonUrgent") == true)
            #expect(ManagerFixture.packRequests(server).isEmpty)
        }
    }

    @Test func nonUrgentDownloadsUseAMeteredNetworkWhenAllowed() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered)) { $0.allowsMeteredNonUrgent = true }
            try await manager.loadCatalog()
            #expect(await Self.begin(["a"], manager, priority: .loading(0)) == nil)
            #expect(ManagerFixture.packRequests(server) == [try fixture.packPath(ofTag: "a")])
        }
    }

    @Test func offlineEvenUrgentDownloadsWaitUntilTheNetworkIsBackOrFailWhenTheyMayNotWait() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let network = SwitchableNetwork(.offline)
            let manager = try Self.manager(fixture, server, network: network)
            let events = ManagerEventLog(manager)
            try await manager.loadCatalog()
            let (request, begin) = try await Self.beginUntilWaiting(["a"], manager, priority: .urgent, events: events, reason: .offline)
            network.set(.unmetered)
            #expect(await manager.checkNetworkCondition() == .unmetered)
            try await begin.value
            #expect(request.state == .accessing)
            #expect(events.resumed.count == 1)

            let strict = try Self.manager(fixture, server, network: SwitchableNetwork(.offline), store: "strict") { $0.waitsWhenForbidden = false }
            try await strict.loadCatalog()
            #expect(await Self.begin(["b"], strict, priority: .urgent)?.code == .networkUnavailable)
        }
    }

    @Test func raisingAWaitingRequestToUrgentLetsItUseTheMeteredNetwork() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered))
            let events = ManagerEventLog(manager)
            try await manager.loadCatalog()
            let (request, begin) = try await Self.beginUntilWaiting(["a"], manager, priority: .loading(0.1), events: events,
                                                                    reason: .meteredNonUrgentNotAllowed)
            request.loadingPriority = .urgent
            try await begin.value
            #expect(events.resumed.count == 1)
        }
    }

    @Test func aPrefetchWaitingOnMeteredResumesWhenTheScheduledCheckFindsAnUnmeteredNetwork() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let network = SwitchableNetwork(.metered)
            let clock = SteppingClock()
            let manager = try Self.manager(fixture, server, network: network, clock: clock)
            let events = ManagerEventLog(manager)
            try await manager.prepare()
            try await waitUntil("the prefetch to wait") { events.waiting == [.meteredNonUrgentNotAllowed] }
            #expect(manager.isWatchingNetwork)
            // A scheduled check that still finds the metered network changes nothing.
            try await waitUntil("the network watcher to sleep") { clock.sleeping >= 1 }
            let checks = network.checks
            clock.advance(30)
            try await waitUntil("the scheduled check") { network.checks > checks }
            #expect(events.resumed.isEmpty)
            // The player is home: the next scheduled check finds Wi-Fi, and the prefetch goes on.
            network.set(.unmetered)
            try await waitUntil("the network watcher to sleep again") { clock.sleeping >= 1 }
            clock.advance(30)
            await manager.waitForPrefetch()
            #expect(events.resumed.count == 1)
            #expect(await ResourceRequest(tags: ["c"], manager: manager).conditionallyBeginAccessingResources())
            #expect(ManagerFixture.packRequests(server) == [try fixture.packPath(ofTag: "c")])
            #expect(manager.meteredBytesToday == 0, "the bytes came over the unmetered network")
        }
    }

    @Test func theDailyMeteredBudgetRunsOutThenStartsAfreshTheNextDay() async throws {
        let fixture = try await Self.fixture()
        let packBytes = try fixture.game.manifest(1).packs.first { $0.tags == ["a"] }?.archiveBytes ?? 0
        #expect(packBytes > 50_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let clock = SteppingClock()
            let budget: (inout DownloadPolicy) -> Void = { $0.dailyMeteredByteBudget = packBytes + packBytes / 2 }
            let manager = try Self.manager(fixture, server, network: SwitchableNetwork(.metered), clock: clock, budget)
            let events = ManagerEventLog(manager)
            try await manager.loadCatalog()
            #expect(await Self.begin(["a"], manager, priority: .urgent) == nil)
            #expect(manager.meteredBytesToday >= packBytes)

            // The next pack would pass the budget: it waits...
            let (request, begin) = try await Self.beginUntilWaiting(["b"], manager, priority: .urgent, events: events,
                                                                    reason: .meteredBudgetExhausted)
            // ...or fails, for a caller that does not wait, with the setting to change.
            let strict = try Self.manager(fixture, server, network: SwitchableNetwork(.metered), store: "store", clock: clock) {
                budget(&$0)
                $0.waitsWhenForbidden = false
                $0.networkCheckInterval = nil
            }
            try await strict.loadCatalog()
            #expect(strict.meteredBytesToday >= packBytes, "the count is kept in the store")
            let refused = await Self.begin(["c"], strict, priority: .urgent)
            #expect(refused?.code == .networkPolicy)
            #expect(refused?.message.contains("dailyMeteredByteBudget") == true)

            // Midnight UTC: the scheduled check starts a new day's budget.
            try await waitUntil("the network watcher to sleep") { clock.sleeping >= 1 }
            clock.advance(86_400)
            try await begin.value
            #expect(request.state == .accessing)
            #expect(events.resumed.count == 1)
            #expect(manager.meteredBytesToday >= packBytes && manager.meteredBytesToday < 2 * packBytes)
        }
    }

    @Test func aFailedTransferMakesTheManagerAskTheProbeAgain() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let network = SwitchableNetwork(.unmetered)
            let manager = try Self.manager(fixture, server, network: network) { $0.waitsWhenForbidden = false }
            try await manager.loadCatalog()
            #expect(await manager.checkNetworkCondition() == .unmetered)
            // The device moves to a metered network; nothing has asked since.
            network.set(.metered)
            server.injectFaults(.status(404), count: 1, path: try fixture.packPath(ofTag: "a"))
            #expect(await Self.begin(["a"], manager, priority: .urgent)?.code == .resourceUnavailable)
            try await waitUntil("the re-check after the failure") { manager.networkCondition == .metered }
            #expect(await Self.begin(["b"], manager, priority: .loading(0))?.code == .networkPolicy)
        }
    }
}

extension Result {
    var failureValue: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
