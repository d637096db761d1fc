import Foundation
import ODRFormat
import ODRServe
import ODRTestSupport
import Testing

/// `odrpack build`'s metadata form as a studio meets it: a new catalog is split, `odr fetch` installs
/// from it over HTTP, a catalog keeps its form across builds, `--whole-manifest` and
/// `--split-metadata` choose and switch (issue 37).
struct MetadataFormCommandTests {
    static func build(_ fixture: CatalogFixture, _ flags: [String] = []) async throws -> ODRExecutable.Outcome {
        try await ODRExecutable.run(["build", fixture.assets.path, "--output", fixture.catalog.path, "--no-cache"] + flags, tool: "odrpack")
    }

    /// The `formatVersion` of the published `versions/<n>.json`.
    static func formatVersion(_ fixture: CatalogFixture, _ version: Int) throws -> Int {
        let data = try Data(contentsOf: fixture.catalog.appending(path: "versions/\(version).json"))
        switch try PublishedManifest.decode(from: data) {
        case .full(let manifest): return manifest.formatVersion
        case .split(let manifest): return manifest.formatVersion
        }
    }

    @Test func aDefaultBuildIsSplitAndOdrFetchInstallsAndUpdatesFromItOverHTTP() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 20_000)
        let built = try await Self.build(fixture)
        #expect(built.status == 0, "\(built.stderr)")
        #expect(built.stdout.contains("split metadata: "), "\(built.stdout)")
        #expect(try Self.formatVersion(fixture, 1) == 3)
        let meta = try FileManager.default.contentsOfDirectory(atPath: fixture.catalog.appending(path: "meta").path)
        #expect(!meta.isEmpty)

        let store = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", store.url.path]
            let fetched = try await ODRExecutable.run(["fetch"] + common + ["--quiet", "small"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            await server.waitUntilIdle()
            let asked = Set(server.requests().map(\.path))
            #expect(asked.contains("/versions/1.json") && asked.contains { $0.hasPrefix("/meta/") }, "\(asked.sorted())")
            let path = try await ODRExecutable.run(["path"] + common + ["small/notes.txt"])
            #expect(path.status == 0, "\(path.stderr)")
            let installed = path.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try Data(contentsOf: URL(filePath: installed)) == fixture.contents(of: "small/notes.txt"))

            // Version 2 stays split without being told, and the store updates to it.
            try fixture.write("small/notes.txt", Data("notes, second edition\n".utf8))
            let rebuilt = try await Self.build(fixture)
            #expect(rebuilt.status == 0, "\(rebuilt.stderr)")
            #expect(try Self.formatVersion(fixture, 2) == 3)
            let updated = try await ODRExecutable.run(["fetch"] + common + ["--quiet", "small"])
            #expect(updated.status == 0, "\(updated.stderr)")
            let again = try await ODRExecutable.run(["path"] + common + ["small/notes.txt"])
            let updatedPath = again.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            #expect(try Data(contentsOf: URL(filePath: updatedPath)) == Data("notes, second edition\n".utf8))
        }
    }

    @Test func aWholeManifestCatalogStaysWholeUntilSplitMetadataIsGiven() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 20_000)
        let whole = try await Self.build(fixture, ["--whole-manifest"])
        #expect(whole.status == 0, "\(whole.stderr)")
        #expect(whole.stdout.contains("whole manifest: --whole-manifest"), "\(whole.stdout)")
        #expect(try Self.formatVersion(fixture, 1) == 1)
        let meta = (try? FileManager.default.contentsOfDirectory(atPath: fixture.catalog.appending(path: "meta").path)) ?? []
        #expect(meta.isEmpty, "\(meta)")

        try fixture.write("small/notes.txt", Data("notes 2\n".utf8))
        let kept = try await Self.build(fixture)
        #expect(kept.status == 0, "\(kept.stderr)")
        #expect(try Self.formatVersion(fixture, 2) == 1)
        #expect(kept.stdout.contains("whole manifest: kept from version 1; --split-metadata switches"), "\(kept.stdout)")

        // Switching publishes the same files split, and later builds keep that.
        let switched = try await Self.build(fixture, ["--split-metadata"])
        #expect(switched.status == 0, "\(switched.stderr)")
        #expect(try Self.formatVersion(fixture, 3) == 3)
        try fixture.write("small/notes.txt", Data("notes 3\n".utf8))
        #expect(try await Self.build(fixture).status == 0)
        #expect(try Self.formatVersion(fixture, 4) == 3)

        let both = try await Self.build(fixture, ["--split-metadata", "--whole-manifest"])
        #expect(both.status == 64, "\(both.stderr)")
        #expect(both.stderr.contains("--split-metadata and --whole-manifest cannot be used together"), "\(both.stderr)")
    }
}
