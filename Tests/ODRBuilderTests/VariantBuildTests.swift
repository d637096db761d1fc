import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Catalogs built from assets with variant axes: one pack per tag set and variant, variant-free
/// files in common packs, deterministic output.
struct VariantBuildTests {
    static let rules = """
        {"catalogID": "variants",
         "tags": {"forest": ["Textures", "Levels/forest.json"], "desert": ["Desert"]},
         "variants": [
           {"axis": "resolution", "values": ["1x", "2x", "3x"], "marker": "@", "default": "1x", "files": ["**/*.png", "**/*.ktx2"]},
           {"axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"]}
         ]}
        """

    /// Distinct, incompressible bytes per file, so every pack has its own content.
    static func bytes(_ seed: UInt64, _ count: Int = 3000) -> Data { deterministicBytes(count: count, seed: seed) }

    /// A forest with a tree in three resolutions, bark in two texture formats and two resolutions
    /// (both axes), a rock only at 2x, and common grass and level data; a desert with one common file.
    static func writeAssets(to fixture: BuildFixture, rules: String = rules) throws {
        try fixture.write("odr.json", rules)
        try fixture.write("Textures/tree.png", bytes(1))
        try fixture.write("Textures/tree@2x.png", bytes(2))
        try fixture.write("Textures/tree@3x.png", bytes(3))
        try fixture.write("Textures/bark.astc.ktx2", bytes(4))
        try fixture.write("Textures/bark.etc2.ktx2", bytes(5))
        try fixture.write("Textures/bark@2x.astc.ktx2", bytes(6))
        try fixture.write("Textures/bark.etc2@2x.ktx2", bytes(7))
        try fixture.write("Textures/rock@2x.png", bytes(8))
        try fixture.write("Textures/grass.png", bytes(9))
        try fixture.write("Levels/forest.json", String(repeating: "{\"tile\": 1}\n", count: 200))
        try fixture.write("Desert/sand.png", bytes(10))
    }

    /// Two packs of one tag set and variant that are not the parts of a split: rock@2x.png (only at
    /// 2x) and tree@2x.png are packed apart, both tiny. `odrpack report` of the stored version once
    /// called them a split ("part 1/2", `splitPack`), which the build never said (issue 37).
    @Test func packsSharingATagSetUnderThePackLimitAreNotASplit() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        let built = try await fixture.build()
        let manifest = try fixture.manifest(1)
        let twoX = manifest.packs.filter { $0.tags == ["forest"] && $0.variant == ["resolution": "2x"] }
        #expect(twoX.count == 2, "rock@2x.png and tree@2x.png in packs of their own")
        #expect(!built.warnings.contains { $0.code == .splitPack } && built.packs.allSatisfy { $0.partCount == 1 })

        let stored = BuildReport(manifest: manifest, distribution: "live")
        #expect(!stored.warnings.contains { $0.code == .splitPack }, "\(stored.warnings)")
        #expect(stored.packs.allSatisfy { $0.partCount == 1 }, "\(stored.packs.filter { $0.partCount > 1 }.map(\.id))")
        #expect(!stored.rendered().contains(" part 1/"))
        let html = try CatalogReport(catalog: fixture.catalog, version: 1).html()
        #expect(!html.contains("splitPack"))
    }

    @Test func twoAxesGiveOnePackPerTagSetAndVariantWithFilesUnderTheirLogicalPaths() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        try await fixture.build()
        let manifest = try fixture.manifest(1)

        #expect(manifest.formatVersion == 2)
        #expect(manifest.variantAxes == [
            VariantAxis(name: "resolution", values: ["1x", "2x", "3x"]), VariantAxis(name: "texture", values: ["astc", "etc2"]),
        ])
        // Packs: the common forest and desert packs, and one forest pack per variant that has files,
        // and per set of variants its paths have: rock.png, only at 2x, is apart from tree@2x.png.
        let forestVariants = manifest.packs.filter { $0.tags == ["forest"] }.map(\.variant.variantDescription).sorted()
        #expect(forestVariants == [
            "", "resolution=1x", "resolution=1x,texture=astc", "resolution=1x,texture=etc2", "resolution=2x", "resolution=2x",
            "resolution=2x,texture=astc", "resolution=2x,texture=etc2", "resolution=3x",
        ])
        #expect(manifest.packs.filter { $0.tags == ["desert"] }.map(\.variant) == [[:]])

        // Every file is listed under its logical path, once per variant, sorted by path then variant.
        #expect(manifest.files.map { "\($0.path) \($0.variant.variantDescription)" } == [
            "Desert/sand.png ",
            "Levels/forest.json ",
            "Textures/bark.ktx2 resolution=1x,texture=astc",
            "Textures/bark.ktx2 resolution=1x,texture=etc2",
            "Textures/bark.ktx2 resolution=2x,texture=astc",
            "Textures/bark.ktx2 resolution=2x,texture=etc2",
            "Textures/grass.png ",
            "Textures/rock.png resolution=2x",
            "Textures/tree.png resolution=1x",
            "Textures/tree.png resolution=2x",
            "Textures/tree.png resolution=3x",
        ])
        let packsByID = Dictionary(uniqueKeysWithValues: manifest.packs.map { ($0.id, $0) })
        for file in manifest.files {
            #expect(packsByID[file.pack]?.variant == file.variant)
        }
        // The unmarked tree is the default 1x; entries keep the file's own name in the pack.
        let index = manifest.makeIndex()
        let trees = index.files(atPath: "Textures/tree.png")
        #expect(trees.map(\.entry) == ["Textures/tree.png", "Textures/tree@2x.png", "Textures/tree@3x.png"])
        #expect(trees.map(\.sha256) == [1, 2, 3].map { ContentHash.sha256Hex(of: Self.bytes(UInt64($0))) })
        #expect(index.files(atPath: "Textures/bark.ktx2").first { $0.variant == ["resolution": "2x", "texture": "etc2"] }?.entry
                == "Textures/bark.etc2@2x.ktx2")
        // The tag lists every pack, common and variant; the catalog verifies.
        #expect(manifest.tags.first { $0.name == "forest" }?.packs.count == 9)
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()

        // odrpack inspect names the axes and each pack's variant.
        let inspection = try CatalogInspection(catalog: fixture.catalog).rendered()
        #expect(inspection.contains("variant axes: resolution (1x, 2x, 3x); texture (astc, etc2)"))
        let twoX = try #require(manifest.packs.first { $0.variant == ["resolution": "2x", "texture": "etc2"] })
        #expect(inspection.contains("\(twoX.id.prefix(16))  [forest]  {resolution=2x,texture=etc2}  1 entries"))
    }

    /// A path that lacks some variants is packed apart from the complete ones, so a device that
    /// falls back for it downloads only such paths, not every file of the fallback variant.
    @Test func aPathMissingSomeVariantsIsPackedApartSoAFallbackDownloadsOnlyIt() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        let index = manifest.makeIndex()
        let rock = try #require(index.files(atPath: "Textures/rock.png").first)
        let tree2x = try #require(index.files(atPath: "Textures/tree.png").first { $0.variant == ["resolution": "2x"] })
        #expect(rock.pack != tree2x.pack)
        #expect(index.files(inPack: rock.pack).map(\.path) == ["Textures/rock.png"])
        // A 1x device that falls back to 2x: rock's pack, not the pack of tree@2x.png.
        let fallback = ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["1x", "2x"]]))
        #expect(fallback.file(atPath: "Textures/rock.png")?.pack == rock.pack)
        #expect(fallback.isChosen(packID: rock.pack))
        #expect(!fallback.isChosen(packID: tree2x.pack))
        // A 2x device takes both.
        let hd = ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["2x"]]))
        #expect(hd.isChosen(packID: rock.pack) && hd.isChosen(packID: tree2x.pack))
    }

    @Test func eachDeviceChoiceResolvesToItsVariantsPlusTheCommonPacks() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        let hd = ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["2x", "1x"], "texture": ["etc2"]]))
        #expect(hd.file(atPath: "Textures/tree.png")?.entry == "Textures/tree@2x.png")
        #expect(hd.file(atPath: "Textures/bark.ktx2")?.entry == "Textures/bark.etc2@2x.ktx2")
        #expect(hd.file(atPath: "Textures/grass.png")?.variant == [:])
        // A file that exists only in some variants: a 1x device falls back to 2x only if it accepts 2x.
        let sd = ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["1x", "2x"]]))
        #expect(sd.file(atPath: "Textures/rock.png")?.entry == "Textures/rock@2x.png")
        #expect(sd.file(atPath: "Textures/tree.png")?.entry == "Textures/tree.png")
        let strict = ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["1x"]]))
        #expect(strict.file(atPath: "Textures/rock.png") == nil)
        let strictPacks = (strict.tag(named: "forest")?.packs ?? []).compactMap { strict.pack(id: $0) }
        // Texture unnamed: the declared order, astc first.
        #expect(strictPacks.map(\.variant.variantDescription).sorted() == ["", "resolution=1x", "resolution=1x,texture=astc"])
    }

    @Test func variantFreeFilesStayInCommonPacksAndAVariantFreeBuildIsFormatOne() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        let common = try #require(manifest.packs.first { $0.tags == ["forest"] && $0.variant.isEmpty })
        #expect(manifest.files.filter { $0.pack == common.id }.map(\.path) == ["Levels/forest.json", "Textures/grass.png"])

        // Without a variants block, the same names are plain files and the manifest stays version 1.
        let plain = try BuildFixture()
        try plain.write("odr.json", #"{"tags": {"all": ["**"]}}"#)
        try plain.write("Textures/tree@2x.png", Self.bytes(2))
        try await plain.build()
        let plainManifest = try plain.manifest(1)
        #expect(plainManifest.formatVersion == 1)
        #expect(plainManifest.files.map(\.path) == ["Textures/tree@2x.png"])
        #expect(try String(contentsOf: plain.output.appending(path: "versions/1.json"), encoding: .utf8).contains("variant") == false)
    }

    @Test func tagRulesMatchTheLogicalPathSoVariantsShareTags() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {"trees": ["Textures/tree.png"], "all": ["Textures"]},
             "variants": [{"axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x"}]}
            """)
        try fixture.write("Textures/tree.png", Self.bytes(1))
        try fixture.write("Textures/tree@2x.png", Self.bytes(2))
        try fixture.write("Textures/rock@2x.png", Self.bytes(3))
        let report = try await fixture.build()
        let manifest = try fixture.manifest(1)
        let index = manifest.makeIndex()
        for file in index.files(atPath: "Textures/tree.png") {
            #expect(index.pack(id: file.pack)?.tags == ["all", "trees"])
        }
        #expect(index.files(atPath: "Textures/rock.png").map { index.pack(id: $0.pack)?.tags } == [["all"]])
        #expect(report.tags.first { $0.name == "trees" }?.files == 1)
    }

    @Test func identicalContentInTwoVariantsIsStoredInEachVariantsPack() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {"a": ["A"], "b": ["B"]},
             "variants": [{"axis": "resolution", "values": ["1x", "2x"], "marker": "@"}]}
            """)
        // The same bytes as two variants of one path, and as the same variant of a path in another tag.
        try fixture.write("A/tree@1x.png", Self.bytes(1))
        try fixture.write("A/tree@2x.png", Self.bytes(1))
        try fixture.write("B/tree@2x.png", Self.bytes(1))
        try fixture.write("A/plain.png", Self.bytes(1))
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        #expect(manifest.packs.map { "\($0.tags) \($0.variant.variantDescription)" }.sorted() == [
            "[\"a\"] ", "[\"a\"] resolution=1x", "[\"a\"] resolution=2x", "[\"b\"] resolution=2x",
        ])
        #expect(Set(manifest.packs.map(\.id)).count == 4)
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
    }

    @Test func aMisnamedFileFailsTheBuildNamingItAndWritesNothing() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        try fixture.write("Textures/tree@4x.png", Self.bytes(11))
        await #expect {
            try await fixture.build()
        } throws: { error in
            guard let error = error as? BuildError else { return false }
            return error.code == .unknownVariantValue && error.file == "Textures/tree@4x.png"
                && "\(error)".contains("'4x' is not a value of 'resolution'; declared: 1x, 2x, 3x")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.output.path))
    }

    @Test func theSameVariantAssetsGiveByteIdenticalCatalogs() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        let first = fixture.directory.appending("first")
        let second = fixture.directory.appending("second")
        try await fixture.build(output: first, cached: false)
        try await fixture.build(output: second, cached: false) { $0.concurrency = 1 }
        let a = try fixture.snapshot(of: first)
        let b = try fixture.snapshot(of: second)
        #expect(a.keys.sorted() == b.keys.sorted())
        #expect(a == b)

        // A rebuild with nothing changed reuses every variant pack and publishes nothing.
        let again = try await fixture.build(output: first)
        #expect(!again.publishedNewVersion)
        #expect(again.packs.allSatisfy { $0.reused })
        #expect(try fixture.snapshot(of: first) == a)
    }

    @Test func theBuildCacheSkipsUnchangedVariantsAndAChangedVariantRewritesOnlyItsPack() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        let first = try await fixture.build()
        #expect(first.hashedFiles == 11)
        let v1 = try fixture.manifest(1)

        try fixture.write("Textures/tree@3x.png", Self.bytes(33))
        let second = try await fixture.build()
        #expect(second.hashedFiles == 1)
        #expect(second.publishedNewVersion && second.writtenPacks == 1)
        let v2 = try fixture.manifest(2)
        let added = Set(v2.packs.map(\.id)).subtracting(v1.packs.map(\.id))
        #expect(added.compactMap { id in v2.packs.first { $0.id == id }?.variant } == [["resolution": "3x"]])
        #expect(v2.packs.count == v1.packs.count)
    }

    @Test func packSizeLimitsSplitEachVariantGroupOnItsOwn() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {"a": ["A"]}, "limits": {"packSize": 5000},
             "variants": [{"axis": "resolution", "values": ["1x", "2x"], "marker": "@"}]}
            """)
        for (seed, name) in ["one", "two", "three"].enumerated() {
            try fixture.write("A/\(name)@1x.png", Self.bytes(UInt64(seed), 3000))
            try fixture.write("A/\(name)@2x.png", Self.bytes(UInt64(seed + 10), 3000))
        }
        let report = try await fixture.build()
        let manifest = try fixture.manifest(1)
        #expect(manifest.packs.filter { $0.variant == ["resolution": "1x"] }.count == 3)
        #expect(manifest.packs.filter { $0.variant == ["resolution": "2x"] }.count == 3)
        #expect(report.warnings.filter { $0.code == .splitPack }.count == 2)
    }

    /// What the runtime engineer builds on: ``CatalogFixture`` with variant rules.
    @Test func catalogFixtureBuildsAVariantCatalog() async throws {
        let fixture = try CatalogFixture(rules: Self.rules)
        try fixture.write("Textures/tree.png", Self.bytes(1))
        try fixture.write("Textures/tree@2x.png", Self.bytes(2))
        try fixture.write("Levels/forest.json", Data("{}".utf8))
        try await fixture.build()
        let manifest = try fixture.manifest(1)
        #expect(manifest.packs.map(\.variant.variantDescription).sorted() == ["", "resolution=1x", "resolution=2x"])
        #expect(ManifestIndex(manifest, variants: VariantPreferences(["resolution": ["2x"]])).file(atPath: "Textures/tree.png")?.sha256
                == ContentHash.sha256Hex(of: Self.bytes(2)))
    }

    /// The real `odrpack build` on a folder with variants: each variant pack unzips (with Python's
    /// `zipfile`) to the variant's bytes under its entry name, the file's own name.
    @Test(.enabled(if: builtExecutable(named: "odrpack") != nil))
    func odrpackBuildWritesVariantPacksThatUnzipToTheVariantBytes() async throws {
        let fixture = try BuildFixture()
        try Self.writeAssets(to: fixture)
        let odrpack = try #require(builtExecutable(named: "odrpack"))
        let result = try runCommand(
            odrpack.path, ["build", fixture.assets.path, "--output", fixture.output.path, "--no-cache", "--json"])
        #expect(result.status == 0, "\(result.stderr)")
        let report = try JSONDecoder().decode(BuildReport.self, from: Data(result.stdout.utf8))
        #expect(report.variantAxes.map(\.name) == ["resolution", "texture"])
        let manifest = try fixture.manifest(1)
        let variantPacks = manifest.packs.filter { !$0.variant.isEmpty }
        #expect(variantPacks.count == 8)  // rock@2x.png, the only path without every resolution, has its own
        let script = """
            import hashlib, json, sys, zipfile
            with zipfile.ZipFile(sys.argv[1]) as z:
                print(json.dumps({i.filename: hashlib.sha256(z.read(i)).hexdigest() for i in z.infolist()}))
            """
        for pack in variantPacks {
            let unzipped = try runCommand("python3", ["-c", script, fixture.catalog.packURL(id: pack.id).path])
            #expect(unzipped.status == 0, "\(unzipped.stderr)")
            let entries = try JSONDecoder().decode([String: String].self, from: Data(unzipped.stdout.utf8))
            let files = manifest.files.filter { $0.pack == pack.id }
            #expect(Set(entries.keys) == Set(files.map(\.entry)))
            for file in files {
                #expect(file.variant == pack.variant)
                // The entry is the variant's own file, and its bytes are that file's bytes.
                let source = try Data(contentsOf: fixture.assets.appending(path: file.entry))
                #expect(entries[file.entry] == ContentHash.sha256Hex(of: source))
                #expect(try VariantResolver(rules: TagRules.load(from: fixture.assets.appending(path: "odr.json")).variants)
                    .name(of: file.entry).logicalPath == file.path)
            }
        }
    }
}
