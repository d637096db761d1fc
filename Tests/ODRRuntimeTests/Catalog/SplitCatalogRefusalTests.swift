import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// This runtime does not fetch split metadata yet (`odrpack build --split-metadata`, format 3): it
/// refuses such a version with the format's `unsupported-format-version` as the cause of
/// `invalid-catalog`, with a message that says what to do, fetches none of the metadata files, and
/// follows nothing.
struct SplitCatalogRefusalTests {
    @Test func aSplitManifestIsRefusedAsAnUnsupportedFormatVersion() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build(splitMetadata: true)
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let store = try ResourceStore(directory: storeDirectory.url)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let error = await #expect(throws: ResourceError.self) { _ = try await client.refresh() }
            #expect(error?.code == .invalidCatalog, "\(String(describing: error))")
            let cause = error?.cause as? FormatError
            #expect(cause?.code == .unsupportedFormatVersion, "\(String(describing: error))")
            #expect(error?.message.contains("without --split-metadata") == true, "\(String(describing: error))")
            await server.waitUntilIdle()
            #expect(server.requests().map(\.path) == ["/catalog.json", "/versions/1.json"])
            #expect(try store.followedCatalog(url: server.baseURL) == nil)
        }
    }
}
