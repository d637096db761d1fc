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
        let game = try CatalogFixture.game(bigBytes: bigBytes)
        try await game.build()
        return ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-manager-store"))
    }

    /// A manager for the catalog at `url` (the test server's), storing in `store` below `stores`.
    func manager(url: URL, store: String = "store", _ configure: (inout ResourceManager.Configuration) -> Void = { _ in }) throws -> ResourceManager {
        var configuration = ResourceManager.Configuration(catalogURL: url, storeDirectory: stores.appending(store))
        configuration.freeSpaceWatermark = 0
        configure(&configuration)
        return try ResourceManager(configuration: configuration)
    }

    /// The pack archive paths the server was asked for.
    static func packRequests(_ server: CatalogServer) -> [String] {
        server.requests().map(\.path).filter { $0.hasPrefix("/packs/") }
    }
}
