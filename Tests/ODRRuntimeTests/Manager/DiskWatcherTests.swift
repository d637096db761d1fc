import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A clock whose sleeps end only when the test advances it, so the disk watcher checks exactly when
/// the test says.
final class SteppingClock: ManagerClock {
    private struct State {
        var now: Double = 1_000_000
        var sleepers: [CheckedContinuation<Void, any Error>] = []
    }
    private let state = Locked(State())

    func now() -> Double { state.withLock { $0.now } }

    func sleep(for duration: Duration) async throws {
        try await withCheckedThrowingContinuation { continuation in state.withLock { $0.sleepers.append(continuation) } }
    }

    /// How many sleeps wait for the clock to move.
    var sleeping: Int { state.withLock { $0.sleepers.count } }

    /// Moves the clock on and ends every sleep.
    func advance(_ seconds: Double = 60) {
        let sleepers = state.withLock { state in
            state.now += seconds
            defer { state.sleepers.removeAll() }
            return state.sleepers
        }
        for sleeper in sleepers { sleeper.resume() }
    }
}

/// A disk of `capacity` bytes holding only the store's installed pack files: free space is the
/// capacity less what `packs/` holds, so purging a pack really frees room.
final class SimulatedDisk: DiskSpaceProbe {
    private let capacityBytes: Locked<Int64>

    init(capacity: Int64) { capacityBytes = Locked(capacity) }

    var capacity: Int64 {
        get { capacityBytes.withLock { $0 } }
        set { capacityBytes.withLock { $0 = newValue } }
    }

    func freeBytes(at directory: URL) -> Int64? {
        capacity - Self.bytes(under: directory.appending(path: "packs"))
    }

    static func bytes(under folder: URL) -> Int64 {
        let files = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.fileSizeKey])
        var total: Int64 = 0
        while let url = files?.nextObject() as? URL {
            total += Int64((try? url.resourceValues(forKeys: [.fileSizeKey]).fileSize) ?? 0)
        }
        return total
    }
}

/// The events a manager posts, collected as they happen.
final class ManagerEventLog: Sendable {
    private let events = Locked<[ResourceManagerEvent]>([])
    private let token: UInt64
    private let manager: ResourceManager

    init(_ manager: ResourceManager) {
        self.manager = manager
        let events = events
        token = manager.hub.observe { event in events.withLock { $0.append(event) } }
    }

    deinit { manager.hub.removeObserver(token) }

    var all: [ResourceManagerEvent] { events.withLock { $0 } }
    var purged: [String] { all.compactMap { if case let .packPurged(id, _, _, _) = $0 { id } else { nil } } }
    var lowSpace: [Int64] { all.compactMap { if case let .lowDiskSpace(free) = $0 { free } else { nil } } }
}

struct DiskWatcherTests {
    static let tags = ["a", "b", "c", "d"]
    static let packBytes = 100_000

    static func fixture() async throws -> ManagerFixture {
        try await ManagerFixture.onePackPerTag(tags, bytes: packBytes, rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] }, "d": { "include": ["d"] } } }
            """)
    }

    static func packID(ofTag tag: String, _ fixture: ManagerFixture) throws -> String {
        try #require(try fixture.game.manifest(1).packs.first { $0.tags == [tag] }).id
    }

    /// Installs each tag in order with a request that ends at once, advancing the clock between
    /// them so their last uses differ.
    static func use(_ tags: [String], _ manager: ResourceManager, clock: SteppingClock) async throws {
        for tag in tags {
            let request = ResourceRequest(tags: [tag], manager: manager)
            try await request.beginAccessingResources()
            try request.endAccessingResources()
            manager.lastUse.flush()
            clock.advance(1)
        }
        // A child another test spawns keeps a copy of a lease's descriptor until it execs.
        let installed = try manager.store.installedPackIDs()
        try await waitUntil("the leases to go") { !installed.contains(where: manager.store.isPackInUse(id:)) }
    }

    /// A manager over the fixture's catalog on a simulated disk, with its catalog loaded and
    /// `tags` installed and used in order (see ``use(_:_:clock:)``).
    static func manager(_ fixture: ManagerFixture, clock: SteppingClock, disk: SimulatedDisk, watermark: Int64,
                        interval: Duration?, using tags: [String]) async throws -> ResourceManager {
        let manager = try fixture.manager(url: fixture.game.catalog) {
            $0.clock = clock
            $0.diskSpace = disk
            $0.freeSpaceWatermark = watermark
            $0.diskCheckInterval = interval
        }
        try await manager.loadCatalog()
        try await use(tags, manager, clock: clock)
        return manager
    }

    @Test func whileARequestIsActiveTheWatcherPurgesUnusedPacksWhenTheDiskRunsLow() async throws {
        let fixture = try await Self.fixture()
        let clock = SteppingClock(), disk = SimulatedDisk(capacity: 1 << 40)
        let manager = try await Self.manager(fixture, clock: clock, disk: disk, watermark: 300_000, interval: .seconds(10), using: ["a", "b"])
        let playing = ResourceRequest(tags: ["c"], manager: manager)
        try await playing.beginAccessingResources()
        let log = ManagerEventLog(manager)
        let (a, b, c) = (try Self.packID(ofTag: "a", fixture), try Self.packID(ofTag: "b", fixture), try Self.packID(ofTag: "c", fixture))

        // Something else fills the disk: free space drops 50 KB under the watermark. Nothing is
        // installing, so only the watcher can notice.
        disk.capacity = SimulatedDisk.bytes(under: manager.store.packsURL) + 250_000
        try await waitUntil("the watcher to sleep") { clock.sleeping > 0 }
        clock.advance()
        try await waitUntil("a purge") { !log.purged.isEmpty }
        try await waitUntil("the watcher to sleep again") { clock.sleeping > 0 }
        #expect(log.purged == [a], "the least recently used pack, and only as much as needed")
        #expect(log.lowSpace.isEmpty, "purging was enough")
        #expect(try manager.store.pack(id: b)?.isInstalled == true)
        let logged = try #require(try manager.store.events().last)
        #expect(logged.kind == .purge && logged.packID == a && !logged.reason.isEmpty, "the store logs the purge with its reason")

        // Now even purging every pack not in use cannot reach the watermark: b goes, c (in use)
        // stays, and the disk is reported low.
        disk.capacity = SimulatedDisk.bytes(under: manager.store.packsURL) + 10_000
        clock.advance()
        try await waitUntil("a low-space event") { !log.lowSpace.isEmpty }
        #expect(log.purged == [a, b])
        #expect(FileManager.default.fileExists(atPath: manager.store.packURL(id: c).path))
        #expect(playing.url(forResource: "c/data.bin") != nil)

        // Nothing active: the watcher stops by itself at its next tick.
        try playing.endAccessingResources()
        try await waitUntil("the watcher to sleep") { clock.sleeping > 0 }
        clock.advance()
        try await waitUntil("the watcher to stop") { !manager.isWatchingDisk }
        #expect(log.purged == [a, b], "c was not purged: the watcher does not run without requests")
    }

    @Test func freeSpaceIsCheckedAfterEveryInstall() async throws {
        let fixture = try await Self.fixture()
        let clock = SteppingClock(), disk = SimulatedDisk(capacity: 1 << 40)
        let manager = try await Self.manager(fixture, clock: clock, disk: disk, watermark: 300_000, interval: nil, using: ["a"])
        let a = try Self.packID(ofTag: "a", fixture)
        let log = ManagerEventLog(manager)
        // While b installs, the disk fills up behind the manager's back.
        let shrink = manager.hub.observe { event in
            if case .packInstalled = event { disk.capacity = SimulatedDisk.bytes(under: manager.store.packsURL) + 250_000 }
        }
        defer { manager.hub.removeObserver(shrink) }
        let request = ResourceRequest(tags: ["b"], manager: manager)
        try await request.beginAccessingResources()
        #expect(log.purged == [a], "checked right after the install, with the timer off")
        #expect(log.lowSpace.isEmpty)
        #expect(request.url(forResource: "b/data.bin") != nil)
    }

    @Test func aCacheBudgetShortfallHasItsOwnCodeAndPostsNoLowSpaceEvent() async throws {
        let fixture = try await Self.fixture()
        let manager = try fixture.manager(url: fixture.game.catalog) {
            $0.diskSpace = SimulatedDisk(capacity: 1 << 40)
            $0.cacheBudget = 150_000
        }
        try await manager.loadCatalog()
        let log = ManagerEventLog(manager)
        let first = ResourceRequest(tags: ["a"], manager: manager)
        try await first.beginAccessingResources()
        let second = ResourceRequest(tags: ["b"], manager: manager)
        let error = await #expect(throws: ResourceError.self) { try await second.beginAccessingResources() }
        #expect(error?.code == .cacheBudgetExceeded)
        #expect(error?.message.contains("raise the cache budget") == true)
        #expect(log.lowSpace.isEmpty, "the disk has room: no low-space event")
        #expect(second.state == .initial)
        #expect(try manager.store.usage().installedBytes <= 150_000)
    }

    /// A budget check walks `staging/` before it takes the manager's lock; a pack of this manager
    /// installed in between has its bytes in `used` then, and its staging, seen by the walk, must
    /// not count again. Here the walk's view is left on disk (the pack's lock held, so no purge can
    /// reclaim it, as none can reclaim bytes that already moved): b fits the budget beside a.
    @Test func stagingOfAPackInstalledSinceTheWalkIsNotCountedTwice() async throws {
        let fixture = try await Self.fixture()
        let manager = try fixture.manager(url: fixture.game.catalog) {
            $0.diskSpace = SimulatedDisk(capacity: 1 << 40)
            $0.cacheBudget = 250_000
        }
        try await manager.loadCatalog()
        let first = ResourceRequest(tags: ["a"], manager: manager)
        try await first.beginAccessingResources()
        let a = try Self.packID(ofTag: "a", fixture)
        let staging = manager.store.stagingURL.appending(path: "\(a).d", directoryHint: .isDirectory)
        try FileManager.default.createDirectory(at: staging, withIntermediateDirectories: true)
        try deterministicBytes(count: 60_000, seed: 9).write(to: staging.appending(path: "part"))
        let lock = try #require(try FileLock.tryLock(manager.store.lockPath(for: a)))
        defer { lock.unlock() }
        // a (100,000 bytes) and b (100,000) fit 250,000; with a's staging counted again they did not.
        let report = try await manager.fetch(tags: ["b"])
        #expect(report.install.installed == [try Self.packID(ofTag: "b", fixture)])
        #expect(report.purged.isEmpty)
        try first.endAccessingResources()
    }

    @Test func aWatermarkLargerThanTheDiskPurgesWhatCanGoButFailsOnlyWhenTheDownloadDoesNotFit() async throws {
        let fixture = try await Self.fixture()
        let clock = SteppingClock(), disk = SimulatedDisk(capacity: 1 << 40)
        let manager = try await Self.manager(fixture, clock: clock, disk: disk, watermark: 0, interval: nil, using: ["a", "b"])
        let (a, b) = (try Self.packID(ofTag: "a", fixture), try Self.packID(ofTag: "b", fixture))
        disk.capacity = 1 << 20
        var configuration = manager.configuration
        configuration.freeSpaceWatermark = 1 << 40
        let greedy = try ResourceManager(configuration: configuration)
        try await greedy.loadCatalog()
        let log = ManagerEventLog(greedy)
        let report = try await greedy.fetch(tags: ["c"])
        #expect(Set(report.purged.map(\.packID)) == [a, b], "every pack not in use")
        #expect(report.install.installed == [try Self.packID(ofTag: "c", fixture)])
        #expect(!log.lowSpace.isEmpty)

        // A disk too small for d itself, even with c purged: now the fetch fails, with out-of-space.
        disk.capacity = 50_000
        let error = await #expect(throws: ResourceError.self) { try await greedy.fetch(tags: ["d"]) }
        #expect(error?.code == .outOfSpace)
    }
}
