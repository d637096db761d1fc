import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

struct CatalogClientTests {
    @Test func aLowerSerialIsRefusedAndChangesNothing() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        var index = try fixture.index()
        index.serial = 5
        try index.encoded().write(to: fixture.catalog.appending(path: "catalog.json"))
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            _ = try await client.refresh()
            // A second check with nothing changed is a conditional GET answered 304.
            server.clearRequests()
            _ = try await client.refresh()
            await server.waitUntilIdle()
            #expect(server.requests().first { $0.path == "/catalog.json" }?.status == 304)

            index.serial = 4
            try index.encoded().write(to: fixture.catalog.appending(path: "catalog.json"))
            let error = await #expect(throws: ResourceError.self) { _ = try await client.refresh() }
            #expect(error?.code == .catalogRollback)
            #expect(try store.followedCatalog(url: server.baseURL)?.highestSerial == 5)
            #expect(try store.followedCatalog(url: server.baseURL)?.index?.serial == 5)
        }
    }

    /// The engine's retries would each wait ten minutes, so a retried catalog request would hit the
    /// time limit: the fallback comes at once because a refused connection to the catalog is not
    /// retried.
    @Test(.timeLimit(.minutes(1))) func anAppStartsOfflineWithThePreviouslyFetchedCatalog() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let baseURL = try await withTestServer(root: fixture.catalog) { server in
            _ = try await InstallerTests.install(["small"], from: server.baseURL, store: storeDirectory.url)
            return server.baseURL
        }
        // The server is gone: a new process opens the store and uses what it has, and says so.
        var configuration = TransferEngine.Configuration()
        configuration.retryPolicy = RetryPolicy(maximumAttempts: 5, initialDelay: 600, maximumDelay: 600)
        let store = try ResourceStore(directory: storeDirectory.url)
        let client = CatalogClient(catalogURL: baseURL, store: store, transport: try TransferEngine(configuration: configuration))
        let snapshot = try await client.snapshot()
        #expect(snapshot.version == 1)
        #expect(snapshot.fallback?.reason.code == .networkUnavailable)
        #expect(snapshot.fallback?.checkedAt != nil)
        let url = try store.url(forResource: "small/map.json", in: snapshot)
        #expect(try Data(contentsOf: url) == fixture.contents(of: "small/map.json"))

        // A store that never fetched has nothing to start from.
        let empty = try TemporaryDirectory(prefix: "odr-store")
        let fresh = CatalogClient(catalogURL: baseURL, store: try ResourceStore(directory: empty.url),
                                  transport: try TransferEngine(configuration: configuration))
        let error = await #expect(throws: ResourceError.self) { _ = try await fresh.snapshot() }
        #expect(error?.code == .catalogUnavailable)
    }

    @Test(arguments: [(404, ResourceError.Code.resourceUnavailable), (403, .accessDenied)])
    func aMissingOrForbiddenCatalogIsAnErrorNotAFallback(status: Int, code: ResourceError.Code) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            _ = try await client.refresh()
            // The server answers, and says the catalog is not there (or not for us): a stored copy
            // must not hide that.
            server.injectFaults(.status(status), count: 10, path: "/catalog.json")
            let error = await #expect(throws: ResourceError.self) { _ = try await client.snapshot() }
            #expect(error?.code == code)
            #expect(error?.url?.lastPathComponent == "catalog.json")
            let cause = error?.cause.map { "\($0)" } ?? ""
            #expect(cause.contains("\(status)"), "\(cause)")
        }
    }

    @Test func anUnknownTagIsATypedErrorNamingIt() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let client = CatalogClient(catalogURL: fixture.catalog, store: try ResourceStore(directory: storeDirectory.url),
                                   transport: try TransferEngine())
        let snapshot = try await client.refresh()
        let error = #expect(throws: ResourceError.self) { _ = try snapshot.packs(forTags: ["small", "level9"]) }
        #expect(error?.code == .invalidTag)
        #expect(error?.message.contains("level9") == true)
    }
}
