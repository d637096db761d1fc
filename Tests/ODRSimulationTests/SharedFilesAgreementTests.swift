import Foundation
import ODRFormat
import ODRRuntime
import ODRSimulation
import ODRTestSupport
import Testing

/// The simulator's model of packs sharing files and the runtime's store, fed the same packs,
/// free the same bytes for the same purge.
struct SharedFilesAgreementTests {
    @Test func theSimulatorAndTheRuntimeFreeTheSameBytes() async throws {
        let mebibyte = 1 << 20
        let game = try CatalogFixture(rules: #"{ "tags": { "world": { "include": ["world"] }, "town": { "include": ["town"] } } }"#)
        for index in 0..<8 { try game.write("world/f\(index).bin", deterministicBytes(count: mebibyte, seed: UInt64(index + 1))) }
        try game.write("town/t.bin", deterministicBytes(count: 3 * mebibyte, seed: 50))
        try await game.build()
        let stores = try TemporaryDirectory(prefix: "odr-sim-agreement")
        var configuration = ResourceManager.Configuration(catalogURL: game.catalog, storeDirectory: stores.appending("store"))
        configuration.keptPreviousVersions = 2  // keep every version: the purge below chooses among them
        configuration.synchronousWrites = false
        for update in 0...2 {
            if update > 0 {
                try game.write("world/f\(update).bin", deterministicBytes(count: mebibyte, seed: UInt64(100 + update)))
                try await game.build()
            }
            let manager = try ResourceManager(configuration: configuration)
            _ = try await manager.loadCatalog(online: true)
            _ = try await manager.fetch(tags: ["world", "town"])
        }
        let store = try ResourceStore(directory: stores.appending("store"))
        let runtime = try store.diskAccount()
        #expect(runtime.packs.count == 4, "three versions of world's pack and town's")
        let manifests = try (1...3).map { try game.manifest($0) }
        let simulated = SimulatedCatalog.fileAccount(of: runtime.packs.map(\.id), in: manifests)
        #expect(simulated.installedBytes == runtime.installedBytes)
        for (number, pack) in runtime.packs.enumerated() {
            #expect(simulated.ownBytes(of: number) == pack.ownBytes && simulated.sharedBytes(of: number) == pack.sharedBytes)
        }
        // The same candidates and need, planned over each account: the same plan and figures.
        let current = Set(manifests[2].packs.map(\.id))
        let candidates = runtime.packs.enumerated().map { number, pack in
            PurgeCandidate(id: number, bytes: pack.ownBytes, lastUse: Double(number), isSuperseded: !current.contains(pack.id))
        }
        for need in [Int64(1), Int64(2 * mebibyte), Int64(5 * mebibyte), Int64(30 * mebibyte)] {
            let planner = PurgePlanner()
            let byRuntime = planner.plan(candidates, bytesNeeded: need, now: 10, account: runtime.files)
            let bySimulator = planner.plan(candidates, bytesNeeded: need, now: 10, account: simulated)
            #expect(byRuntime == bySimulator, "need \(need)")
        }
        // And what the runtime's purge frees is what the simulator's plan said.
        let manager = try ResourceManager(configuration: configuration)
        _ = try await manager.loadCatalog(online: true)
        let superseded = candidates.filter(\.isSuperseded)
        let expected = PurgePlanner().plan(superseded, bytesNeeded: 1, now: 10, account: simulated)
        let purged = try await manager.purge(bytes: 1)
        // One changed file of 1 MiB and the pack's two folders (its own and `world/`), in 4 KiB blocks.
        #expect(purged.bytesFreed == expected.bytesFreed && purged.bytesFreed == Int64(mebibyte) + 2 * 4096, "\(purged)")
    }
}
