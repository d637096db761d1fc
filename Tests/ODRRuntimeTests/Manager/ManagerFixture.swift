import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport

/// A built game catalog served on loopback, and managers over fresh stores.
struct ManagerFixture {
    let game: CatalogFixture
    let stores: TemporaryDirectory

    static func make(bigBytes: Int = 3 << 20) async throws -> ManagerFixture {
        let fixture = try unbuilt(bigBytes: bigBytes)
        try await fixture.game.build()
        return fixture
    }

    /// The default game, not built yet: the caller builds it (signed, say).
    static func unbuilt(bigBytes: Int) throws -> ManagerFixture {
        ManagerFixture(game: try CatalogFixture.game(bigBytes: bigBytes), stores: try TemporaryDirectory(prefix: "odr-manager-store"))
    }

    /// A catalog whose every tag has a folder of its own (`<tag>/data.bin`, `bytes` of distinct
    /// incompressible data), so each tag is exactly one pack; `rules` is the whole `odr.json`.
    static func onePackPerTag(_ tags: [String], bytes: Int, rules: String) async throws -> ManagerFixture {
        let game = try CatalogFixture(rules: rules)
        for (index, tag) in tags.enumerated() {
            try game.write("\(tag)/data.bin", deterministicBytes(count: bytes, seed: UInt64(index + 1)))
        }
        try await game.build()
        return ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-manager-store"))
    }

    /// The server path of the one pack whose tag set is exactly `[tag]`.
    func packPath(ofTag tag: String) throws -> String {
        guard let pack = try game.manifest(1).packs.first(where: { $0.tags == [tag] }) else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "no pack holds only tag \(tag)"])
        }
        return "/packs/\(pack.id).zip"
    }

    /// A manager for the catalog at `url` (the test server's), storing in `store` below `stores`.
    func manager(url: URL, store: String = "store", _ configure: (inout ResourceManager.Configuration) -> Void = { _ in }) throws -> ResourceManager {
        var configuration = ResourceManager.Configuration(catalogURL: url, storeDirectory: stores.appending(store))
        configuration.freeSpaceWatermark = 0
        // Not the machine's NetworkManager: a developer on a metered network would see prefetches wait.
        configuration.networkProbe = FixedNetwork(.unmetered)
        configure(&configuration)
        return try ResourceManager(configuration: configuration)
    }

    /// Begins `request` in a task and returns once its first bytes have arrived, so the caller can
    /// act on a download in progress (pause, cancel, reprioritize).
    static func beginAndAwaitFirstBytes(_ request: ResourceRequest) async -> Task<Void, any Error> {
        let updates = request.progressUpdates
        let begin = Task { try await request.beginAccessingResources() }
        for await update in updates where update.completedBytes > 0 { break }
        return begin
    }

    /// The pack archive paths the server was asked for.
    static func packRequests(_ server: CatalogServer) -> [String] {
        server.requests().map(\.path).filter { $0.hasPrefix("/packs/") }
    }
}

/// A clock the test moves by hand.
final class ManualClock: ManagerClock {
    private let seconds: Locked<Double>

    init(now: Double) { seconds = Locked(now) }

    func now() -> Double { seconds.withLock { $0 } }
    func advance(_ delta: Double) { seconds.withLock { $0 += delta } }
}

/// A network probe that always gives the same answer.
struct FixedNetwork: NetworkConditionProbe {
    let condition: NetworkCondition
    init(_ condition: NetworkCondition) { self.condition = condition }
    func currentCondition() -> NetworkCondition { condition }
}
