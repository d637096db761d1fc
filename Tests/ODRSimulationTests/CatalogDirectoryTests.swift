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

    @Test func aMissingCatalogSaysWhatToPass() throws {
        let directory = try TemporaryDirectory()
        let error = #expect(throws: ResourceError.self) { try SimulatedCatalog(directory: directory.url) }
        #expect(error?.code == .invalidCatalog)
    }
}
