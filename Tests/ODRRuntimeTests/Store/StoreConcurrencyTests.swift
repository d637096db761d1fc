#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// What any process may do to a store at any time: open it (even a new one), fetch, purge, verify
/// and read its status concurrently, and what a full disk does (docs/STORE.md, "Two processes on
/// one store" and "A full disk").
struct StoreConcurrencyTests {
    /// Two processes opening a store that does not exist yet both succeed: the database is created
    /// and migrated once, under the store lock.
    @Test(.enabled(if: ODRExecutable.url != nil))
    func processesCreatingOneNewStoreAtOnceAllSucceed() async throws {
        let odr = try #require(ODRExecutable.url).path
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let root = try TemporaryDirectory(prefix: "odr-new-stores")
        var failures: [String] = []
        for pair in 0..<40 {
            // `status` creates the store, migrates it, and stores the catalog.
            let arguments = ["status", "--catalog", fixture.catalog.path, "--store", root.appending("store-\(pair)").path]
            async let first = runCommandOffPool(odr, arguments)
            async let second = runCommandOffPool(odr, arguments)
            for result in try await [first, second] where result.status != 0 { failures.append(result.stderr) }
        }
        #expect(failures.count == 0, "\(failures.count) of 80 failed, e.g. \(failures.first ?? "")")
    }

    /// `verify` while another store value purges and installs the same packs again and again
    /// reports nothing: a pack purged meanwhile is not "missing", and one between its rename into
    /// `packs/` and its commit is not a folder without a row.
    @Test func verifyDuringPurgesAndInstallsFindsNoProblem() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 200_000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: directory.url)
        let packs = try snapshot.packs(forTags: ["small", "big"])
        let checker = try ResourceStore(directory: directory.url)
        let stop = Locked(false)
        let verified = Locked((runs: 0, problems: [StoreProblem]()))
        let done: Task<Void, any Error> = Task.detached {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                Thread {
                    continuation.resume(with: Result {
                        while !stop.withLock({ $0 }) {
                            let problems = try checker.verify()
                            verified.withLock { $0.runs += 1; $0.problems += problems }
                        }
                    })
                }.start()
            }
        }
        let installer = PackInstaller(store: store, transport: try TransferEngine())
        var purges = 0
        for _ in 0..<40 {
            for pack in packs where try await store.removePack(id: pack.id, reason: .leastRecentlyUsed) { purges += 1 }
            _ = try await installer.install(packs, from: snapshot)
        }
        // At least a few verifications overlapped the loop (each takes about as long as a round).
        try await waitUntil("a few verify runs") { verified.withLock { $0.runs } >= 3 }
        stop.withLock { $0 = true }
        try await done.value
        #expect(purges > 0)
        #expect(verified.withLock { $0.problems }.isEmpty, "\(verified.withLock { $0.problems.prefix(5) })")
        #expect(try store.verify().isEmpty)
    }

    /// Opening a store while another store value purges a pack logs no `repair`: repair lists the
    /// installed rows before it looks at the folders, and a pack purged in between was removed, not
    /// damaged. The purge runs at exactly that moment (after the rows were read). The store is open
    /// elsewhere, so the opener checks every entry, as it does whenever a purger can be running.
    @Test func openingDuringAPurgeLogsNoRepair() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let id = try #require(try snapshot.packs(forTags: ["small"]).first?.id)
        let purged = Locked(false)
        let target = directory.url.standardizedFileURL
        ResourceStore.repairDidReadInstalledRowsHook.withLock {
            $0 = { folder in
                guard folder == target, !purged.withLock({ $0 }) else { return }
                // What a purge in another process does: under the pack lock, the folder leaves
                // packs/ and the row says not installed.
                guard let lock = try? FileLock.lockBlocking(store.lockPath(for: id)) else { return }
                defer { lock.unlock() }
                purged.withLock { $0 = (try? store.removeInstalledPackLocked(id: id, event: .purge, reason: "test")) != nil }
            }
        }
        defer { ResourceStore.repairDidReadInstalledRowsHook.withLock { $0 = nil } }
        let reopened = try ResourceStore(directory: directory.url)
        #expect(purged.withLock { $0 })
        #expect(reopened.repairReport.packsMarkedNotInstalled.isEmpty)
        let events = try reopened.events()
        #expect(events.filter { $0.kind == .repair }.isEmpty, "\(events)")
        #expect(events.filter { $0.kind == .purge }.map(\.packID) == [id])
        #expect(try reopened.verify().isEmpty)
    }

    /// A purge killed between its two steps (`ODR_CRASH_AT=mid-purge`) leaves no damage to log:
    /// the row says not installed and the purge is in the log; the next open deletes the folder
    /// without a `repair` event, and the store verifies.
    @Test(.enabled(if: ODRExecutable.url != nil))
    func aPurgeKilledMidwayLogsNoRepair() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let common = ["--catalog", fixture.catalog.path, "--store", directory.appending("store").path]
        #expect(try await ODRExecutable.run(["fetch", "--quiet"] + common + ["small"]).status == 0)
        let crashed = try await ODRExecutable.run(["purge", "--bytes", "1"] + common, environment: ["ODR_CRASH_AT": "mid-purge"])
        #expect(crashed.killedBySignal)
        let store = try ResourceStore(directory: directory.appending("store"))
        let events = try store.events()
        #expect(events.filter { $0.kind == .repair }.isEmpty, "\(events)")
        let purged = try #require(events.first { $0.kind == .purge }?.packID)
        #expect(events.filter { $0.kind == .purge }.count == 1)
        #expect(try !store.installedPackIDs().contains(purged))
        #expect(store.repairReport.removedPackFolders == [purged])
        #expect(!FileManager.default.fileExists(atPath: store.packURL(id: purged).path))
        #expect(try store.verify().isEmpty)
    }

    /// `odr status` and the store's usage count what `staging/` holds (an interrupted download),
    /// per pack and in all.
    @Test(.enabled(if: ODRExecutable.url != nil))
    func statusCountsStagingBytes() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let installed = try store.installedPackIDs()
        let pending = try #require(snapshot.manifest.packs.map(\.id).first { !installed.contains($0) })
        try FileManager.default.createDirectory(at: directory.appending("staging/\(pending).d"), withIntermediateDirectories: true)
        try Data(count: 2 << 20).write(to: directory.appending("staging/\(pending).d/part.bin"))
        try Data("data 30 part.bin\n".utf8).write(to: directory.appending("staging/\(pending).journal"))
        // A reused installed file linked into staging takes no extra space.
        let reused = try store.url(forResource: "small/notes.txt", in: snapshot)
        try FileManager.default.linkItem(at: reused, to: directory.appending("staging/\(pending).d/notes.txt"))
        // What du sees of the staging items, the reused file aside (it takes no extra space).
        let staged = ["staging/\(pending).d", "staging/\(pending).journal"].map { directory.appending($0).path }
        let expected = try diskUsage(of: [reused.path] + staged) - diskUsage(of: [reused.path])
        #expect(expected >= (2 << 20) + 4096)

        #expect(store.stagedPacks().map(\.packID) == [pending])
        #expect(try store.usage().stagingBytes == expected)

        let common = ["--catalog", fixture.catalog.path, "--store", directory.url.path, "--offline"]
        let json = try await ODRExecutable.run(["status", "--json"] + common)
        #expect(json.status == 0, "\(json.stderr)")
        struct Status: Decodable {
            struct Pack: Decodable { var id: String; var stagingBytes: Int64 }
            struct Store: Decodable { var stagingBytes: Int64 }
            var packs: [Pack]; var store: Store
        }
        let status = try JSONDecoder().decode(Status.self, from: Data(json.stdout.utf8))
        #expect(status.store.stagingBytes == expected)
        #expect(status.packs.first { $0.id == pending }?.stagingBytes == expected)
        let text = try await ODRExecutable.run(["status"] + common)
        #expect(text.stdout.contains("2.0 MiB in staging"), "\(text.stdout)")
    }

    /// A purge reclaims what an interrupted download left in `staging/` (oldest first) before any
    /// installed pack, and never the staging of a download in progress (its pack lock is held).
    @Test func purgeReclaimsStaleStagingButNotADownloadInProgress() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        var configuration = ResourceManager.Configuration(catalogURL: fixture.catalog, storeDirectory: directory.url)
        configuration.freeSpaceWatermark = 0
        let manager = try ResourceManager(configuration: configuration)
        let snapshot = try await manager.loadCatalog()
        let store = manager.store
        let packs = snapshot.manifest.packs.map(\.id)
        try #require(packs.count >= 2)
        let stale = packs[0], busy = packs[1]
        for id in [stale, busy] {
            try FileManager.default.createDirectory(at: directory.appending("staging/\(id).d"), withIntermediateDirectories: true)
            try Data(count: 1 << 20).write(to: directory.appending("staging/\(id).d/part.bin"))
        }
        let lock = try #require(try FileLock.tryLock(store.lockPath(for: busy)))  // a download in progress
        let plan = try manager.purgePlan(bytes: 1000)
        #expect(plan.deletions.map(\.packID) == [stale])
        #expect(plan.deletions.first?.reason == .staleStaging)
        let done = try await manager.purge(bytes: 4 << 20)
        #expect(done.deletions.filter { $0.reason == .staleStaging }.map(\.packID) == [stale])
        #expect(!FileManager.default.fileExists(atPath: directory.appending("staging/\(stale).d").path))
        #expect(FileManager.default.fileExists(atPath: directory.appending("staging/\(busy).d/part.bin").path))
        lock.unlock()
        #expect(try store.verify().isEmpty)
    }
}

/// A full disk: commits fail with `out-of-space`, and reading still works.
@Suite(.enabled(if: SmallDisk.isAvailable, "needs root to mount a small tmpfs"))
struct FullDiskStoreTests {
    /// Fills the file system holding `url` to the last byte; returns the filler file.
    static func fill(_ url: URL) throws -> URL {
        let filler = url.appending(path: "filler")
        let descriptor = open(filler.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        #expect(descriptor >= 0)
        defer { close(descriptor) }
        var chunk = 1 << 20
        let zeros = [UInt8](repeating: 0, count: chunk)
        while chunk > 0 {
            if write(descriptor, zeros, chunk) != chunk { chunk /= 2 }
        }
        fsync(descriptor)
        return filler
    }

    @Test func aCommitOnAFullDiskIsOutOfSpaceAndReadingStillWorks() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let disk = try SmallDisk(bytes: 8 << 20)
        defer { disk.unmount() }
        let directory = disk.url.appending(path: "store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory)
        let filler = try Self.fill(disk.url)

        // A store open before the disk filled up: its commits fail with out-of-space.
        var failure: ResourceError?
        for index in 0..<10_000 {
            do {
                try store.setPreservationPriority(0.5, forTag: String(repeating: "t", count: 2000) + "\(index)", catalogURL: fixture.catalog)
            } catch {
                failure = error
                break
            }
        }
        #expect(failure?.code == .outOfSpace, "\(String(describing: failure))")
        #expect(try store.verify().isEmpty)
        #expect(try store.installedPackIDs() == Set(try snapshot.packs(forTags: ["small"]).map(\.id)))
        // Freeing space is all it takes.
        try FileManager.default.removeItem(at: filler)
        try store.setPreservationPriority(0.5, forTag: "small", catalogURL: fixture.catalog)
    }

    /// A fetch of two packs that runs out of space mid-download deletes the staging of both: the
    /// one that hit the full disk and the one cancelled with it.
    @Test func aFetchOfTwoPacksThatRunsOutOfSpaceLeavesNoStagingForEither() async throws {
        let tags = ["a", "b"]
        let game = try CatalogFixture(rules: #"{ "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] } } }"#)
        for (index, tag) in tags.enumerated() {
            try game.write("\(tag)/data.bin", deterministicBytes(count: 3 << 20, seed: UInt64(index + 1)))
        }
        try await game.build()
        let disk = try SmallDisk(bytes: 4 << 20)
        defer { disk.unmount() }
        // Slow enough that both packs are under way when the disk fills up.
        let conditions = NetworkConditions(bytesPerSecond: 4 << 20)
        try await withTestServer(root: game.catalog, conditions: conditions) { server in
            let directory = disk.url.appending(path: "store")
            var configuration = ResourceManager.Configuration(catalogURL: server.baseURL, storeDirectory: directory)
            configuration.freeSpaceWatermark = 0
            configuration.diskSpace = SimulatedDisk(capacity: 1 << 40)  // the manager sees room; the disk has none
            configuration.networkProbe = FixedNetwork(.unmetered)
            let manager = try ResourceManager(configuration: configuration)
            _ = try await manager.loadCatalog()
            let error = await #expect(throws: ResourceError.self) { _ = try await manager.fetch(tags: tags) }
            #expect(error?.code == .outOfSpace, "\(String(describing: error))")
            let staging = try FileManager.default.contentsOfDirectory(atPath: directory.appending(path: "staging").path)
            #expect(staging.isEmpty, "\(staging)")
            #expect(try manager.store.installedPackIDs().isEmpty)
            #expect(try manager.store.verify().isEmpty)
        }
    }

    /// With no byte free, a store whose processes all closed it opens (read-only when it must),
    /// and `odr log`, `verify`, `status` and `path` work; a write says `out-of-space`.
    @Test(.enabled(if: ODRExecutable.url != nil))
    func readingCommandsWorkOnAFullDisk() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let disk = try SmallDisk(bytes: 8 << 20)
        defer { disk.unmount() }
        let directory = disk.url.appending(path: "store")
        do { _ = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory) }
        _ = try Self.fill(disk.url)

        let store = try ResourceStore(directory: directory)
        #expect(try !store.installedPackIDs().isEmpty)
        #expect(try store.verify().isEmpty)
        let error = #expect(throws: ResourceError.self) {
            for index in 0..<10_000 {
                try store.setPreservationPriority(0.5, forTag: String(repeating: "t", count: 2000) + "\(index)", catalogURL: fixture.catalog)
            }
        }
        #expect(error?.code == .outOfSpace, "\(String(describing: error))")

        let storeArguments = ["--store", directory.path]
        let catalogArguments = ["--catalog", fixture.catalog.path, "--offline"] + storeArguments
        for arguments in [["log"] + storeArguments, ["verify"] + storeArguments, ["status"] + catalogArguments,
                          ["path"] + catalogArguments + ["small/notes.txt"]] {
            let result = try await ODRExecutable.run(arguments)
            #expect(result.status == 0, "\(arguments[0]): \(result.stderr)")
        }
    }
}
