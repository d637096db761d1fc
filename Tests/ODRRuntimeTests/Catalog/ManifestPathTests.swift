import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A manifest path in `catalog.json` that would resolve outside the catalog (another origin, a
/// local file, a percent-encoded `..`) is `invalid-catalog`: nothing else is requested or read,
/// and the store follows nothing.
struct ManifestPathTests {
    @Test(arguments: [
        "http:/127.0.0.1/versions/1.json",
        "file:/etc/hostname",
        "file:///etc/hostname",
        "versions/%2e%2e/%2e%2e/catalog.json",
        "versions/%2E%2E/1.json",
    ])
    func aManifestPathOutsideTheCatalogIsInvalidAndNothingIsFetched(path: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        var index = try fixture.index()
        index.versions[0].manifest = path
        // Written as a hostile server would, without the validation `encoded()` does.
        try CatalogFixture.unvalidatedJSON(index).write(to: fixture.catalog.appending(path: "catalog.json"))
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let error = await #expect(throws: ResourceError.self) { _ = try await client.refresh() }
            #expect(error?.code == .invalidCatalog, "\(String(describing: error))")
            #expect(error?.message.contains("versions[0].manifest") == true || error?.message.contains("manifest path") == true,
                    "\(String(describing: error))")
            await server.waitUntilIdle()
            #expect(server.requests().map(\.path) == ["/catalog.json"])
            #expect(try store.followedCatalog(url: server.baseURL) == nil)
        }
    }
}
