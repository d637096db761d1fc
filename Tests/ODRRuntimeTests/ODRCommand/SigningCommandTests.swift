import Foundation
import ODRFormat
import ODRServe
import ODRTestSupport
import Testing

/// The signing workflow end to end with the built tools: `odrpack key generate`, `odrpack build
/// --sign-with`, `odr fetch --trusted-key` over loopback HTTP.
struct SigningCommandTests {
    @Test func fetchWithTheBuildersKeySucceedsAndWithAnotherKeyIsUntrusted() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 50_000)
        let keys = try TemporaryDirectory(prefix: "odr-keys")
        for name in ["release.key", "other.key"] {
            let generated = try await ODRExecutable.run(["key", "generate", "--output", keys.appending(name).path], tool: "odrpack")
            #expect(generated.status == 0, "\(generated.stderr)")
            #expect(generated.stdout.contains("key id:"))
        }
        let mode = try #require(FileManager.default.attributesOfItem(atPath: keys.appending("release.key").path)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600)
        let built = try await ODRExecutable.run(["build", fixture.assets.path, "--output", fixture.catalog.path, "--no-cache",
                                                 "--sign-with", keys.appending("release.key").path], tool: "odrpack")
        #expect(built.status == 0, "\(built.stderr)")
        let index = try fixture.index()
        let release = try PublicSigningKey.load(from: keys.appending("release.key.pub"))
        #expect(index.signatures?.map(\.keyID) == [release.id])
        #expect(index.versions.allSatisfy { $0.sha256 != nil })

        // A signed catalog is not rewritten unsigned by mistake.
        let unsigned = try await ODRExecutable.run(["distribution", "set", "test", "1", "--catalog", fixture.catalog.path], tool: "odrpack")
        #expect(unsigned.status == 1 && unsigned.stderr.contains("signing.required"), "\(unsigned.stderr)")

        let stores = try TemporaryDirectory(prefix: "odr-stores")
        try await withTestServer(root: fixture.catalog) { server in
            let trusted = try await ODRExecutable.run(["fetch", "--catalog", server.baseURL.absoluteString, "--store", stores.appending("a").path,
                                                       "--trusted-key", keys.appending("release.key.pub").path, "--quiet", "small"])
            #expect(trusted.status == 0, "\(trusted.stderr)")
            let other = try await ODRExecutable.run(["fetch", "--catalog", server.baseURL.absoluteString, "--store", stores.appending("b").path,
                                                     "--trusted-key", keys.appending("other.key.pub").path, "--quiet", "small"])
            #expect(other.status == 1)
            #expect(other.stderr.contains("error[untrusted-catalog]"), "\(other.stderr)")
            let packs = (try? FileManager.default.contentsOfDirectory(atPath: stores.appending("b/packs").path)) ?? []
            #expect(packs.isEmpty, "nothing was installed")
        }
    }
}
