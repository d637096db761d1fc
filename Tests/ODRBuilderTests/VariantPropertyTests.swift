import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Random asset trees whose names carry variants, built into real catalogs: every file lands once
/// under its logical path and variant, variants of a path share one tag set, and every device finds
/// the variant it chose in the packs its tags download.
struct VariantPropertyTests {
    /// One generated file: its name on disk, the logical path and variant the build should give it.
    struct Asset {
        var path: String
        var logicalPath: String
        var variant: Variant
        var content: Data
    }

    static let variants = """
        [{"axis": "resolution", "values": ["1x", "2x", "3x"], "marker": "@", "default": "1x"},
         {"axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"]}]
        """

    /// Files `A/f3.png`, `A/f3@2x.png`, `B/f1.astc@3x.ktx2`, ...: PNGs unmarked (the default 1x when a
    /// sibling is marked) or at 2x/3x; KTX2 textures always name their format, and a resolution or not.
    static func assets(seed: UInt64) -> [Asset] {
        var random = SeededGenerator(seed: seed)
        let pool = (0..<Int.random(in: 3...12, using: &random)).map { deterministicBytes(count: 200 + $0 * 150, seed: seed &* 100 &+ UInt64($0)) }
        var byKey: [String: Asset] = [:]
        for _ in 0..<Int.random(in: 2...40, using: &random) {
            let folder = ["A", "B", "C/D"].randomElement(using: &random) ?? "A"
            let stem = "f\(Int.random(in: 0..<8, using: &random))"
            let resolution = ["", "2x", "3x"].randomElement(using: &random) ?? ""
            var variant: Variant = resolution.isEmpty ? [:] : ["resolution": resolution]
            let path: String, logical: String
            if Bool.random(using: &random) {
                logical = "\(folder)/\(stem).png"
                path = "\(folder)/\(stem)\(resolution.isEmpty ? "" : "@" + resolution).png"
            } else {
                let texture = ["astc", "etc2"].randomElement(using: &random) ?? "astc"
                variant["texture"] = texture
                logical = "\(folder)/\(stem).ktx2"
                let marks = ["." + texture] + (resolution.isEmpty ? [] : ["@" + resolution])
                path = "\(folder)/\(stem)\((Bool.random(using: &random) ? marks : marks.reversed()).joined()).ktx2"
            }
            let key = "\(logical) \(variant.variantDescription)"
            guard byKey[key] == nil else { continue }
            byKey[key] = Asset(path: path, logicalPath: logical, variant: variant, content: pool.randomElement(using: &random) ?? Data("x".utf8))
        }
        // An unmarked PNG beside marked siblings is their default 1x; a KTX2 beside resolution
        // variants without one is too.
        var assets = Array(byKey.values)
        let marked = Set(assets.filter { $0.variant["resolution"] != nil }.map(\.logicalPath))
        for index in assets.indices where assets[index].variant["resolution"] == nil && marked.contains(assets[index].logicalPath) {
            assets[index].variant["resolution"] = "1x"
        }
        return assets.sorted { $0.path < $1.path }
    }

    @Test(arguments: Array(UInt64(2000)...UInt64(2011)))
    func variantCatalogsKeepTheInvariants(seed: UInt64) async throws {
        let assets = Self.assets(seed: seed)
        var random = SeededGenerator(seed: seed)
        let patterns = ["A", "B/**", "C", "**/*.png", "**/f[0-3].*", "*/f1.*", "**/*.ktx2"]
        let tags = (0..<Int.random(in: 1...4, using: &random)).map { index in
            "\"t\(index)\": [\((0..<Int.random(in: 1...2, using: &random)).map { _ in "\"\(patterns.randomElement(using: &random) ?? "A")\"" }.joined(separator: ", "))]"
        }
        let packSize = Int.random(in: 500...6000, using: &random)
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {\(tags.joined(separator: ", "))}, "untagged": "base", "limits": {"packSize": \(packSize)},
             "variants": \(Self.variants)}
            """)
        for asset in assets { try fixture.write(asset.path, asset.content) }
        try await fixture.build(cached: false) { $0.allowOversize = true }
        let manifest = try fixture.manifest(1)
        let index = manifest.makeIndex()
        let rules = try TagRules.load(from: fixture.assets.appending(path: "odr.json"))

        // Every file is one record: its logical path, its variant, its bytes; the entry is the file's
        // own name, or that of a file of the same variant and content stored once for both.
        #expect(manifest.files.map { "\($0.path) \($0.variant.variantDescription) \($0.sha256)" }.sorted()
                == assets.map { "\($0.logicalPath) \($0.variant.variantDescription) \(ContentHash.sha256Hex(of: $0.content))" }.sorted(),
                "seed \(seed)")
        let physical = Dictionary(uniqueKeysWithValues: assets.map { ($0.path, $0) })
        for file in manifest.files {
            let source = try #require(physical[file.entry], "seed \(seed) \(file.entry)")
            #expect(source.variant == file.variant && ContentHash.sha256Hex(of: source.content) == file.sha256, "seed \(seed)")
            let pack = try #require(index.pack(id: file.pack))
            #expect(pack.variant == file.variant, "seed \(seed)")
            // A variant's pack has exactly its logical path's tags: one tag set for all variants.
            if !file.variant.isEmpty {
                let pathTags = rules.tags(forPath: file.path)
                #expect(pack.tags == (pathTags.isEmpty ? [TagRules.baseTag] : pathTags), "seed \(seed) \(file.path)")
            }
        }

        // Whatever a device chooses, a request for some tags downloads the chosen variant of every
        // path those tags need.
        for _ in 0..<6 {
            let device = VariantPreferences([
                "resolution": ["1x", "2x", "3x"].shuffled(using: &random).prefix(Int.random(in: 1...3, using: &random)).map { $0 },
                "texture": ["astc", "etc2"].shuffled(using: &random),
            ])
            let view = ManifestIndex(manifest, variants: device)
            let query = Set(manifest.tags.map(\.name).filter { _ in Bool.random(using: &random) })
            let packs = Set(view.packs(forTags: query))
            for path in Set(manifest.files.map(\.path)) {
                let pathTags = rules.tags(forPath: path)
                guard !query.isDisjoint(with: pathTags.isEmpty ? [TagRules.baseTag] : pathTags) else { continue }
                guard let chosen = view.file(atPath: path) else { continue }
                #expect(packs.contains(chosen.pack), "seed \(seed) \(path) \(device.values)")
            }
        }
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
    }
}
