import Foundation
import ODRBuilder
import ODRFormat

/// A small game built into a real catalog with ``CatalogBuilder``: an assets folder with tag rules,
/// and the catalog folder `odrpack build` makes of it, in one temporary directory.
///
/// ```swift
/// let fixture = try CatalogFixture()
/// try fixture.write("small/a.txt", Data("hello".utf8))
/// try await fixture.build()                      // version 1; change files and build again for 2
/// try await withTestServer(root: fixture.catalog) { server in ... }
/// ```
public struct CatalogFixture: Sendable {
    public let directory: TemporaryDirectory
    public var assets: URL { directory.appending("assets") }
    public var catalog: URL { directory.appending("catalog") }

    /// The default rules: tags `small` and `big`, whose folders share `shared/`. Packing is
    /// exact (`limits.minimumPackSize` 0: one pack per distinct tag set), so that `shared/` is a pack
    /// of its own that both tags download, as the runtime's tests expect; merging small packs has
    /// tests of its own (PackMergingTests).
    public static let defaultRules = """
        {
          "catalogID": "fixture-game",
          "limits": { "minimumPackSize": 0 },
          "tags": {
            "small": { "include": ["small", "shared"], "preservationPriority": 0.3 },
            "big": { "include": ["big", "shared"], "preservationPriority": 0.7 }
          }
        }
        """

    /// Rules with exact packing (`limits.minimumPackSize` 0): one pack per distinct tag set. The
    /// default rules already pack exactly; tests whose assertions depend on it name this, so that
    /// they keep it if the default changes.
    public static let exactPackingRules = defaultRules

    public init(rules: String = CatalogFixture.defaultRules) throws {
        directory = try TemporaryDirectory(prefix: "odr-catalog-fixture")
        try FileManager.default.createDirectory(at: directory.appending("assets"), withIntermediateDirectories: true)
        try Data(rules.utf8).write(to: directory.appending("assets/odr.json"))
    }

    /// A fixture with the default rules (or `rules`) and files: text in `small/` (with a duplicate),
    /// a shared file, and `bigBytes` of incompressible data in `big/`.
    public static func game(bigBytes: Int = 3 << 20, rules: String = CatalogFixture.defaultRules) throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: rules)
        let text = Data(String(repeating: "small level data\n", count: 2000).utf8)
        try fixture.write("small/map.json", text)
        try fixture.write("small/copy/map-again.json", text)
        try fixture.write("small/notes.txt", Data("notes\n".utf8))
        try fixture.write("shared/palette.bin", deterministicBytes(count: 50_000, seed: 7))
        try fixture.write("big/music.bin", deterministicBytes(count: bigBytes, seed: 8))
        try fixture.write("big/level.json", Data(String(repeating: "{\"tile\": 1}\n", count: 5000).utf8))
        return fixture
    }

    /// Writes an asset file (creating folders).
    public func write(_ path: String, _ data: Data) throws {
        let url = assets.appending(path: path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try data.write(to: url)
    }

    /// Builds the assets into the catalog: version 1, or the next version when files changed;
    /// `catalog.json` signed with `signing` when given; files at or over the rules'
    /// `limits.chunkThreshold` cut with `chunkSizes` when given (small sizes chunk small files).
    ///
    /// `splitMetadata` is `false` here, a whole manifest, unlike `odrpack build`'s default: the
    /// tests built on this fixture ask the runtime about any tag at once (sizes, hints, prefetch),
    /// which a split catalog answers only for tags described first. `true` writes split metadata,
    /// `nil` lets the builder choose as `odrpack build` does (split for a new catalog).
    @discardableResult
    public func build(signing: CatalogSigning? = nil, splitMetadata: Bool? = false, chunkSizes: FastCDC.Parameters? = nil) async throws -> BuildReport {
        var options = BuildOptions(assets: assets, output: catalog)
        options.concurrency = 2
        options.signing = signing
        options.splitMetadata = splitMetadata
        if let chunkSizes { options.packOptions.chunkSizes = chunkSizes }
        return try await CatalogBuilder(options: options).build()
    }

    /// The current `catalog.json`.
    public func index() throws -> CatalogIndex { try CatalogDirectory(root: catalog).loadIndex() }

    /// The manifest of version `number`.
    public func manifest(_ number: Int) throws -> VersionManifest {
        let directory = CatalogDirectory(root: catalog)
        return try directory.loadManifest(version: number, in: directory.loadIndex())
    }

    /// The bytes of asset `path`.
    public func contents(of path: String) throws -> Data { try Data(contentsOf: assets.appending(path: path)) }

    /// The JSON of a split manifest (format 3, version 1) with `bins` pins of 100 bytes, written
    /// as a hostile server would: compact, unvalidated, as many bins as asked.
    public static func splitManifestJSON(bins: Int, catalogID: String) -> Data {
        var text = Data(#"{"bins":["#.utf8)
        let pin = Data(#"{"sha256":"\#(String(repeating: "a", count: 64))","size":100}"#.utf8)
        text.reserveCapacity(bins * (pin.count + 1) + 256)
        for i in 0..<bins {
            if i > 0 { text.append(UInt8(ascii: ",")) }
            text += pin
        }
        text += Data(#"],"catalogID":"\#(catalogID)","formatVersion":3,"initialInstallTags":[],"prefetchOrder":[],"totals":{"archiveBytes":1,"files":1,"installedBytes":1,"packs":1,"tags":1},"version":1}"#.utf8)
        return text
    }

    /// `value` as JSON the way a hostile server would write it: without the validation that
    /// `encoded()` does before writing a catalog or manifest.
    public static func unvalidatedJSON(_ value: some Encodable) throws -> Data {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        return try encoder.encode(value)
    }
}
