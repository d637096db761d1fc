import Foundation
import ODRFormat
import ODRRuntime
import ODRTestSupport
import Testing

/// How a device's choice of variants shapes what the runtime counts, on a hand-built manifest with
/// two axes (the end-to-end tests with real packs are in `VariantInstallTests`).
struct VariantChoiceTests {
    /// Tag `level1`: common pack `common` (`map.json`); `res1x` and `res2x` hold `tree.png` (and
    /// `res2x` alone `hd.png`); `astc` and `etc2` hold `tree.ktx2`. Sizes are distinct powers of ten
    /// so a sum says which packs it counts.
    static func manifest() -> VersionManifest {
        let packs = [
            PackRecord(id: "common", tags: ["level1"], archiveBytes: 1, installedBytes: 10, entryCount: 1),
            PackRecord(id: "res1x", tags: ["level1"], archiveBytes: 100, installedBytes: 1_000, entryCount: 1, variant: ["resolution": "1x"]),
            PackRecord(id: "res2x", tags: ["level1"], archiveBytes: 10_000, installedBytes: 100_000, entryCount: 2, variant: ["resolution": "2x"]),
            PackRecord(id: "astc", tags: ["level1"], archiveBytes: 1_000_000, installedBytes: 10_000_000, entryCount: 1, variant: ["texture": "astc"]),
            PackRecord(id: "etc2", tags: ["level1"], archiveBytes: 100_000_000, installedBytes: 1_000_000_000, entryCount: 1, variant: ["texture": "etc2"]),
        ]
        func file(_ path: String, _ pack: PackRecord) -> FileRecord {
            FileRecord(path: path, pack: pack.id, entry: path, sha256: String(repeating: "0", count: 64), storedSize: 1, size: 1,
                       headerOffset: 0, method: .stored, variant: pack.variant)
        }
        return VersionManifest(
            catalogID: "variants", version: 1,
            tags: [TagRecord(name: "level1", preservationPriority: 0.5, packs: packs.map(\.id),
                             downloadBytes: packs.reduce(0) { $0 + $1.archiveBytes }, installedBytes: packs.reduce(0) { $0 + $1.installedBytes })],
            initialInstallTags: [], prefetchOrder: [], packs: packs,
            files: [file("Textures/hd.png", packs[2]), file("Textures/tree.ktx2", packs[3]), file("Textures/tree.ktx2", packs[4]),
                    file("Textures/tree.png", packs[1]), file("Textures/tree.png", packs[2]), file("map.json", packs[0])],
            variantAxes: [VariantAxis(name: "resolution", values: ["1x", "2x"]), VariantAxis(name: "texture", values: ["astc", "etc2"])])
    }

    static func snapshot(_ choice: [String: [String]]) -> CatalogSnapshot {
        CatalogSnapshot(catalogURL: URL(string: "http://127.0.0.1:1/game/")!, index: CatalogIndex(id: "variants", serial: 1, distributions: ["live": 1], versions: []),
                        manifest: manifest(), variants: VariantPreferences(choice))
    }

    /// The installed bytes the ledger counts when a request holds `level1`.
    static func heldBytes(_ choice: [String: [String]]) throws -> Int64 {
        let catalog = try LedgerCatalog(manifest: snapshot(choice).lookup)
        var ledger = Ledger(catalog: catalog)
        return try ledger.begin(catalog.tags(named: ["level1"]))
    }

    static let ledgerCases: [(choice: [String: [String]], bytes: Int64)] = [
        (["resolution": ["2x"], "texture": ["etc2"]], 10 + 100_000 + 1_000_000_000),
        (["resolution": ["1x"], "texture": ["astc"]], 10 + 1_000 + 10_000_000),
        // No choice: each axis's first declared value, plus 2x for the file 1x lacks.
        ([:], 10 + 1_000 + 100_000 + 10_000_000),
        // A value the catalog does not declare is skipped: no resolution pack at all.
        (["resolution": ["3x"], "texture": ["astc"]], 10 + 10_000_000),
    ]

    @Test(arguments: ledgerCases.indices)
    func theLedgerCountsOnlyTheChosenPacksAndTheCommonOnes(_ row: Int) throws {
        let (choice, bytes) = Self.ledgerCases[row]
        #expect(try Self.heldBytes(choice) == bytes)
    }

    @Test func tagsAndPackListsShowTheChosenViewWithItsSizes() throws {
        let snapshot = Self.snapshot(["resolution": ["2x", "1x"], "texture": ["astc"]])
        let tag = try #require(snapshot.lookup.tag(named: "level1"))
        #expect(tag.packs == ["common", "res2x", "astc"])
        #expect(tag.downloadBytes == 1 + 10_000 + 1_000_000)
        #expect(tag.installedBytes == 10 + 100_000 + 10_000_000)
        #expect(try snapshot.packs(forTags: ["level1"]).map(\.id) == ["astc", "common", "res2x"])
        #expect(snapshot.lookup.file(atPath: "Textures/tree.png")?.pack == "res2x")
        #expect(snapshot.lookup.file(atPath: "Textures/hd.png")?.pack == "res2x")
        // The manifest's own record still lists every pack, for a client that takes everything.
        #expect(snapshot.manifest.tags[0].packs.count == 5)
    }

    @Test func aFileOnlyInVariantsTheDeviceDoesNotAcceptIsNotAvailable() throws {
        let directory = try TemporaryDirectory(prefix: "odr-variant-choice")
        let store = try ResourceStore(directory: directory.appending("store"))
        let snapshot = Self.snapshot(["resolution": ["1x"]])
        #expect(snapshot.lookup.file(atPath: "Textures/hd.png") == nil)
        let error = #expect(throws: ResourceError.self) { try store.url(forResource: "Textures/hd.png", in: snapshot) }
        #expect(error?.code == .unknownResource)
        #expect(error?.message.contains("resolution=2x") == true, "the message names the variant that has it")
        // A file of a chosen variant whose pack is not installed is another error.
        let notInstalled = #expect(throws: ResourceError.self) { try store.url(forResource: "Textures/tree.png", in: snapshot) }
        #expect(notInstalled?.code == .resourceNotInstalled)
        #expect(notInstalled?.message.contains("res1x") == true)
    }

    @Test func aChoiceOfAxesAndValuesTheCatalogDeclaresPasses() throws {
        try Self.snapshot([:]).requireDeclaredVariants()
        try Self.snapshot(["resolution": ["2x", "1x"], "texture": ["etc2"]]).requireDeclaredVariants()
    }

    @Test func anUndeclaredAxisIsAnInvalidArgumentListingTheDeclaredAxes() {
        let error = #expect(throws: ResourceError.self) { try Self.snapshot(["resoluton": ["2x"]]).requireDeclaredVariants() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("'resoluton'") == true)
        #expect(error?.message.contains("resolution (1x, 2x); texture (astc, etc2)") == true)
    }

    @Test func anUndeclaredValueIsAnInvalidArgumentListingTheAxisValues() {
        let error = #expect(throws: ResourceError.self) { try Self.snapshot(["texture": ["astc", "bc7"]]).requireDeclaredVariants() }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("'bc7'") == true)
        #expect(error?.message.contains("Choose among astc, etc2") == true)
    }
}
