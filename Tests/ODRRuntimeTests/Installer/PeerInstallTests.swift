import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Peers on the local network (issue 43): a second store installs from a first one's `odr share`
/// before the CDN, verifies every byte, and falls back to the CDN for what a peer lacks, gets wrong
/// or stops sending.
@Suite(.serialized)
struct PeerInstallTests {
    /// A game whose tag `level` is `files` incompressible files of `fileBytes` each (stored
    /// entries), plus a small tag `menu`.
    static func game(files: Int = 8, fileBytes: Int = 4 << 20) async throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: """
            {
              "catalogID": "peer-game",
              "limits": { "minimumPackSize": 0 },
              "tags": {
                "level": { "include": ["level"] },
                "menu": { "include": ["menu"] }
              }
            }
            """)
        for index in 0..<files {
            try fixture.write("level/part\(index).bin", deterministicBytes(count: fileBytes, seed: UInt64(100 + index)))
        }
        try fixture.write("menu/menu.json", Data(String(repeating: "{\"button\": 1}\n", count: 100).utf8))
        try await fixture.build()
        return fixture
    }

    struct Installed {
        var store: ResourceStore
        var snapshot: CatalogSnapshot
        var summary: InstallSummary
        var seconds: Double
        /// The peers asked, with the ones dropped and why.
        var peers: PeerSet?
    }

    /// Installs `tags` from `catalogURL` into `directory`, asking `peers` first (through `gate`,
    /// as a manager does, when one is given).
    ///
    /// `hedgeSeconds` is ``PeerSet/hedgeSeconds`` (`nil`: the default, a quarter of the 0.1 s
    /// first-byte deadline); `firstByteSeconds` the peers' first-byte deadline.
    static func install(_ tags: [String], from catalogURL: URL, into directory: URL, peers: [URL] = [],
                        gate: PeerRequestGate? = nil, firstByteSeconds: Double = PeerSet.defaultFirstByteSeconds,
                        hedgeSeconds: Double? = nil, peerSet given: PeerSet? = nil) async throws -> Installed {
        let store = try ResourceStore(directory: directory)
        let engine = try TransferEngine()
        let client = CatalogClient(catalogURL: catalogURL, store: store, transport: engine)
        let snapshot = try await client.describe(Set(tags), in: try await client.refresh())
        var installer = PackInstaller(store: store, transport: engine)
        let peerSet = given ?? (peers.isEmpty ? nil : PeerSet(peers, firstByteSeconds: firstByteSeconds, hedgeSeconds: hedgeSeconds))
        installer.peers = peerSet
        installer.peerRequestGate = gate
        let start = ContinuousClock.now
        let summary = try await installer.install(try snapshot.packs(forTags: tags), from: snapshot)
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        return Installed(store: store, snapshot: snapshot, summary: summary, seconds: seconds, peers: peerSet)
    }

    static func expectFiles(_ fixture: CatalogFixture, _ installed: Installed, files: Int) throws {
        for index in 0..<files {
            let path = "level/part\(index).bin"
            let url = try installed.store.url(forResource: path, in: installed.snapshot)
            #expect(try Data(contentsOf: url) == fixture.contents(of: path), "\(path)")
        }
        #expect(try installed.store.verify().isEmpty)
    }

    /// Body bytes the CDN sent for packs since its requests were last cleared.
    static func packBytesSent(_ server: CatalogServer) async -> Int {
        await server.waitUntilIdle()
        return server.requests().filter { $0.target.hasPrefix("/packs/") }.reduce(0) { $0 + $1.bytesSent }
    }

    static func tagArchiveBytes(_ installed: Installed, _ tags: [String]) throws -> Int64 {
        try installed.snapshot.packs(forTags: tags).reduce(0) { $0 + $1.archiveBytes }
    }

    /// A game of `files` files of `fileBytes` behind a CDN, a first store that installed `holding`
    /// from it and shares it with `limits`, and an empty directory for a second store.
    struct SharedHolder {
        var fixture: CatalogFixture
        var cdn: URL
        var share: ShareServer
        var second: URL
    }

    /// Runs `body` with a ``SharedHolder``; the share is stopped afterwards (stopping is
    /// idempotent, so `body` may stop it first).
    static func withSharedHolder(files: Int, fileBytes: Int, holding: [String], limits: ShareLimits,
                                 _ body: (SharedHolder) async throws -> Void) async throws {
        let fixture = try await game(files: files, fileBytes: fileBytes)
        let first = try TemporaryDirectory(prefix: "odr-peer-a")
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        try await withTestServer(root: fixture.catalog) { cdn in
            let holder = try await install(holding, from: cdn.baseURL, into: first.url)
            let share = try await ShareServer.start(source: StoreShareSource(store: holder.store), port: 0, limits: limits,
                                                    logger: testServerLogger())
            do {
                try await body(SharedHolder(fixture: fixture, cdn: cdn.baseURL, share: share, second: second.url))
            } catch {
                await share.stop()
                throw error
            }
            await share.stop()
        }
    }

    /// Target 1: with one peer that holds a 32 MiB tag, the CDN sends at most 1% of the tag's pack
    /// bytes, and the install is at least as fast as from the CDN over loopback.
    @Test func aPeerThatHoldsTheTagServesNearlyAllOfIt() async throws {
        let fixture = try await Self.game()
        let first = try TemporaryDirectory(prefix: "odr-peer-a")
        let fromCDN = try TemporaryDirectory(prefix: "odr-peer-cdn")
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        try await withTestServer(root: fixture.catalog) { cdn in
            let holder = try await Self.install(["level"], from: cdn.baseURL, into: first.url)
            let share = try await ShareServer.start(source: StoreShareSource(store: holder.store), port: 0, limits: .unlimited,
                                                    logger: testServerLogger())
            defer { Task { await share.stop() } }
            // The CDN alone, for the time to beat (the same machine, warm caches).
            cdn.clearRequests()
            let plain = try await Self.install(["level"], from: cdn.baseURL, into: fromCDN.url)
            let plainBytes = await Self.packBytesSent(cdn)
            cdn.clearRequests()
            // No hedge: a busy machine that pauses the test for 25 ms would send entries to the
            // CDN, and this test is about where the bytes come from when the peer answers.
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [share.baseURL],
                                                 hedgeSeconds: .infinity)
            let cdnBytes = await Self.packBytesSent(cdn)
            let tagBytes = try Self.tagArchiveBytes(viaPeer, ["level"])
            try Self.expectFiles(fixture, viaPeer, files: 8)
            #expect(tagBytes >= 32 << 20)
            #expect(plainBytes >= Int(tagBytes) - 4096)
            #expect(Double(cdnBytes) <= 0.01 * Double(tagBytes), "CDN sent \(cdnBytes) of \(tagBytes)")
            #expect(viaPeer.summary.peerBytes == 32 << 20)
            #expect(viaPeer.summary.bytesByPeer == [share.baseURL.absoluteString: 32 << 20])
            #expect(viaPeer.summary.downloadedBytes == Int64(cdnBytes))
            // How fast is a benchmark's question (`odrbench peers`, best of several runs against
            // the CDN alone); a test on a busy machine only says what it saw.
            print("peers target 1: CDN alone \(plain.seconds) s, with a peer \(viaPeer.seconds) s; CDN sent \(cdnBytes) of \(tagBytes) bytes")
            // The log says where the bytes came from.
            let line = try #require(try viaPeer.store.events().last { $0.kind == .install })
            #expect(line.reason.contains("bytes from peers (\(share.baseURL.absoluteString)"))
        }
    }

    /// Target 2: the peer dies mid-transfer; the install completes from the CDN with at most 1 MiB
    /// fetched twice (stored entries cut by the peer are continued by the CDN from their last byte).
    @Test func aPeerThatDiesMidTransferCostsAtMostOneMiBTwice() async throws {
        let fixture = try await Self.game()
        let first = try TemporaryDirectory(prefix: "odr-peer-a")
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        try await withTestServer(root: fixture.catalog) { cdn in
            let holder = try await Self.install(["level"], from: cdn.baseURL, into: first.url)
            // 16 MiB/s: the 32 MiB take two seconds; the peer dies once it has sent 4 MiB.
            let share = try await ShareServer.start(
                source: StoreShareSource(store: holder.store), port: 0,
                limits: ShareLimits(maximumConcurrentTransfers: 8, maximumTransfersPerAddress: 8, bytesPerSecond: 16 << 20),
                logger: testServerLogger())
            let killer = Task {
                let deadline = ContinuousClock.now + .seconds(120)
                while share.bytesSent < 4 << 20, ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
                await share.kill()
            }
            cdn.clearRequests()
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [share.baseURL],
                                                 hedgeSeconds: .infinity)
            try await killer.value
            let cdnBytes = Int64(await Self.packBytesSent(cdn))
            let tagBytes = try Self.tagArchiveBytes(viaPeer, ["level"])
            try Self.expectFiles(fixture, viaPeer, files: 8)
            let twice = viaPeer.summary.peerBytes + cdnBytes - tagBytes
            print("peers target 2: peer sent \(viaPeer.summary.peerBytes), CDN \(cdnBytes), tag \(tagBytes): \(twice) bytes fetched twice")
            #expect(viaPeer.summary.peerBytes > 0)
            #expect(viaPeer.summary.peerBytes < 32 << 20)
            #expect(twice <= 1 << 20)
        }
    }

    /// A peer that serves wrong bytes, one that says nothing, one that redirects and one with an
    /// endless body: the install completes with the right bytes from the CDN, the peer dropped
    /// after its first failure (a silent one by the peer first-byte timeout, 0.1 s, not the 3 s
    /// stall timeout).
    @Test(arguments: ["lying", "silent", "redirect", "endless"])
    func aBadPeerCostsTimeNeverCorrectness(_ kind: String) async throws {
        let fixture = try await Self.game(files: 4, fileBytes: 1 << 20)
        let alone = try TemporaryDirectory(prefix: "odr-peer-alone")
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        let junk = try TemporaryDirectory(prefix: "odr-peer-junk")
        try await withTestServer(root: fixture.catalog) { cdn in
            let plain = try await Self.install(["level"], from: cdn.baseURL, into: alone.url)
            var share: ShareServer?
            var raw: RawHTTPPeer?
            let peerURL: URL
            switch kind {
            case "lying":
                // Serves bytes of the right size for every digest the catalog names, but not the right ones.
                var sizes: [String: Int64] = [:]
                for pack in try plain.snapshot.packs(forTags: ["level"]) {
                    for entry in plain.snapshot.lookup.expectedEntries(inPack: pack.id) { sizes[entry.sha256] = entry.size }
                }
                let file = junk.appending("junk.bin")
                try deterministicBytes(count: 1 << 20, seed: 999).write(to: file)
                share = try await ShareServer.start(source: LyingSource(file: file, sizes: sizes), port: 0, limits: .unlimited,
                                                    logger: testServerLogger())
                peerURL = share!.baseURL
            case "silent":
                raw = try RawHTTPPeer(response: Data())
                peerURL = raw!.url(for: "")
            case "redirect":
                raw = try RawHTTPPeer(response: Data("HTTP/1.1 302 Found\r\nLocation: \(cdn.baseURL.absoluteString)packs/\r\nContent-Length: 0\r\n\r\n".utf8))
                peerURL = raw!.url(for: "")
            default:
                raw = try RawHTTPPeer(response: Data("HTTP/1.1 200 OK\r\nContent-Length: 999999999999\r\n\r\n".utf8) + deterministicBytes(count: 1 << 16, seed: 5))
                peerURL = raw!.url(for: "")
            }
            cdn.clearRequests()
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [peerURL])
            await share?.stop()
            raw?.stop()
            try Self.expectFiles(fixture, viaPeer, files: 4)
            // Dropped after its first failure: a silent or redirecting peer was asked once per slot at most.
            if let raw { #expect(raw.requestCount <= 4, "\(kind): \(raw.requestCount) requests") }
            if let share { #expect(share.requests().count <= 4, "lying: \(share.requests().count) requests") }
            let peers = try #require(viaPeer.peers)
            #expect(Set(peers.dropped.keys) == Set(peers.peers), "\(kind): \(peers.dropped)")
            if kind == "silent" {
                // Said by the deadline the peer requests keep themselves, not curl's stall window.
                let reason = peers.dropped.values.first ?? ""
                #expect(reason.hasPrefix("timed-out:"), "\(reason)")
                #expect(reason.contains("no byte of the body within 0.1 s of the request's start"), "\(reason)")
                #expect(reason.contains("first-byte timeout"), "\(reason)")
            }
            // A redirect is never followed to the CDN's folder.
            if kind == "redirect" {
                #expect(cdn.requests().filter { $0.target == "/packs/" }.isEmpty)
            }
        }
    }

    /// A manager lets 2 requests at once go to a peer (``PeerRequestGate``): when the first two
    /// find the peer silent, the entries waiting for their turn go to the CDN at once rather than
    /// each ask the dropped peer and wait out its deadline again.
    @Test func theRequestsWaitingForASilentPeerGoToTheCDNAtOnce() async throws {
        let fixture = try await Self.game(files: 8, fileBytes: 256 << 10)
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        try await withTestServer(root: fixture.catalog) { cdn in
            let silent = try RawHTTPPeer(response: Data())
            defer { silent.stop() }
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [silent.url(for: "")],
                                                 gate: PeerRequestGate(limit: 2))
            try Self.expectFiles(fixture, viaPeer, files: 8)
            // Four entries were asked at once, two of them waiting at the gate: those never reached the peer.
            #expect(silent.requestCount <= 2, "\(silent.requestCount) requests")
            let reason = try #require(viaPeer.peers?.dropped[silent.url(for: "")])
            #expect(reason.contains("first-byte timeout"), "\(reason)")
            #expect(viaPeer.summary.peerBytes == 0)
        }
    }

    /// A peer that says nothing within ``PeerSet/hedgeSeconds``: the CDN is asked for the entries
    /// no request to the peer was made for while the peer still holds the two it was asked and is
    /// not dropped (its first-byte deadline, 30 s here, and the engine's own timeouts, seconds, far
    /// away); once the peer is gone, the CDN serves those too.
    @Test func aSilentPeerSendsTheEntriesItWasNotAskedToTheCDNAfterTheHedgeDelay() async throws {
        let fixture = try await Self.game(files: 8, fileBytes: 256 << 10)
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        try await withTestServer(root: fixture.catalog) { cdn in
            let silent = try RawHTTPPeer(response: Data())
            let peerURL = silent.url(for: "")
            let peerSet = PeerSet([peerURL], firstByteSeconds: 30, hedgeSeconds: 0.05)
            cdn.clearRequests()
            // Waits for the CDN's first pack request and notes whether the peer was still a peer
            // then, and ends the silent peer (which fails its requests); without a hedge the CDN is
            // asked only once the peer was dropped (by a timeout of the engine, after seconds), and
            // this gives up after 20 s anyway.
            let watcher = Task { () -> (askedWhileSilent: Bool, peerRequests: Int) in
                let deadline = ContinuousClock.now + .seconds(20)
                var asked = false
                while ContinuousClock.now < deadline {
                    if cdn.requests().contains(where: { $0.target.hasPrefix("/packs/") }) {
                        // A peer is never taken back once dropped: live now, live when the CDN was asked.
                        asked = peerSet.dropped.isEmpty
                        break
                    }
                    try? await Task.sleep(for: .milliseconds(5))
                }
                let requests = silent.requestCount
                silent.stop()
                return (asked, requests)
            }
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [peerURL],
                                                 gate: PeerRequestGate(limit: 2), peerSet: peerSet)
            let seen = await watcher.value
            try Self.expectFiles(fixture, viaPeer, files: 8)
            #expect(seen.askedWhileSilent, "the CDN was not asked while the peer was silent")
            #expect(seen.peerRequests <= 2, "\(seen.peerRequests) requests reached the peer before the CDN was asked")
            #expect(silent.requestCount <= 2)
            #expect(viaPeer.summary.peerBytes == 0)
            // Every entry came from the CDN in this install: none counts as resumed.
            #expect(viaPeer.summary.resumedBytes == 0)
            #expect(viaPeer.summary.fetchedFiles == 8)
            #expect(viaPeer.summary.downloadedBytes == Int64(await Self.packBytesSent(cdn)))
            #expect(viaPeer.summary.requests == cdn.requests().filter { $0.target.hasPrefix("/packs/") }.count)
            #expect(viaPeer.peers?.dropped[peerURL] != nil)
        }
    }

    /// A good peer that answers only after the hedge: the CDN serves the entries the peer was not
    /// asked, the peer the ones it was, no entry comes from both, and the peer is not dropped.
    @Test func aSlowPeerKeepsTheEntriesItWasAskedAndIsNotDropped() async throws {
        let fixture = try await Self.game(files: 8, fileBytes: 256 << 10)
        let second = try TemporaryDirectory(prefix: "odr-peer-b")
        var contents: [String: Data] = [:]
        for index in 0..<8 {
            let data = try fixture.contents(of: "level/part\(index).bin")
            contents[ContentHash.sha256Hex(of: data)] = data
        }
        let files = contents
        // Answers `GET /odr/v1/sha256/<digest>` with the file, once released.
        let slow = try RawHTTPPeer(heldAnswering: { head in
            let path = head.split(separator: " ").dropFirst().first.map(String.init) ?? ""
            guard let body = files[String(path.split(separator: "/").last ?? "")] else {
                return Data("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8)
            }
            return Data("HTTP/1.1 200 OK\r\nContent-Length: \(body.count)\r\n\r\n".utf8) + body
        })
        defer { slow.stop() }
        let peerURL = slow.url(for: "")
        try await withTestServer(root: fixture.catalog) { cdn in
            cdn.clearRequests()
            // The peer answers once the CDN was asked (or after 20 s: without a hedge it never is).
            let watcher = Task { () -> Bool in
                let deadline = ContinuousClock.now + .seconds(20)
                while ContinuousClock.now < deadline, !cdn.requests().contains(where: { $0.target.hasPrefix("/packs/") }) {
                    try? await Task.sleep(for: .milliseconds(5))
                }
                slow.release()
                return cdn.requests().contains { $0.target.hasPrefix("/packs/") }
            }
            // 0.5 s: the peer's two requests are made long before the hedge.
            let viaPeer = try await Self.install(["level"], from: cdn.baseURL, into: second.url, peers: [peerURL],
                                                 gate: PeerRequestGate(limit: 2), firstByteSeconds: 30, hedgeSeconds: 0.5)
            let askedFirst = await watcher.value
            try Self.expectFiles(fixture, viaPeer, files: 8)
            #expect(askedFirst, "the CDN was not asked while the peer held its answers")
            #expect(viaPeer.peers?.dropped.isEmpty == true, "\(viaPeer.peers?.dropped ?? [:])")
            // The two requests made before the hedge were answered and kept; nothing more was asked.
            #expect(slow.requestCount == 2)
            #expect(viaPeer.summary.peerBytes == 2 * (256 << 10))
            // No entry came twice: the CDN sent the other six (and the local headers around them).
            let cdnBytes = await Self.packBytesSent(cdn)
            #expect(cdnBytes >= 6 * (256 << 10))
            #expect(cdnBytes < 7 * (256 << 10), "CDN sent \(cdnBytes)")
            #expect(viaPeer.summary.resumedBytes == 0)
            #expect(viaPeer.summary.fetchedFiles == 8)
            // What the summary says the CDN sent, and in how many requests, is what it sent.
            #expect(viaPeer.summary.downloadedBytes == Int64(cdnBytes))
            #expect(viaPeer.summary.requests == cdn.requests().filter { $0.target.hasPrefix("/packs/") }.count)
        }
    }

    /// In a manager, a peer's request for an entry runs at the priority of the pack it is for (an
    /// urgent fetch: urgent), like the pack's ranges from the CDN: a lesser one would be paused
    /// while the pack's urgent range runs, its first-byte deadline starting over afterwards.
    @Test func aManagersPeerRequestsRunAtTheirPacksPriority() async throws {
        let fixture = try await Self.game(files: 2, fileBytes: 256 << 10)
        let directory = try TemporaryDirectory(prefix: "odr-peer-priority")
        // Lacks everything: each entry is asked of it, then of the CDN.
        let peer = try RawHTTPPeer(response: Data("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8))
        defer { peer.stop() }
        try await withTestServer(root: fixture.catalog) { cdn in
            let recorder = SharedDownloadPriorityTests.RecordingTransport(base: try TransferEngine())
            var configuration = ResourceManager.Configuration(catalogURL: cdn.baseURL, storeDirectory: directory.url)
            configuration.transport = recorder
            configuration.freeSpaceWatermark = 0
            configuration.peers = [peer.url(for: "")]
            let manager = try ResourceManager(configuration: configuration)
            try await manager.prepare()
            _ = try await manager.fetch(tags: ["level"], priority: .urgent)
            let peerURLs = recorder.urls.filter { $0.path.contains("/odr/v1/sha256/") }
            #expect(peer.requestCount >= 1)
            #expect(!peerURLs.isEmpty)
            for url in peerURLs { #expect(recorder.priority(of: url) == .urgent, "\(url.lastPathComponent)") }
        }
    }

    /// The hedge delay follows the first-byte deadline unless set: a quarter of it, at most all of
    /// it, off with the deadline or when not finite or negative.
    @Test func theHedgeDelayIsAQuarterOfTheFirstByteDeadlineUnlessSet() throws {
        let peer = [URL(string: "http://127.0.0.1:2/")!]
        #expect(PeerSet(peer).hedgeSeconds == PeerSet.defaultFirstByteSeconds / 4)
        #expect(PeerSet(peer, firstByteSeconds: 0.4).hedgeSeconds == 0.1)
        #expect(PeerSet(peer, firstByteSeconds: 0.4, hedgeSeconds: 0.01).hedgeSeconds == 0.01)
        #expect(PeerSet(peer, firstByteSeconds: 0.4, hedgeSeconds: 2).hedgeSeconds == 0.4)
        #expect(PeerSet(peer, firstByteSeconds: 0).hedgeSeconds == .infinity)
        #expect(PeerSet(peer, hedgeSeconds: -1).hedgeSeconds == .infinity)
        #expect(PeerSet(peer, hedgeSeconds: .nan).hedgeSeconds == .infinity)
        let directory = try TemporaryDirectory(prefix: "odr-peer-hedge")
        var configuration = ResourceManager.Configuration(catalogURL: URL(string: "http://127.0.0.1:1/")!, storeDirectory: directory.url)
        configuration.peers = peer
        configuration.peerFirstByteTimeout = 0.4
        #expect(try ResourceManager(configuration: configuration).makeInstaller().peers?.hedgeSeconds == 0.1)
    }

    /// `Configuration.peerFirstByteTimeout` (`odr fetch --peer-timeout`, `ODR_OPT_PEER_FIRST_BYTE_TIMEOUT_MS`)
    /// is the deadline of the manager's peer requests; without it, the default 0.1 s.
    @Test func theManagersPeerTimeoutIsTheDeadlineOfItsPeerRequests() throws {
        let directory = try TemporaryDirectory(prefix: "odr-peer-timeout")
        var configuration = ResourceManager.Configuration(catalogURL: URL(string: "http://127.0.0.1:1/")!, storeDirectory: directory.url)
        configuration.peers = [URL(string: "http://127.0.0.1:2/")!]
        #expect(try ResourceManager(configuration: configuration).makeInstaller().peers?.firstByteSeconds == PeerSet.defaultFirstByteSeconds)
        configuration.peerFirstByteTimeout = 0.4
        let peers = try #require(try ResourceManager(configuration: configuration).makeInstaller().peers)
        #expect(peers.firstByteSeconds == 0.4)
        let request = peers.request(peer: configuration.peers[0], sha256: String(repeating: "a", count: 64), size: 1, priority: .normal)
        #expect(request.firstByteSeconds == 0.4)
    }

    /// A peer that holds only part of what is needed (another tag) answers 404 for the rest and
    /// stays a peer; the CDN serves the rest.
    @Test func aPeerWithoutTheFileAnswers404AndTheCDNServesIt() async throws {
        try await Self.withSharedHolder(files: 2, fileBytes: 256 << 10, holding: ["menu"], limits: .unlimited) { shared in
            let share = shared.share
            let viaPeer = try await Self.install(["level", "menu"], from: shared.cdn, into: shared.second, peers: [share.baseURL])
            await share.waitUntilIdle()
            let statuses = share.requests().map(\.status).sorted()
            await share.stop()
            try Self.expectFiles(shared.fixture, viaPeer, files: 2)
            #expect(statuses.filter { $0 == 404 }.count == 2)
            #expect(statuses.filter { $0 == 200 }.count == 1)
            #expect(viaPeer.summary.peerBytes > 0)
        }
    }

    /// A share whose transfer slots are taken answers 503 at once (a LAN party: more devices than
    /// its 4 transfers). The installer sends that entry to the CDN and keeps the peer: it is not
    /// dropped, and the entries asked once a slot is free come from it. Before, a 503 dropped the
    /// peer for the rest of the install like any other failure.
    @Test func aBusyPeerIsNotDropped() async throws {
        // One transfer at a time, 512 KiB at 2 MiB/s: a quarter of a second each, so the second
        // of the two requests the installer makes at once finds the slot taken.
        let limits = ShareLimits(maximumConcurrentTransfers: 1, maximumTransfersPerAddress: 1, bytesPerSecond: 2 << 20)
        try await Self.withSharedHolder(files: 4, fileBytes: 512 << 10, holding: ["level"], limits: limits) { shared in
            let share = shared.share
            let viaPeer = try await Self.install(["level"], from: shared.cdn, into: shared.second, peers: [share.baseURL],
                                                 gate: PeerRequestGate(limit: 2))
            await share.waitUntilIdle()
            let statuses = share.requests().map(\.status)
            await share.stop()
            try Self.expectFiles(shared.fixture, viaPeer, files: 4)
            #expect(statuses.contains(503), "\(statuses)")
            #expect(viaPeer.peers?.dropped.isEmpty == true, "\(viaPeer.peers?.dropped ?? [:])")
            #expect(viaPeer.summary.peerBytes >= 512 << 10)
        }
    }

    /// A share closes connections idle for `idleConnectionSeconds`; the installer's transport,
    /// which keeps them for reuse, then opens new ones: a second install by the same engine after
    /// the share closed the first one's connections still takes every byte from the peer, and the
    /// peer is not dropped.
    @Test func anInstallAfterTheShareClosedIdleConnectionsStillUsesThePeer() async throws {
        var limits = ShareLimits.unlimited
        limits.idleConnectionSeconds = 1
        try await Self.withSharedHolder(files: 2, fileBytes: 256 << 10, holding: ["level", "menu"], limits: limits) { shared in
            let share = shared.share
            let store = try ResourceStore(directory: shared.second)
            let engine = try TransferEngine()
            let client = CatalogClient(catalogURL: shared.cdn, store: store, transport: engine)
            let snapshot = try await client.describe(["level", "menu"], in: try await client.refresh())
            var installer = PackInstaller(store: store, transport: engine)
            let peers = PeerSet([share.baseURL])
            installer.peers = peers
            let level = try await installer.install(try snapshot.packs(forTags: ["level"]), from: snapshot)
            #expect(level.peerBytes == 2 * (256 << 10))
            try await waitUntil("the share closed the idle connections", timeout: .seconds(30)) { share.openConnections == 0 }
            let menu = try await installer.install(try snapshot.packs(forTags: ["menu"]), from: snapshot)
            await share.stop()
            #expect(menu.peerBytes == 1400)
            #expect(menu.downloadedBytes == 0)
            #expect(peers.dropped.isEmpty, "\(peers.dropped)")
            let menuFile = try store.url(forResource: "menu/menu.json", in: snapshot)
            #expect(try Data(contentsOf: menuFile) == shared.fixture.contents(of: "menu/menu.json"))
        }
    }
}

/// A share source that answers every digest it knows with the right size of the wrong bytes.
struct LyingSource: ShareSource {
    let file: URL
    let sizes: [String: Int64]

    func locate(sha256 digest: String) -> SharedContent? {
        guard let size = sizes[digest] else { return nil }
        return SharedContent(file: file, packID: "lie", offset: 0, size: min(size, 1 << 20))
    }

    func isStillShared(_ content: SharedContent) -> Bool { true }
}

/// The hedge's timer waits for the round's first request to a peer (``PeerRoundHedge/firstAsk``).
struct PeerRoundHedgeTests {
    @Test func theFirstAskEndsTheWaitAndAHandedOverEntryIsNeverAsked() async throws {
        let hedge = PeerRoundHedge()
        let waiter = Task { for await _ in hedge.firstAsk {} }
        #expect(hedge.ask("a.bin"))
        await waiter.value
        let entry = PackEntryExpectation(name: "b.bin", method: .stored, storedSize: 1, size: 1, headerOffset: 40, sha256: String(repeating: "0", count: 64))
        #expect(hedge.hedge([entry])?.map(\.name) == ["b.bin"])
        #expect(!hedge.ask("b.bin"))
        #expect(hedge.close())
    }

    @Test func aRoundThatEndsWithoutAskingEndsTheWaitToo() async throws {
        let hedge = PeerRoundHedge()
        let waiter = Task { for await _ in hedge.firstAsk {} }
        #expect(!hedge.close())
        await waiter.value
        // Closed: no hedge any more.
        #expect(hedge.hedge([]) == nil)
    }
}
