import Foundation
@testable import ODRFormat
import Testing

/// Variant axes in a version manifest: encoding, validation, the compact form, and how an index
/// resolves a device's preferences to packs and files.
struct ManifestVariantTests {
    static let hash = String(repeating: "c", count: 64)
    static func id(_ letter: Character) -> String { String(repeating: letter, count: 64) }

    /// Tag `level1` with a common pack (map.json) and four variant packs on two axes:
    /// - `tree.png`: resolution 1x (pack 1), 2x (pack 2);
    /// - `rock.png`: resolution 1x only (pack 1), so a 2x device falls back to 1x for it;
    /// - `glow.png`: resolution 2x only (pack 2);
    /// - `tree.ktx2`: texture astc (pack 3), etc2 (pack 4).
    static func twoAxisManifest() -> VersionManifest {
        let common = id("a"), x1 = id("1"), x2 = id("2"), astc = id("3"), etc2 = id("4")
        func pack(_ id: String, _ bytes: Int64, _ variant: Variant) -> PackRecord {
            PackRecord(id: id, tags: ["level1"], archiveBytes: bytes, installedBytes: bytes * 2, entryCount: 2, variant: variant)
        }
        func file(_ path: String, _ pack: String, _ variant: Variant, entry: String? = nil) -> FileRecord {
            FileRecord(path: path, pack: pack, entry: entry ?? path, sha256: hash, storedSize: 10, size: 10, headerOffset: 0,
                       method: .stored, variant: variant)
        }
        let packs = [pack(x1, 100, ["resolution": "1x"]), pack(x2, 400, ["resolution": "2x"]), pack(astc, 50, ["texture": "astc"]),
                     pack(etc2, 60, ["texture": "etc2"]), pack(common, 70, [:])].sorted { $0.id < $1.id }
        let files = [
            file("Levels/1/map.json", common, [:]),
            file("Textures/glow.png", x2, ["resolution": "2x"], entry: "Textures/glow@2x.png"),
            file("Textures/rock.png", x1, ["resolution": "1x"]),
            file("Textures/tree.ktx2", astc, ["texture": "astc"], entry: "Textures/tree.astc.ktx2"),
            file("Textures/tree.ktx2", etc2, ["texture": "etc2"], entry: "Textures/tree.etc2.ktx2"),
            file("Textures/tree.png", x1, ["resolution": "1x"]),
            file("Textures/tree.png", x2, ["resolution": "2x"], entry: "Textures/tree@2x.png"),
        ]
        return VersionManifest(
            catalogID: "variants", version: 1,
            tags: [TagRecord(name: "level1", preservationPriority: 0.5, packs: packs.map(\.id), downloadBytes: 680, installedBytes: 1360)],
            initialInstallTags: [], prefetchOrder: [], packs: packs, files: files,
            variantAxes: [VariantAxis(name: "resolution", values: ["1x", "2x"]), VariantAxis(name: "texture", values: ["astc", "etc2"])])
    }

    @Test func aManifestWithVariantsIsVersion2AndRoundTripsToIdenticalBytes() throws {
        let manifest = Self.twoAxisManifest()
        #expect(manifest.formatVersion == 2)
        let data = try manifest.encoded()
        let text = String(decoding: data, as: UTF8.self)
        #expect(text.contains("\"variantAxes\""))
        #expect(text.contains("\"variant\" : {") && text.contains("\"resolution\" : \"2x\""))
        let decoded = try VersionManifest.decode(from: data)
        #expect(decoded == manifest)
        #expect(try decoded.encoded() == data)
    }

    @Test func aManifestWithoutVariantsKeepsVersion1AndWritesNoVariantKeys() throws {
        let manifest = sampleManifest()
        #expect(manifest.formatVersion == 1)
        let text = String(decoding: try manifest.encoded(), as: UTF8.self)
        #expect(!text.contains("variant"))
    }

    @Test func aVersion3ManifestIsRefusedAndAVersion1ManifestMayNotHaveAxes() {
        var future = Self.twoAxisManifest()
        future.formatVersion = 3
        #expect((#expect(throws: FormatError.self) { try future.validate() })?.code == .unsupportedFormatVersion)
        var old = Self.twoAxisManifest()
        old.formatVersion = 1
        let error = #expect(throws: FormatError.self) { try old.validate() }
        #expect(error?.field == "formatVersion")
    }

    typealias Breakage = ManifestValidationTests.Breakage

    static let breakages: [Breakage] = [
        Breakage(name: "axis value with a slash", code: .invalidValue, field: "variantAxes[0].values[1]") { $0.variantAxes[0].values[1] = "2x/../x" },
        Breakage(name: "axis value '..'", code: .invalidValue, field: "variantAxes[0].values[1]") { $0.variantAxes[0].values[1] = ".." },
        Breakage(name: "axis declared twice", code: .duplicate, field: "variantAxes[1].name") { $0.variantAxes[1].name = "resolution" },
        Breakage(name: "axis without values", code: .invalidValue, field: "variantAxes[1].values") { $0.variantAxes[1].values = [] },
        Breakage(name: "value listed twice", code: .duplicate, field: "variantAxes[0].values[1]") { $0.variantAxes[0].values[1] = "1x" },
        Breakage(name: "pack on an undeclared axis", code: .danglingReference, field: "packs[0].variant") { $0.packs[0].variant = ["depth": "1x"] },
        Breakage(name: "pack with an undeclared value", code: .danglingReference, field: "packs[0].variant") { $0.packs[0].variant = ["resolution": "4x"] },
        Breakage(name: "file variant differs from its pack's", code: .invalidValue, field: "files[2].variant") { $0.files[2].variant = ["resolution": "2x"] },
        Breakage(name: "same path and variant twice", code: .duplicate, field: "files[6].path") { manifest in
            let other = manifest.files[5]
            manifest.files[6].pack = other.pack
            manifest.files[6].variant = other.variant
        },
        Breakage(name: "variants on different axes", code: .invalidValue, field: "files[4].variant") { manifest in
            let x1 = manifest.packs.first { $0.variant == ["resolution": "1x"] }!.id
            manifest.files[4].pack = x1
            manifest.files[4].variant = ["resolution": "1x"]
        },
        Breakage(name: "a common file beside variants of its path", code: .invalidValue, field: "files[6].variant") { manifest in
            let common = manifest.packs.first { $0.variant.isEmpty }!.id
            manifest.files[6].pack = common
            manifest.files[6].variant = [:]
        },
        Breakage(name: "variants with different tags", code: .invalidValue, field: "files[6].pack") { manifest in
            manifest.tags.append(TagRecord(name: "level2", preservationPriority: 0.5, packs: [], downloadBytes: 0, installedBytes: 0))
            let x2 = manifest.packs.firstIndex { $0.variant == ["resolution": "2x"] }!
            manifest.packs[x2].tags = ["level1", "level2"]
            manifest.tags[1].packs = [manifest.packs[x2].id]
        },
    ]

    @Test(arguments: breakages) func eachBrokenRuleIsATypedErrorNamingTheField(_ breakage: Breakage) {
        var manifest = Self.twoAxisManifest()
        breakage.mutate(&manifest)
        let error = #expect(throws: FormatError.self) { try manifest.validate() }
        #expect(error?.code == breakage.code)
        #expect(error?.field == breakage.field)
    }

    @Test func theCompactFormKeepsAxesAndVariantsAndResolvesTheSame() throws {
        let manifest = Self.twoAxisManifest()
        let compact = try VersionManifest(compact: try manifest.compactEncoded())
        #expect(compact == manifest)
        for device in [VariantPreferences(), VariantPreferences(["resolution": ["2x", "1x"], "texture": ["etc2"]])] {
            let fromRecords = ManifestIndex(manifest, variants: device), fromCompact = ManifestIndex(compact, variants: device)
            #expect(fromCompact.tags == fromRecords.tags)
            for path in ["Textures/tree.png", "Textures/rock.png", "Textures/glow.png", "Textures/tree.ktx2", "Levels/1/map.json"] {
                #expect(fromCompact.file(atPath: path) == fromRecords.file(atPath: path))
                #expect(fromCompact.files(atPath: path) == fromRecords.files(atPath: path))
            }
        }
    }

    /// Which pack holds the file a device resolves `path` to: its variant, or "none".
    static func resolved(_ index: ManifestIndex, _ path: String) -> String {
        guard let file = index.file(atPath: path) else { return "none" }
        return file.variant.isEmpty ? "common" : file.variant.variantDescription
    }

    @Test func eachChoiceResolvesPathsAndTagsToItsOwnPacks() throws {
        let manifest = Self.twoAxisManifest()
        let byVariant = Dictionary(uniqueKeysWithValues: manifest.packs.map { ($0.variant.variantDescription, $0) })
        let cases: [(device: [String: [String]], tree: String, rock: String, glow: String, ktx: String, packs: [String])] = [
            // No preference: the declared order, first value first, falling back along it.
            ([:], "resolution=1x", "resolution=1x", "resolution=2x", "texture=astc", ["", "resolution=1x", "resolution=2x", "texture=astc"]),
            (["resolution": ["1x"], "texture": ["astc"]], "resolution=1x", "resolution=1x", "none", "texture=astc", ["", "resolution=1x", "texture=astc"]),
            (["resolution": ["2x"], "texture": ["etc2"]], "resolution=2x", "none", "resolution=2x", "texture=etc2", ["", "resolution=2x", "texture=etc2"]),
            // Fallback: rock.png has no 2x, so a 2x-then-1x device takes its 1x and needs the 1x pack too.
            (["resolution": ["2x", "1x"], "texture": ["etc2", "astc"]], "resolution=2x", "resolution=1x", "resolution=2x", "texture=etc2",
             ["", "resolution=1x", "resolution=2x", "texture=etc2"]),
            // Values a catalog does not declare are skipped.
            (["resolution": ["3x", "2x"], "texture": ["pvrtc", "astc"]], "resolution=2x", "none", "resolution=2x", "texture=astc",
             ["", "resolution=2x", "texture=astc"]),
        ]
        for (device, tree, rock, glow, ktx, packs) in cases {
            let index = ManifestIndex(manifest, variants: VariantPreferences(device))
            #expect(Self.resolved(index, "Textures/tree.png") == tree, "\(device)")
            #expect(Self.resolved(index, "Textures/rock.png") == rock, "\(device)")
            #expect(Self.resolved(index, "Textures/glow.png") == glow, "\(device)")
            #expect(Self.resolved(index, "Textures/tree.ktx2") == ktx, "\(device)")
            #expect(Self.resolved(index, "Levels/1/map.json") == "common")
            #expect(index.files(atPath: "Textures/tree.png").count == 2)
            let chosen = packs.map { byVariant[$0]!.id }.sorted()
            let tag = try #require(index.tag(named: "level1"))
            #expect(tag.packs == chosen, "\(device)")
            #expect(index.packs(forTags: ["level1"]) == chosen)
            #expect(tag.downloadBytes == packs.map { byVariant[$0]!.archiveBytes }.reduce(0, +))
            #expect(tag.installedBytes == packs.map { byVariant[$0]!.installedBytes }.reduce(0, +))
            #expect(index.tags == [tag])
            for pack in manifest.packs { #expect(index.isChosen(packID: pack.id) == chosen.contains(pack.id)) }
        }
        // The manifest itself still lists every pack for the tag.
        #expect(manifest.tags[0].packs.count == 5)
    }

    @Test func preferencesParseFromArgumentsAndRejectWhatIsNotAChoice() throws {
        let parsed = try VariantPreferences.parse(["resolution=2x,1x", "texture=astc", "resolution=3x"])
        #expect(parsed.values == ["resolution": ["2x", "1x", "3x"], "texture": ["astc"]])
        for bad in ["resolution", "=2x", "resolution=", "resolution=2x,,1x", "resolution=2x/..", "a b=1x", "resolution=.."] {
            let error = #expect(throws: FormatError.self, "\(bad)") { try VariantPreferences.parse([bad]) }
            #expect(error?.code == .invalidValue)
            #expect(error?.message.contains(bad) == true, "\(bad)")
        }
    }
}
