import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Two origins serving one catalog, each on its own loopback server: a primary that dies in the
/// middle of a pack, serves damaged bytes, lacks a pack, or goes down with the mirror. Every test
/// checks what the client ends with (files, store, errors) and the bytes each origin sent.
struct OriginFailoverTests {
    static let rules = """
        { "catalogID": "origins", "tags": { "big": { "include": ["big"] } } }
        """

    /// A catalog whose tag `big` is one pack of four 1 MiB incompressible files.
    static func fixture() async throws -> ManagerFixture {
        let game = try CatalogFixture(rules: rules)
        for (index, name) in ["a", "b", "c", "d"].enumerated() {
            try game.write("big/\(name).bin", deterministicBytes(count: 1 << 20, seed: UInt64(90 + index)))
        }
        try await game.build()
        return ManagerFixture(game: game, stores: try TemporaryDirectory(prefix: "odr-origins-store"))
    }

    static func bigPack(_ fixture: ManagerFixture) throws -> PackRecord {
        try #require(try fixture.game.manifest(1).packs.first { $0.tags == ["big"] })
    }

    /// A manager with `mirror` as the second origin and quick retries.
    static func manager(_ fixture: ManagerFixture, primary: CatalogServer, mirror: CatalogServer,
                        store: String = "store") throws -> ResourceManager {
        try fixture.manager(url: primary.baseURL, store: store) { configuration in
            configuration.mirrors = [mirror.baseURL]
            configuration.transport = try? TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
        }
    }

    /// A copy of the catalog folder `catalog` (an origin of its own), without the file `missing`:
    /// an origin that has not received it yet.
    static func copy(of catalog: URL, without missing: String? = nil) throws -> TemporaryDirectory {
        let copy = try TemporaryDirectory(prefix: "odr-origin-copy")
        try FileManager.default.removeItem(at: copy.url)
        try FileManager.default.copyItem(at: catalog, to: copy.url)
        if let missing { try FileManager.default.removeItem(at: copy.appending(missing)) }
        return copy
    }

    /// Body bytes `server` sent for `path`.
    static func sent(_ server: CatalogServer, _ path: String) -> Int {
        server.requests().filter { $0.path == path }.reduce(0) { $0 + $1.bytesSent }
    }

    /// Collects the manager's origin switches as they are posted.
    final class SwitchRecorder: Sendable {
        let switches = Locked<[ResourceManagerEvent]>([])
        let task: Task<Void, Never>

        init(_ manager: ResourceManager) {
            let events = manager.events()
            let switches = self.switches
            task = Task {
                for await event in events {
                    if case .originSwitched = event { switches.withLock { $0.append(event) } }
                }
            }
        }

        var reasons: [ResourceError.Code] {
            switches.withLock { $0 }.compactMap { if case .originSwitched(_, _, let reason) = $0 { reason } else { nil } }
        }
    }

    /// Downloads `url` with `mirror` as its alternate on a fresh engine, expects `body` from the
    /// mirror, and returns the reasons of the switches.
    static func expectServedByMirror(from url: URL, mirror: URL, body: Data) async throws -> [ResourceError.Code] {
        let engine = try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
        let switches = Locked<[TransferOriginSwitch]>([])
        var request = TransferRequest(url: url, expectedSHA256: ContentHash.sha256Hex(of: body))
        request.alternateURLs = [mirror]
        request.originSwitched = { change in switches.withLock { $0.append(change) } }
        let sink = RecordingSink()
        let result = try await engine.download(request, into: sink)
        #expect(sink.bytes == body)
        #expect(result.servedBy == mirror)
        return switches.withLock { $0 }.map(\.reason)
    }

    /// Runs `body` with the fixture, its `big` pack, and two servers of its catalog: primary, mirror.
    static func withTwoOrigins(_ body: (ManagerFixture, PackRecord, CatalogServer, CatalogServer) async throws -> Void) async throws {
        let fixture = try await Self.fixture()
        let pack = try Self.bigPack(fixture)
        try await withTestServer(root: fixture.game.catalog) { primary in
            try await withTestServer(root: fixture.game.catalog) { mirror in
                try await body(fixture, pack, primary, mirror)
            }
        }
    }

    static func expectInstalled(_ manager: ResourceManager, _ fixture: ManagerFixture) async throws {
        let request = ResourceRequest(tags: ["big"], manager: manager)
        try await request.beginAccessingResources()
        for name in ["a", "b", "c", "d"] {
            let url = try #require(request.url(forResource: "big/\(name).bin"))
            #expect(try Data(contentsOf: url) == fixture.game.contents(of: "big/\(name).bin"))
        }
        try request.endAccessingResources()
        #expect(try manager.store.verify().isEmpty)
    }

    @Test func aPrimaryKilledMidPackFinishesFromTheMirrorWhereItStopped() async throws {
        try await Self.withTwoOrigins { fixture, pack, primary, mirror in
            let path = "/" + pack.archivePath
            let stopAt = Int(pack.archiveBytes * 4 / 10)
            let manager = try Self.manager(fixture, primary: primary, mirror: mirror)
            let recorder = SwitchRecorder(manager)
            _ = try await manager.loadCatalog()
            primary.injectFaults(.stall(afterBytes: stopAt), path: path)
            let received = Locked<Int64>(0)
            let fetch = Task { try await manager.fetch(tags: ["big"]) { progress in received.withLock { $0 = progress.completedBytes } } }
            try await waitUntil("40% of the pack from the primary") { received.withLock { $0 } >= Int64(stopAt) }
            // The primary dies: its connection drops and it refuses new ones.
            try await primary.setConditions(NetworkConditions(offline: true))
            _ = try await fetch.value
            try await Self.expectInstalled(manager, fixture)

            await mirror.waitUntilIdle()
            let fromPrimary = Self.sent(primary, path)
            let fromMirror = Self.sent(mirror, path)
            #expect(fromPrimary == stopAt)
            // The mirror sent the rest and nothing the primary had sent: at most one chunk in flight again.
            #expect(fromPrimary + fromMirror <= Int(pack.archiveBytes) + (256 << 10))
            #expect(fromMirror >= Int(pack.archiveBytes) - stopAt)
            let ranges = mirror.requests().filter { $0.path == path }.compactMap(\.range)
            #expect(ranges.count == 1)
            #expect(ranges.first.map { $0.hasPrefix("bytes=\(stopAt)-") } == true, "\(ranges)")
            try await waitUntil("the switch event") { !recorder.reasons.isEmpty }
            #expect(recorder.reasons.first == .networkUnavailable || recorder.reasons.first == .timedOut)
            let logged = try manager.store.events().filter { $0.kind == .origin }
            #expect(logged.contains { $0.packID == pack.id && $0.reason.contains(mirror.baseURL.absoluteString) })
            recorder.task.cancel()
        }
    }

    @Test func aDamagedPackOnThePrimaryIsRefusedAndTheMirrorSendsOnlyWhatWasNotVerified() async throws {
        try await Self.withTwoOrigins { fixture, pack, primary, mirror in
            let path = "/" + pack.archivePath
            let manager = try Self.manager(fixture, primary: primary, mirror: mirror)
            let recorder = SwitchRecorder(manager)
            _ = try await manager.loadCatalog()
            // A bad edge flips a bit in the third file (past the first two and their headers).
            let corruptAt = (2 << 20) + (512 << 10)
            primary.injectFaults(.corrupt(atOffset: corruptAt), count: 100, path: path)
            let report = try await manager.fetch(tags: ["big"])
            try await Self.expectInstalled(manager, fixture)

            await primary.waitUntilIdle()
            await mirror.waitUntilIdle()
            let fromMirror = Self.sent(mirror, path)
            // The primary's refused transfer failed as a whole; the bytes it brought still moved, so
            // they are downloaded bytes too: at least up to the damaged byte, at most what it sent.
            #expect(report.install.downloadedBytes >= Int64(fromMirror + corruptAt), "\(report.install.downloadedBytes) downloaded, mirror sent \(fromMirror)")
            #expect(report.install.downloadedBytes <= Int64(fromMirror + Self.sent(primary, path)))
            // The first two files were verified and kept: the mirror sent about the last two.
            #expect(fromMirror > 0)
            #expect(fromMirror <= Int(pack.archiveBytes) / 2 + (64 << 10), "mirror sent \(fromMirror)")
            #expect(primary.requests().filter { $0.path == path }.count == 1)
            try await waitUntil("the integrity switch") { recorder.reasons.contains(.integrity) }
            recorder.task.cancel()
        }
    }

    @Test func aStaleOriginWithoutThePackIsPassedOverAndLogged() async throws {
        let fixture = try await Self.fixture()
        let pack = try Self.bigPack(fixture)
        let path = "/" + pack.archivePath
        // The primary's copy lacks the new pack (it has not received it yet).
        let stale = try Self.copy(of: fixture.game.catalog, without: pack.archivePath)
        try await withTestServer(root: stale.url) { primary in
            try await withTestServer(root: fixture.game.catalog) { mirror in
                let manager = try Self.manager(fixture, primary: primary, mirror: mirror)
                let recorder = SwitchRecorder(manager)
                _ = try await manager.loadCatalog()
                _ = try await manager.fetch(tags: ["big"])
                try await Self.expectInstalled(manager, fixture)

                await primary.waitUntilIdle()
                await mirror.waitUntilIdle()
                #expect(primary.requests().filter { $0.path == path }.map(\.status) == [404])
                #expect(Self.sent(mirror, path) == Int(pack.archiveBytes))
                try await waitUntil("the stale-mirror switch") { recorder.reasons.contains(.resourceUnavailable) }
                let logged = try manager.store.events().filter { $0.kind == .origin }
                #expect(logged.contains { $0.packID == pack.id && $0.reason.hasSuffix(ResourceError.Code.resourceUnavailable.rawValue) })
                recorder.task.cancel()
            }
        }
    }

    @Test func bothOriginsDownFailsAsUnreachableKeepsTheBytesAndTheNextRunContinues() async throws {
        try await Self.withTwoOrigins { fixture, pack, primary, mirror in
            let path = "/" + pack.archivePath
            let stopAt = Int(pack.archiveBytes * 4 / 10)
            do {
                let manager = try Self.manager(fixture, primary: primary, mirror: mirror)
                _ = try await manager.loadCatalog()
                try await mirror.setConditions(NetworkConditions(offline: true))
                primary.injectFaults(.stall(afterBytes: stopAt), path: path)
                let received = Locked<Int64>(0)
                let fetch = Task { try await manager.fetch(tags: ["big"]) { progress in received.withLock { $0 = progress.completedBytes } } }
                try await waitUntil("40% of the pack") { received.withLock { $0 } >= Int64(stopAt) }
                try await primary.setConditions(NetworkConditions(offline: true))
                let error = await #expect(throws: ResourceError.self) { _ = try await fetch.value }
                #expect(error?.code == .networkUnavailable)
                #expect(manager.state.withLock { !$0.installedIDs.contains(pack.id) })
            }
            // Both come back; the next run (a new manager on the same store) fetches only the rest.
            try await primary.setConditions(.perfect)
            try await mirror.setConditions(.perfect)
            primary.clearRequests()
            mirror.clearRequests()
            let manager = try Self.manager(fixture, primary: primary, mirror: mirror)
            _ = try await manager.loadCatalog()
            _ = try await manager.fetch(tags: ["big"])
            try await Self.expectInstalled(manager, fixture)
            await primary.waitUntilIdle()
            await mirror.waitUntilIdle()
            let again = Self.sent(primary, path) + Self.sent(mirror, path)
            #expect(again <= Int(pack.archiveBytes) - stopAt + (256 << 10), "the second run moved \(again) bytes")
        }
    }

    @Test func aSignedCatalogIsAcceptedFromAMirrorWithTheSameChecks() async throws {
        let world = try await SignedCatalogTests.World.make()
        let forged = try Self.copy(of: world.root)
        var index = try CatalogIndex.decode(from: Data(contentsOf: forged.appending(CatalogIndex.fileName)))
        index.serial += 1
        try CatalogFixture.unvalidatedJSON(index).write(to: forged.appending(CatalogIndex.fileName))
        try await withTestServer(root: world.root) { primary in
            try await withTestServer(root: world.root) { mirror in
                try await withTestServer(root: forged.url) { forger in
                    try await primary.setConditions(NetworkConditions(offline: true))
                    // The primary is down: the signed catalog comes from the mirror, and packs too.
                    let manager = try world.manager(url: primary.baseURL) { $0.mirrors = [mirror.baseURL] }
                    let snapshot = try await manager.loadCatalog()
                    #expect(snapshot.fallback == nil)
                    _ = try await manager.fetch(tags: ["big"])
                    #expect(!ManagerFixture.packRequests(mirror).isEmpty)
                    // A mirror whose catalog.json lost its signature is refused, not believed.
                    let other = try world.manager(url: primary.baseURL, store: "forged") { $0.mirrors = [forger.baseURL] }
                    let error = await #expect(throws: ResourceError.self) { _ = try await other.loadCatalog() }
                    #expect(error?.code == .untrustedCatalog)
                }
            }
        }
    }

    @Test func anUnsignedCatalogFromAMirrorIsRefusedUnlessAllowed() async throws {
        try await Self.withTwoOrigins { fixture, _, primary, mirror in
            try await primary.setConditions(NetworkConditions(offline: true))
            let refusing = try Self.manager(fixture, primary: primary, mirror: mirror, store: "refusing")
            let error = await #expect(throws: ResourceError.self) { _ = try await refusing.loadCatalog() }
            #expect(error?.code == .catalogUnavailable)
            #expect(error?.message.contains("mirror") == true)
            let allowing = try fixture.manager(url: primary.baseURL, store: "allowing") { configuration in
                configuration.mirrors = [mirror.baseURL]
                configuration.allowsUnsignedCatalogFromMirrors = true
            }
            #expect(try await allowing.loadCatalog().version == 1)
            try await Self.expectInstalled(allowing, fixture)
        }
    }

    @Test func aRedirectToAFileURLIsRefusedAndTheMirrorServes() async throws {
        let body = deterministicBytes(count: 300_000, seed: 95)
        let redirect = Data("HTTP/1.1 302 Found\r\nLocation: file:///etc/hostname\r\nContent-Length: 0\r\n\r\n".utf8)
        let peer = try RawHTTPPeer(response: redirect)
        defer { peer.stop() }
        try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
            let engine = try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
            // Alone, the redirect fails the transfer and the sink receives nothing.
            let alone = RecordingSink()
            let error = await #expect(throws: ResourceError.self) {
                _ = try await engine.download(TransferRequest(url: peer.url(for: "packs/a.zip")), into: alone)
            }
            #expect(error?.code == .unexpectedResponse)
            #expect(alone.bytes.isEmpty)

            // With a mirror, the transfer moves there and gets the real bytes. (On a fresh engine: the
            // peer answers one request per connection, and the first engine keeps its connection.)
            let reasons = try await Self.expectServedByMirror(from: peer.url(for: "packs/a.zip"), mirror: mirror.url(for: "packs/a.zip"), body: body)
            #expect(reasons == [.unexpectedResponse])
        }
    }

    @Test func aCutTransferContinuesOnTheMirrorFromTheHeldBytesWithoutIfRange() async throws {
        let body = deterministicBytes(count: 1 << 20, seed: 96)
        try await withTestServer(files: ["packs/a.zip": body]) { primary, _ in
            try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
                primary.injectFaults(.truncate(afterBytes: 300_000), path: "/packs/a.zip")
                let engine = try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
                var request = TransferRequest(url: primary.url(for: "packs/a.zip"), expectedSize: Int64(body.count),
                                              expectedSHA256: ContentHash.sha256Hex(of: body))
                request.alternateURLs = [mirror.url(for: "packs/a.zip")]
                let sink = RecordingSink()
                let result = try await engine.download(request, into: sink)
                #expect(sink.bytes == body)
                #expect(result.resumedBytes == 300_000)
                #expect(result.servedBy == mirror.url(for: "packs/a.zip"))
                await mirror.waitUntilIdle()
                // The primary's validators mean nothing on the mirror: the hash guards the bytes.
                #expect(mirror.requests().map(\.range) == ["bytes=300000-"])
                #expect(mirror.requests().map(\.ifRange) == [nil])
                #expect(Self.sent(primary, "/packs/a.zip") + Self.sent(mirror, "/packs/a.zip") == body.count)
                // Received: what both origins sent, the primary's bytes where they arrived.
                #expect(result.receivedBytes == Int64(body.count))
                #expect(result.receivedFrom == [primary.url(for: "packs/a.zip"), mirror.url(for: "packs/a.zip")])
            }
        }
    }

    @Test func serverErrorsOnEveryOriginAreRetriedInRoundsThenFail() async throws {
        let body = deterministicBytes(count: 100_000, seed: 97)
        try await withTestServer(files: ["packs/a.zip": body]) { primary, _ in
            try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
                // One 503 on the primary: the mirror serves at once.
                primary.injectFaults(.status(503), path: "/packs/a.zip")
                let reasons = try await Self.expectServedByMirror(from: primary.url(for: "packs/a.zip"), mirror: mirror.url(for: "packs/a.zip"), body: body)
                #expect(reasons == [.serverError])

                // 503 everywhere: each round asks both, the retry budget (3 attempts) ends it.
                primary.clearRequests()
                mirror.clearRequests()
                primary.injectFaults(.status(503), count: 20, path: "/packs/a.zip")
                mirror.injectFaults(.status(503), count: 20, path: "/packs/a.zip")
                let engine = try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
                var request = TransferRequest(url: primary.url(for: "packs/a.zip"))
                request.alternateURLs = [mirror.url(for: "packs/a.zip")]
                let error = await #expect(throws: ResourceError.self) { _ = try await engine.download(request, into: RecordingSink()) }
                #expect(error?.code == .serverError)
                await primary.waitUntilIdle()
                await mirror.waitUntilIdle()
                #expect(primary.requests().count == 2)
                #expect(mirror.requests().count == 2)
            }
        }
    }
}

/// `odr --mirror` and `odr log`, as a script runs them.
struct MirrorCommandTests {
    @Test func odrFetchWithAMirrorInstallsFromItAndTheLogSaysWhy() async throws {
        let fixture = try await OriginFailoverTests.fixture()
        let pack = try OriginFailoverTests.bigPack(fixture)
        let store = fixture.stores.appending("cli").path
        let stale = try OriginFailoverTests.copy(of: fixture.game.catalog, without: pack.archivePath)
        try await withTestServer(root: stale.url) { primary in
            try await withTestServer(root: fixture.game.catalog) { mirror in
                let fetch = try await ODRExecutable.run(["fetch", "--catalog", primary.baseURL.absoluteString, "--mirror", mirror.baseURL.absoluteString,
                                                         "--store", store, "--watermark", "0", "--quiet", "big"])
                #expect(fetch.status == 0, "\(fetch.stderr)")
                let log = try await ODRExecutable.run(["log", "--store", store])
                #expect(log.status == 0)
                let line = log.stdout.split(separator: "\n").first { $0.contains(" origin ") }
                #expect(line?.contains(String(pack.id.prefix(12))) == true, "\(log.stdout)")
                #expect(line?.contains(mirror.baseURL.absoluteString) == true)
                #expect(line?.hasSuffix("resource-unavailable") == true)
                // The install line names the origin that served the pack.
                let install = log.stdout.split(separator: "\n").first { $0.contains(" install ") && $0.contains(String(pack.id.prefix(12))) }
                #expect(install?.hasSuffix("downloaded from \(mirror.baseURL.absoluteString)") == true, "\(log.stdout)")
            }
        }
    }

    @Test func aFailoverMidPackCountsTheBytesOfBothOriginsAsDownloadedAndTheContinuationAsResumed() async throws {
        try await OriginFailoverTests.withTwoOrigins { fixture, pack, primary, mirror in
            let path = "/" + pack.archivePath
            let cutAt = Int(pack.archiveBytes * 4 / 10)
            // The primary's connection closes at 40% of the pack; the mirror continues from there.
            primary.injectFaults(.truncate(afterBytes: cutAt), path: path)
            let store = fixture.stores.appending("cut").path
            let fetch = try await ODRExecutable.run(["fetch", "--catalog", primary.baseURL.absoluteString, "--mirror", mirror.baseURL.absoluteString,
                                                     "--store", store, "--watermark", "0", "--json", "big"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            await primary.waitUntilIdle()
            await mirror.waitUntilIdle()
            let fromPrimary = OriginFailoverTests.sent(primary, path)
            let fromMirror = OriginFailoverTests.sent(mirror, path)
            #expect(fromPrimary == cutAt)
            #expect(fromMirror > 0)
            let json = try #require(try JSONSerialization.jsonObject(with: Data(fetch.stdout.utf8)) as? [String: Any])
            // Downloaded: what both servers sent for the pack, nothing less.
            #expect((json["downloadedBytes"] as? Int) == fromPrimary + fromMirror, "\(fetch.stdout)")
            // The mirror's range continued the primary's bytes: they were not fetched again.
            let resumed = try #require(json["resumedBytes"] as? Int)
            #expect(resumed > 0 && resumed <= cutAt, "\(fetch.stdout)")
            let packs = try #require(json["packs"] as? [[String: Any]])
            #expect((packs.first?["downloadedBytes"] as? Int) == fromPrimary + fromMirror)
            // The install line says the same and names both origins, the one that died first.
            let log = try await ODRExecutable.run(["log", "--store", store])
            let install = try #require(log.stdout.split(separator: "\n").first { $0.contains(" install ") && $0.contains(String(pack.id.prefix(12))) })
            #expect(install.contains("\(fromPrimary + fromMirror) bytes received"), "\(install)")
            #expect(install.contains("\(resumed) resumed"), "\(install)")
            #expect(install.hasSuffix("downloaded from \(primary.baseURL.absoluteString), \(mirror.baseURL.absoluteString)"), "\(install)")
        }
    }

    @Test func aMirrorThatIsNotAnHTTPURLIsRefusedWhenTheManagerOpens() throws {
        let stores = try TemporaryDirectory(prefix: "odr-mirror-scheme")
        var configuration = ResourceManager.Configuration(primary: URL(string: "https://cdn.example.com/game/")!,
                                                          mirrors: [URL(string: "ftp://mirror.example.com/game/")!],
                                                          storeDirectory: stores.appending("store"))
        configuration.networkProbe = FixedNetwork(.unmetered)
        let error = #expect(throws: ResourceError.self) { _ = try ResourceManager(configuration: configuration) }
        #expect(error?.code == .invalidArgument)
        #expect(error?.message.contains("ftp://mirror.example.com/game/") == true)
        #expect(configuration.origins.map(\.absoluteString) == ["https://cdn.example.com/game/", "ftp://mirror.example.com/game/"])
    }

    @Test func badMirrorArgumentsAreRefusedWithAMessage() async throws {
        let store = try TemporaryDirectory(prefix: "odr-mirror-args")
        for (arguments, message) in [(["--mirror", "ftp://mirror.example.com/game/"], "--mirror"),
                                     (["--allow-unsigned-mirrors"], "needs at least one --mirror")] {
            let outcome = try await ODRExecutable.run(["fetch", "--catalog", "http://127.0.0.1:1/", "--store", store.url.path] + arguments + ["big"])
            #expect(outcome.status != 0)
            #expect(outcome.stderr.contains(message), "\(outcome.stderr)")
        }
    }
}
