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

    @Test func anExpiredStoredCatalogStillServesOfflineAndOdrSaysItExpired() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 10_000)
        let keys = try TemporaryDirectory(prefix: "odr-keys")
        let key = keys.appending("release.key").path
        #expect(try await ODRExecutable.run(["key", "generate", "--output", key], tool: "odrpack").status == 0)
        let built = try await ODRExecutable.run(["build", fixture.assets.path, "--output", fixture.catalog.path, "--no-cache",
                                                 "--sign-with", key], tool: "odrpack")
        #expect(built.status == 0, "\(built.stderr)")
        let store = try TemporaryDirectory(prefix: "odr-store")
        let common = ["--catalog", fixture.catalog.path, "--store", store.url.path, "--trusted-key", key + ".pub"]
        let fetched = try await ODRExecutable.run(["fetch"] + common + ["--quiet", "small"])
        #expect(fetched.status == 0, "\(fetched.stderr)")

        // Re-signed to expire 8 seconds from now, and stored by an online check while still valid.
        let resigned = try await ODRExecutable.run(["sign", fixture.catalog.path, "--key", key, "--expires-in", "0.0000926"], tool: "odrpack")
        #expect(resigned.status == 0, "\(resigned.stderr)")
        let expiresText = try #require(try fixture.index().expires)
        let expires = try #require(CatalogExpiry.date(from: expiresText))
        let checked = try await ODRExecutable.run(["status"] + common)
        #expect(checked.status == 0, "\(checked.stderr)")
        #expect(!checked.stderr.contains("expired"), "\(checked.stderr)")
        try await waitUntil("the catalog to expire", timeout: .seconds(60)) { Date() > expires.addingTimeInterval(1) }

        let offline = try await ODRExecutable.run(["status"] + common + ["--offline"])
        #expect(offline.status == 0, "\(offline.stderr)")
        #expect(offline.stderr.contains("notice: the stored catalog (version 1) expired at"), "\(offline.stderr)")
        let path = try await ODRExecutable.run(["path"] + common + ["--offline", "small/map.json"])
        #expect(path.status == 0, "installed packs still serve: \(path.stderr)")
        let refused = try await ODRExecutable.run(["fetch"] + common + ["--offline", "--quiet", "big"])
        #expect(refused.status == 1 && refused.stderr.contains("error[catalog-expired]"), "\(refused.stderr)")
    }
}
