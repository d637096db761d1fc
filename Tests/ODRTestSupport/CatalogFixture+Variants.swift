import Foundation

extension CatalogFixture {
    /// The rules of ``variantGame()``: tag `forest` (the `Forest/` folder) and two variant axes,
    /// `resolution` (1x, 2x; marker `@`, default 1x, on `.png`) and `texture` (astc, etc2; marker
    /// `.`, on `.ktx2`).
    public static let variantRules = """
        {
          "catalogID": "variant-game",
          "tags": { "forest": { "include": ["Forest"] } },
          "variants": [
            { "axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x", "files": ["**/*.png"] },
            { "axis": "texture", "values": ["astc", "etc2"], "marker": ".", "files": ["**/*.ktx2"] }
          ]
        }
        """

    /// The source file of each logical path of ``variantGame()``, by variant description (`""` for
    /// a common file): `map.json` is common; `tree.png` comes at 1x and 2x; `sky.png` at 1x only
    /// (marked `sky@1x.png`: an unmarked file without marked siblings would be common);
    /// `banner.png` at 2x only; `tree.ktx2` in ASTC and ETC2. So `forest` has five packs: the
    /// common one, one per resolution, one per texture format.
    public static let variantSources: [String: [String: String]] = [
        "Forest/map.json": ["": "Forest/map.json"],
        "Forest/tree.png": ["resolution=1x": "Forest/tree.png", "resolution=2x": "Forest/tree@2x.png"],
        "Forest/sky.png": ["resolution=1x": "Forest/sky@1x.png"],
        "Forest/banner.png": ["resolution=2x": "Forest/banner@2x.png"],
        "Forest/tree.ktx2": ["texture=astc": "Forest/tree.astc.ktx2", "texture=etc2": "Forest/tree.etc2.ktx2"],
    ]

    /// A game whose catalog has two variant axes (``variantRules``, ``variantSources``), not built
    /// yet. Every source file has its own incompressible bytes and size, so a sum of pack sizes
    /// says which packs it counts.
    public static func variantGame() throws -> CatalogFixture {
        let game = try CatalogFixture(rules: variantRules)
        for (index, source) in variantSources.values.flatMap(\.values).sorted().enumerated() {
            try game.write(source, deterministicBytes(count: 20_000 + 7_000 * index, seed: 101 + UInt64(index)))
        }
        return game
    }
}
