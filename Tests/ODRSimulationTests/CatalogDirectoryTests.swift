import Foundation
import ODRFormat
import ODRRuntime
import ODRSimulation
import ODRTestSupport
import Testing

struct CatalogDirectoryTests {
    /// Writes a two-version catalog whose `live` distribution points at version 1.
    static func writeCatalog(in directory: TemporaryDirectory) throws {
        let shared = String(repeating: "a", count: 64), one = String(repeating: "b", count: 64)
        let packs = [
            PackRecord(id: shared, tags: ["level1", "level2"], archiveBytes: 700, installedBytes: 1000, entryCount: 1),
            PackRecord(id: one, tags: ["level1"], archiveBytes: 1400, installedBytes: 2000, entryCount: 1),
        ]
        let tags = [
            TagRecord(name: "level1", preservationPriority: 0.9, packs: [shared, one], downloadBytes: 2100, installedBytes: 3000),
            TagRecord(name: "level2", preservationPriority: 0.3, packs: [shared], downloadBytes: 700, installedBytes: 1000),
        ]
        try FileManager.default.createDirectory(at: directory.appending("versions"), withIntermediateDirectories: true)
        for version in [1, 2] {
            let manifest = VersionManifest(
                catalogID: "sample", version: version, tags: tags, initialInstallTags: [], prefetchOrder: [],
                packs: packs, files: [])
            try manifest.encoded().write(to: directory.appending(VersionManifest.manifestPath(forVersion: version)))
        }
        let index = CatalogIndex(
            id: "sample", serial: 2, distributions: ["live": 1, "test": 2],
            versions: [.init(number: 1, manifest: "versions/1.json"), .init(number: 2, manifest: "versions/2.json")])
        try index.encoded().write(to: directory.appending(CatalogIndex.fileName))
    }

    @Test func aCatalogDirectoryBecomesTheSimulatedCatalog() throws {
        let directory = try TemporaryDirectory()
        try Self.writeCatalog(in: directory)
        let catalog = try SimulatedCatalog(directory: directory.url)
        #expect(catalog.name == "sample v1")
        #expect(catalog.tags.map(\.name) == ["level1", "level2"])
        #expect(catalog.tags.map(\.preservationPriority) == [0.9, 0.3])
        #expect(catalog.packs.map(\.bytes) == [1000, 2000])
        #expect(catalog.packs.map(\.downloadBytes) == [700, 1400])
        let level2 = try catalog.ledgerCatalog.tags(named: ["level2"])
        #expect(catalog.ledgerCatalog.packs(of: level2[0]).map(\.index) == [0])
        #expect(try SimulatedCatalog(directory: directory.url, distribution: "test").name == "sample v2")
    }

    @Test func aWorkloadRunsOnACatalogDirectory() throws {
        let directory = try TemporaryDirectory()
        try Self.writeCatalog(in: directory)
        let catalog = try SimulatedCatalog(directory: directory.url)
        let device = DeviceSettings(diskCapacity: 1 << 30)
        let script = Workload.levels.script(catalog: catalog, device: device, days: 2, seed: 1)
        let result = Simulator(script: script, device: device).run(RuntimePolicy())
        #expect(result.metrics.requests > 0)
        // Everything fits: each pack is downloaded once.
        #expect(result.metrics.bytesDownloaded == 2100)
    }

    /// Writes the catalog of ``writeCatalog(in:)`` with split metadata (format 3): version 1's tags
    /// and packs are only in its bins.
    static func writeSplitCatalog(in directory: TemporaryDirectory) throws -> SplitManifest {
        try writeCatalog(in: directory)
        let path = directory.appending(VersionManifest.manifestPath(forVersion: 1))
        var whole = try VersionManifest.decode(from: Data(contentsOf: path))
        // A bin states each pack's file count, which must cover its entries: one file per pack.
        whole.files = whole.packs.enumerated().map { i, pack in
            FileRecord(path: "file\(i).bin", pack: pack.id, entry: "file\(i).bin", sha256: String(repeating: "c", count: 64),
                       storedSize: pack.archiveBytes - 100, size: pack.installedBytes, headerOffset: 0, method: .deflate)
        }
        try FileManager.default.createDirectory(at: directory.appending(SplitMetadata.folder), withIntermediateDirectories: true)
        func write(_ compact: Data, _ path: (MetadataPin) -> String) throws -> MetadataPin {
            let served = try SplitMetadata.served(compact: compact)
            let pin = MetadataPin(of: served)
            try served.write(to: directory.appending(path(pin)))
            return pin
        }
        let split = try SplitMetadata.split(
            whole, tablePin: { try write($0.compactBytes(), SplitMetadata.tablePath(for:)) },
            binPin: { try write($0.compactBytes(), SplitMetadata.binPath(for:)) })
        try split.encoded().write(to: path)
        return split
    }

    @Test func aSplitCatalogIsReadFromItsBins() throws {
        let directory = try TemporaryDirectory()
        let split = try Self.writeSplitCatalog(in: directory)
        let catalog = try SimulatedCatalog(directory: directory.url)
        #expect(catalog.name == "sample v1")
        #expect(catalog.tags.map(\.name) == ["level1", "level2"])
        #expect(catalog.tags.map(\.preservationPriority) == [0.9, 0.3])
        #expect(catalog.packs.map(\.downloadBytes) == [700, 1400])
        let level2 = try catalog.ledgerCatalog.tags(named: ["level2"])
        #expect(catalog.ledgerCatalog.packs(of: level2[0]).map(\.index) == [0])

        // A bin that differs from its pin is refused, naming the file.
        let bin = directory.appending(SplitMetadata.binPath(for: split.bins[0]))
        var bytes = try Data(contentsOf: bin)
        bytes[bytes.count - 1] ^= 0xFF
        try bytes.write(to: bin)
        let error = #expect(throws: FormatError.self) { try SimulatedCatalog(directory: directory.url) }
        #expect(error?.code == .hashMismatch)
    }

    @Test func sizesThatOverflowWhenAddedAreRefused() throws {
        let tags = [SimulatedCatalog.Tag(name: "a", preservationPriority: 0.5)]
        let packs = (0..<2).map { i in
            SimulatedCatalog.Pack(id: String(repeating: "\(i)", count: 64), bytes: .max, downloadBytes: 1, tags: [TagIndex(0)])
        }
        let error = #expect(throws: ResourceError.self) { try SimulatedCatalog(name: "huge", tags: tags, packs: packs) }
        #expect(error?.code == .invalidCatalog)
        #expect(error?.message.contains("add up to more than") == true)
    }

    @Test func aMissingCatalogSaysWhatToPass() throws {
        let directory = try TemporaryDirectory()
        let error = #expect(throws: ResourceError.self) { try SimulatedCatalog(directory: directory.url) }
        #expect(error?.code == .invalidCatalog)
    }
}
