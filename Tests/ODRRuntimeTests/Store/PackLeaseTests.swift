import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// Leases: a pack a request holds in one process is never purged by another.
struct PackLeaseTests {
    static func fixture() async throws -> ManagerFixture {
        try await ManagerFixture.onePackPerTag(["held", "free"], bytes: 50_000, rules: """
            { "tags": { "held": { "include": ["held"] }, "free": { "include": ["free"] } } }
            """)
    }

    @Test(.enabled(if: ODRExecutable.url != nil))
    func aPackAnotherProcessHoldsIsSkippedByPurgesUntilThatProcessDies() async throws {
        let fixture = try await Self.fixture()
        let manager = try fixture.manager(url: fixture.game.catalog)
        try await manager.loadCatalog()
        _ = try await manager.fetch(tags: ["held", "free"])
        let manifest = try fixture.game.manifest(1)
        let held = try #require(manifest.packs.first { $0.tags == ["held"] }).id
        let free = try #require(manifest.packs.first { $0.tags == ["free"] }).id
        #expect(!manager.store.isPackInUse(id: held))

        // Another process (the odr executable) begins a request for "held" and keeps it.
        let store = fixture.stores.appending("store").path
        let child = try RunningProcess(try #require(ODRExecutable.url),
                                       ["hold", "--catalog", fixture.game.catalog.path, "--store", store, "held"])
        try await child.waitForOutput(containing: "holding held")
        #expect(manager.store.isPackInUse(id: held))
        #expect(!manager.store.isPackInUse(id: free))

        // odr status, a third process, sees it in use.
        let status = try await ODRExecutable.run(["status", "--catalog", fixture.game.catalog.path, "--store", store, "--json"])
        struct Report: Decodable {
            struct Tag: Decodable { var name: String; var state: String }
            struct Pack: Decodable { var id: String; var state: String }
            var tags: [Tag]; var packs: [Pack]
        }
        let report = try JSONDecoder().decode(Report.self, from: Data(status.stdout.utf8))
        #expect(Dictionary(uniqueKeysWithValues: report.tags.map { ($0.name, $0.state) }) == ["held": "in use", "free": "downloaded"])
        #expect(Dictionary(uniqueKeysWithValues: report.packs.map { ($0.id, $0.state) }) == [held: "in use", free: "downloaded"])
        #expect(manager.gauge().first { $0.name == "held" }?.state == .inUse)

        // A purge here plans and deletes only the pack nobody holds.
        #expect(try manager.purgePlan(bytes: 1 << 40).deletions.map(\.packID) == [free])
        let purged = try await manager.purge(bytes: 1 << 40)
        #expect(purged.deletions.map(\.packID) == [free])
        #expect(FileManager.default.fileExists(atPath: manager.store.packURL(id: held).path))
        #expect(try await manager.store.removePack(id: held, reason: .leastRecentlyUsed) == false, "the store itself refuses")

        // The holder is killed, with no chance to clean up: its lease goes with it.
        try await child.kill()
        try await waitUntil("the lease to go") { !manager.store.isPackInUse(id: held) }
        #expect(try await manager.purge(bytes: 1 << 40).deletions.map(\.packID) == [held])
        #expect(!FileManager.default.fileExists(atPath: manager.store.packURL(id: held).path))
    }

    /// Deleting the lease file of a pack another process holds (`rm locks/*.lease`) does not let a
    /// purge remove it: the purge finds the file missing and counts the pack in use, the holder
    /// locks the path anew, and later purges find it held (docs/STORE.md, "Tampering").
    @Test(.enabled(if: ODRExecutable.url != nil))
    func aDeletedLeaseFileDoesNotLetAPurgeRemoveAHeldPack() async throws {
        let fixture = try await Self.fixture()
        let manager = try fixture.manager(url: fixture.game.catalog)
        try await manager.loadCatalog()
        _ = try await manager.fetch(tags: ["held", "free"])
        let held = try #require(try fixture.game.manifest(1).packs.first { $0.tags == ["held"] }).id
        let store = fixture.stores.appending("store").path
        let child = try RunningProcess(try #require(ODRExecutable.url),
                                       ["hold", "--catalog", fixture.game.catalog.path, "--store", store, "held"])
        try await child.waitForOutput(containing: "holding held")
        let lease = manager.store.leases.path(for: held)
        #expect(FileLock.isHeld(lease))

        // Deleted, and a purge comes at once, before the holder can notice.
        try FileManager.default.removeItem(atPath: lease)
        #expect(try await manager.store.removePack(id: held, reason: .leastRecentlyUsed) == false)
        #expect(manager.store.isPackInUse(id: held))
        // The holder locks the re-created file; once the purge's grace is over, it is held as before.
        try await waitUntil("the holder to lock the lease file again") { FileLock.isHeld(lease) }
        try await waitUntil("the re-created file to be trusted") { !manager.store.leases.wasRecreatedRecently(held) }
        #expect(try await manager.purge(bytes: 1 << 40).deletions.map(\.packID).contains(held) == false)

        // Deleted again, and this time the holder notices first: it creates and locks the path.
        try FileManager.default.removeItem(atPath: lease)
        try await waitUntil("the holder to create and lock the lease file") { FileLock.isHeld(lease) }
        #expect(try await manager.store.removePack(id: held, reason: .leastRecentlyUsed) == false)
        #expect(FileManager.default.fileExists(atPath: manager.store.packURL(id: held).path))
        #expect(try manager.store.verify().isEmpty)

        try await child.kill()
        try await waitUntil("the lease to go") { !manager.store.isPackInUse(id: held) }
        #expect(try await manager.store.removePack(id: held, reason: .leastRecentlyUsed))
    }

    @Test func aRequestForAPackAnotherManagerPurgedInstallsItAgain() async throws {
        let fixture = try await Self.fixture()
        let game = try fixture.manager(url: fixture.game.catalog)
        try await game.loadCatalog()
        _ = try await game.fetch(tags: ["held"])
        // A second manager on the same store (a launcher, say) purges the pack the game thinks it has.
        let launcher = try fixture.manager(url: fixture.game.catalog)
        try await launcher.loadCatalog()
        #expect(try await launcher.purge(bytes: 1 << 40).deletions.count == 1)

        let quick = ResourceRequest(tags: ["held"], manager: game)
        #expect(await quick.conditionallyBeginAccessingResources() == false, "not local any more, so not begun")
        let request = ResourceRequest(tags: ["held"], manager: game)
        try await request.beginAccessingResources()
        let url = try #require(request.url(forResource: "held/data.bin"))
        #expect(try Data(contentsOf: url) == fixture.game.contents(of: "held/data.bin"))
        // Held now: the launcher cannot take it.
        #expect(try await launcher.purge(bytes: 1 << 40).deletions.isEmpty)
        try request.endAccessingResources()
        // A child another test spawns keeps a copy of a lease's descriptor until it execs.
        let id = try #require(try game.store.installedPackIDs().first)
        try await waitUntil("the lease to go") { !launcher.store.isPackInUse(id: id) }
        #expect(try await launcher.purge(bytes: 1 << 40).deletions.count == 1)
    }

    /// After its last request ends, a lease lingers briefly: other processes still see the pack in
    /// use (a game that ends and begins a level's tags each frame takes no lock each time), while
    /// this process's own purges and questions see only real holders, and the linger ends by itself.
    @Test func aReleasedLeaseLingersForOtherProcessesButNotForThisOne() async throws {
        let fixture = try await Self.fixture()
        let manager = try fixture.manager(url: fixture.game.catalog)
        try await manager.loadCatalog()
        _ = try await manager.fetch(tags: ["held", "free"])
        let held = try #require(try fixture.game.manifest(1).packs.first { $0.tags == ["held"] }).id
        let leasePath = manager.store.leases.path(for: held)

        let request = ResourceRequest(tags: ["held"], manager: manager)
        #expect(await request.conditionallyBeginAccessingResources())
        try request.endAccessingResources()
        // Another descriptor (as another process's purge would) cannot take the lease yet...
        #expect(FileLock.isHeld(leasePath), "the lease lingers after the request ends")
        // ...and it goes by itself, with nothing else happening here.
        try await waitUntil("the lingering lease to go") { !FileLock.isHeld(leasePath) }

        // Begun and ended again: lingering again, but this process's purge takes it at once.
        let again = ResourceRequest(tags: ["held"], manager: manager)
        #expect(await again.conditionallyBeginAccessingResources())
        try again.endAccessingResources()
        #expect(FileLock.isHeld(leasePath))
        #expect(try await manager.purge(bytes: 1 << 40).deletions.map(\.packID).contains(held))
        #expect(!FileManager.default.fileExists(atPath: manager.store.packURL(id: held).path))
    }

    /// Two stores opened on one folder in one process share their leases, so a request through
    /// one never blocks the other's purge once it has ended.
    @Test func storesOnOneFolderShareTheirLeases() async throws {
        let fixture = try await Self.fixture()
        let first = try fixture.manager(url: fixture.game.catalog)
        try await first.loadCatalog()
        _ = try await first.fetch(tags: ["held"])
        let request = ResourceRequest(tags: ["held"], manager: first)
        #expect(await request.conditionallyBeginAccessingResources())
        let second = try fixture.manager(url: fixture.game.catalog)
        try await second.loadCatalog()
        let held = try #require(try fixture.game.manifest(1).packs.first { $0.tags == ["held"] }).id
        #expect(second.store.leases === first.store.leases)
        #expect(second.store.leases.holds(held))
        #expect(try await second.purge(bytes: 1 << 40).deletions.isEmpty, "held through the first manager")
        try request.endAccessingResources()
        #expect(try await second.purge(bytes: 1 << 40).deletions.map(\.packID) == [held])
    }
}
