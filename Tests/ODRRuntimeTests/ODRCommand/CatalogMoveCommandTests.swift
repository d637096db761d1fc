import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// `odr` after the game's catalog moved to a new CDN, with no network: the store filled from the
/// old URL serves through the new one (docs/HOSTING.md, "Moving a CDN").
struct CatalogMoveCommandTests {
    @Test func odrStatusAndPathWorkOfflineAfterAMove() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 10_000)
        try await fixture.build()
        let store = try TemporaryDirectory(prefix: "odr-store")
        let oldURL = try await withTestServer(root: fixture.catalog) { server in
            let fetched = try await ODRExecutable.run(["fetch", "--catalog", server.baseURL.absoluteString, "--store", store.url.path,
                                                       "--quiet", "small"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            return server.baseURL.absoluteString
        }
        let moved = ["--catalog", CatalogMoveTests.unreachable.absoluteString, "--store", store.url.path, "--offline"]
        for hint in [["--mirror", oldURL], ["--catalog-id", "fixture-game"]] {
            let status = try await ODRExecutable.run(["status"] + moved + hint)
            #expect(status.status == 0 && status.stdout.contains("small"), "\(hint): \(status.stderr)")
            let path = try await ODRExecutable.run(["path"] + moved + hint + ["small/notes.txt"])
            #expect(path.status == 0, "\(hint): \(path.stderr)")
            let file = path.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect((try? String(contentsOfFile: file, encoding: .utf8)) == "notes\n", "\(hint): \(path.stdout)")
        }
        let wrong = try await ODRExecutable.run(["status"] + moved + ["--catalog-id", "another-game"])
        #expect(wrong.status != 0 && wrong.stderr.contains("error[catalog-unavailable]") && wrong.stderr.contains("'another-game'")
                && wrong.stderr.contains("'fixture-game'"), "\(wrong.stderr)")
    }
}
