import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A catalog with two variant axes (``CatalogFixture/variantGame()``: tag `forest` with a common
/// pack, one pack per resolution and one per texture format, `sky.png` at 1x only and `banner.png`
/// at 2x only), built by `CatalogBuilder`, served over loopback and installed into real stores by
/// managers that choose different variants.
struct VariantInstallTests {
    static let sources = CatalogFixture.variantSources

    static func fixture() async throws -> ManagerFixture {
        let game = try CatalogFixture.variantGame()
        try await game.build()
        return ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-variant-store"))
    }

    /// `forest`'s packs of `variant` (`[:]` for the common one). A variant has one pack for the
    /// paths that exist in every resolution (tree.png) and one for each path that lacks some
    /// (sky.png at 1x only, banner.png at 2x only): the builder packs them apart so that a fallback
    /// downloads only what it falls back for.
    static func packs(_ variant: Variant, in fixture: ManagerFixture) throws -> [PackRecord] {
        let packs = try fixture.game.manifest(1).packs.filter { $0.tags == ["forest"] && $0.variant == variant }
        try #require(!packs.isEmpty, "no forest pack of variant \(variant.variantDescription)")
        return packs
    }

    /// `forest`'s pack of `variant` that holds `path`.
    static func pack(_ variant: Variant, holding path: String, in fixture: ManagerFixture) throws -> PackRecord {
        let manifest = try fixture.game.manifest(1)
        let file = try #require(manifest.files.first { $0.path == path && $0.variant == variant }, "no \(path) of \(variant.variantDescription)")
        return try #require(manifest.packs.first { $0.id == file.pack })
    }

    /// The ids of all of `forest`'s packs of these variants.
    static func packIDs(_ variants: [Variant], in fixture: ManagerFixture) throws -> Set<String> {
        Set(try variants.flatMap { try packs($0, in: fixture).map(\.id) })
    }

    /// Expects `request` to give, for each path, the bytes of the source file of `variant`; `nil`
    /// expects no file.
    static func expectFiles(_ request: ResourceRequest, _ expected: [String: String?], in fixture: ManagerFixture,
                            sourceLocation: SourceLocation = #_sourceLocation) throws {
        for (path, variant) in expected {
            let found = request.path(forResource: path)
            guard let variant else {
                #expect(found == nil, "\(path) should not be available", sourceLocation: sourceLocation)
                continue
            }
            let source = try #require(sources[path]?[variant], sourceLocation: sourceLocation)
            let installed = try #require(found, "\(path) not found", sourceLocation: sourceLocation)
            #expect(FileManager.default.contents(atPath: installed) == (try fixture.game.contents(of: source)),
                    "\(path) should be \(source)", sourceLocation: sourceLocation)
        }
    }

    @Test func theManifestHasAPackPerVariantAndACommonOne() async throws {
        let fixture = try await Self.fixture()
        let manifest = try fixture.game.manifest(1)
        #expect(manifest.variantAxes.map(\.name) == ["resolution", "texture"])
        #expect(Set(manifest.packs.map(\.variant.variantDescription)) == ["", "resolution=1x", "resolution=2x", "texture=astc", "texture=etc2"])
    }

    /// Per choice: every pack of the `packs` variants, plus the packs holding `plus`'s files.
    static let choices: [(choice: [String], packs: [Variant], plus: [(Variant, String)], files: [String: String?])] = [
        (["resolution=1x", "texture=astc"], [[:], ["resolution": "1x"], ["texture": "astc"]], [],
         ["Forest/map.json": "", "Forest/tree.png": "resolution=1x", "Forest/sky.png": "resolution=1x",
          "Forest/banner.png": nil, "Forest/tree.ktx2": "texture=astc"]),
        (["resolution=2x", "texture=etc2"], [[:], ["resolution": "2x"], ["texture": "etc2"]], [],
         ["Forest/map.json": "", "Forest/tree.png": "resolution=2x", "Forest/sky.png": nil,
          "Forest/banner.png": "resolution=2x", "Forest/tree.ktx2": "texture=etc2"]),
        // Fallback: 2x where a file has it, 1x for sky.png, which has no 2x: sky's own 1x pack
        // comes, not the 1x pack of tree.png.
        (["resolution=2x,1x", "texture=etc2,astc"], [[:], ["resolution": "2x"], ["texture": "etc2"]], [(["resolution": "1x"], "Forest/sky.png")],
         ["Forest/tree.png": "resolution=2x", "Forest/sky.png": "resolution=1x", "Forest/banner.png": "resolution=2x",
          "Forest/tree.ktx2": "texture=etc2"]),
    ]

    @Test(arguments: choices.indices)
    func aDeviceGetsExactlyItsChosenPacksAndFiles(_ row: Int) async throws {
        let (choice, variants, plus, files) = Self.choices[row]
        let fixture = try await Self.fixture()
        let expected = try Self.packIDs(variants, in: fixture).union(try plus.map { try Self.pack($0.0, holding: $0.1, in: fixture).id })
        let preferences = try VariantPreferences.parse(choice)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.variants = preferences }
            try await manager.prepare()
            let request = ResourceRequest(tags: ["forest"], manager: manager)
            try await request.beginAccessingResources()
            #expect(try manager.store.installedPackIDs() == expected)
            #expect(Set(ManagerFixture.packRequests(server).map { String($0.dropFirst("/packs/".count).dropLast(".zip".count)) }) == expected,
                    "only the chosen packs travel")
            try Self.expectFiles(request, files, in: fixture)
            try request.endAccessingResources()
        }
    }

    @Test func downloadSizeTheGaugeAndProgressCountOnlyTheChosenPacks() async throws {
        let fixture = try await Self.fixture()
        let chosen = try [[:], ["resolution": "2x"], ["texture": "astc"]].flatMap { try Self.packs($0, in: fixture) }
        let bytes = chosen.reduce(Int64(0)) { $0 + $1.archiveBytes }
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.variants = VariantPreferences(["resolution": ["2x"], "texture": ["astc"]]) }
            try await manager.prepare()
            #expect(try manager.downloadSize(forTags: ["forest"]) == bytes)
            #expect(try fixture.game.manifest(1).tags[0].downloadBytes > bytes, "the manifest's own record counts every variant")
            let gauge = try #require(manager.gauge().first { $0.name == "forest" })
            #expect(gauge.downloadBytes == bytes)
            #expect(gauge.installedBytes == chosen.reduce(0) { $0 + $1.installedBytes })
            #expect(Set(try #require(manager.tags.first).packs) == Set(chosen.map(\.id)))
            let request = ResourceRequest(tags: ["forest"], manager: manager)
            try await request.beginAccessingResources()
            #expect(request.progress.totalUnitCount == bytes + 1, "the progress counts the chosen packs' bytes (plus one for the install)")
            #expect(try manager.downloadSize(forTags: ["forest"]) == 0)
            #expect(manager.gauge().first { $0.name == "forest" }?.state == .inUse)
            try request.endAccessingResources()
        }
    }

    @Test func aFileOnlyInVariantsTheDeviceRefusesIsNotAvailable() async throws {
        let fixture = try await Self.fixture()
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL) { $0.variants = VariantPreferences(["resolution": ["1x"]]) }
            let snapshot = try await manager.loadCatalog()
            let request = ResourceRequest(tags: ["forest"], manager: manager)
            try await request.beginAccessingResources()
            #expect(request.path(forResource: "Forest/banner.png") == nil)
            #expect(request.path(forResource: "Forest/tree.png") != nil)
            let error = #expect(throws: ResourceError.self) { try manager.store.url(forResource: "Forest/banner.png", in: snapshot) }
            #expect(error?.code == .unknownResource)
            #expect(error?.message.contains("resolution=2x") == true)
            try request.endAccessingResources()
        }
    }

    @Test func aDeviceThatChangesItsChoiceGetsTheNewPacksAndPurgesTheOldOnesFirst() async throws {
        let fixture = try await Self.fixture()
        let old = try Self.packIDs([["resolution": "2x"], ["texture": "astc"]], in: fixture)
        let new = try Self.packIDs([["resolution": "1x"], ["texture": "etc2"]], in: fixture)
        let common = try Self.pack([:], holding: "Forest/map.json", in: fixture).id
        try await withTestServer(root: fixture.game.catalog) { server in
            let before = try fixture.manager(url: server.baseURL) { $0.variants = VariantPreferences(["resolution": ["2x"], "texture": ["astc"]]) }
            try await before.prepare()
            let held = ResourceRequest(tags: ["forest"], manager: before)
            try await held.beginAccessingResources()

            // The same store, another choice (a settings change), while the first still holds its packs.
            let after = try fixture.manager(url: server.baseURL) { $0.variants = VariantPreferences(["resolution": ["1x"], "texture": ["etc2"]]) }
            try await after.prepare()
            let served = ManagerFixture.packRequests(server).count
            #expect(try after.downloadSize(forTags: ["forest"]) == (try new.map { id in try #require(try fixture.game.manifest(1).packs.first { $0.id == id }).archiveBytes }.reduce(0, +)))
            let request = ResourceRequest(tags: ["forest"], manager: after)
            try await request.beginAccessingResources()
            #expect(Set(ManagerFixture.packRequests(server).dropFirst(served).map { String($0.dropFirst("/packs/".count).dropLast(".zip".count)) }) == new,
                    "only the newly chosen packs travel; the common one is installed")
            try Self.expectFiles(request, ["Forest/tree.png": "resolution=1x", "Forest/tree.ktx2": "texture=etc2", "Forest/banner.png": nil],
                                 in: fixture)
            try request.endAccessingResources()

            // In use by the first manager's request (its leases): never a candidate.
            let whileHeld = try after.purgePlan(bytes: Int64.max)
            #expect(Set(whileHeld.deletions.map(\.packID)).isDisjoint(with: old.union([common])))
            try held.endAccessingResources()

            // Released: the packs of the old choice go first, with their own reason.
            let plan = try after.purgePlan(bytes: 1 << 40)
            #expect(Set(plan.deletions.prefix(old.count).map(\.packID)) == old)
            #expect(plan.deletions.prefix(old.count).allSatisfy { $0.reason == .variantNotChosen })
            #expect(plan.deletions.dropFirst(old.count).allSatisfy { $0.reason != .variantNotChosen })
            // What deleting them frees on disk (their files in whole blocks, and their folders).
            let oldBytes = plan.deletions.prefix(old.count).map(\.bytes).reduce(0, +)
            let purged = try await after.purge(bytes: oldBytes)
            #expect(Set(purged.deletions.map(\.packID)) == old)
            #expect(try after.store.installedPackIDs() == new.union([common]))
        }
    }

    @Test func odrFetchTakesVariantChoicesAndRefusesAxesTheCatalogDoesNotDeclare() async throws {
        let fixture = try await Self.fixture()
        let store = try TemporaryDirectory(prefix: "odr-variant-cli")
        try await withTestServer(root: fixture.game.catalog) { server in
            let base = ["--catalog", server.baseURL.absoluteString, "--store", store.url.path]
            let badAxis = try await ODRExecutable.run(["fetch"] + base + ["--variant", "resoluton=2x", "forest"])
            #expect(badAxis.status == 1)
            #expect(badAxis.stderr.contains("error[invalid-argument]"))
            #expect(badAxis.stderr.contains("'resoluton'") && badAxis.stderr.contains("resolution (1x, 2x); texture (astc, etc2)"))
            let badValue = try await ODRExecutable.run(["fetch"] + base + ["--variant", "texture=bc7", "forest"])
            #expect(badValue.status == 1)
            #expect(badValue.stderr.contains("error[invalid-argument]") && badValue.stderr.contains("astc, etc2"))
            let malformed = try await ODRExecutable.run(["fetch"] + base + ["--variant", "resolution", "forest"])
            #expect(malformed.status != 0 && malformed.stderr.contains("axis=value"))
            #expect(try ResourceStore(directory: store.url).installedPackIDs().isEmpty, "refused choices install nothing")

            let fetched = try await ODRExecutable.run(["fetch"] + base + ["--variant", "resolution=2x", "--variant", "texture=etc2", "--quiet", "forest"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            #expect(try ResourceStore(directory: store.url).installedPackIDs()
                    == (try Self.packIDs([[:], ["resolution": "2x"], ["texture": "etc2"]], in: fixture)))
            let path = try await ODRExecutable.run(["path"] + base + ["--variant", "resolution=2x", "Forest/tree.png"])
            #expect(path.status == 0, "\(path.stderr)")
            #expect(FileManager.default.contents(atPath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                    == (try fixture.game.contents(of: "Forest/tree@2x.png")))

            // Another choice: the 2x pack is not chosen any more and is the first to purge.
            let dryRun = try await ODRExecutable.run(["purge"] + base + ["--variant", "resolution=1x", "--variant", "texture=etc2", "--bytes", "1", "--dry-run", "--json"])
            #expect(dryRun.status == 0, "\(dryRun.stderr)")
            let report = try JSONSerialization.jsonObject(with: Data(dryRun.stdout.utf8)) as? [String: Any]
            let first = try #require((report?["packs"] as? [[String: Any]])?.first)
            #expect(try Self.packIDs([["resolution": "2x"]], in: fixture).contains(try #require(first["id"] as? String)))
            #expect(first["reason"] as? String == "variant-not-chosen")
        }
    }
}
