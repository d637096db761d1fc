import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// `odr share` (issue 43): a store's installed, verified content by SHA-256, nothing else.
@Suite(.serialized)
struct ShareServerTests {
    struct Shared {
        var fixture: CatalogFixture
        var store: ResourceStore
        var snapshot: CatalogSnapshot
        var share: ShareServer
        var storeDirectory: TemporaryDirectory
    }

    /// A store with tag `level` installed (two files of `fileBytes`; tag `menu` not), shared on a free port.
    /// `source` wraps the store's ``StoreShareSource`` (to watch what the server asks of it).
    static func withSharedStore(limits: ShareLimits = .unlimited, fileBytes: Int = 1 << 20,
                                source: (StoreShareSource) -> any ShareSource = { $0 },
                                _ body: (Shared) async throws -> Void) async throws {
        let fixture = try await PeerInstallTests.game(files: 2, fileBytes: fileBytes)
        let directory = try TemporaryDirectory(prefix: "odr-share")
        try await withTestServer(root: fixture.catalog) { cdn in
            let installed = try await PeerInstallTests.install(["level"], from: cdn.baseURL, into: directory.url)
            let share = try await ShareServer.start(source: source(StoreShareSource(store: installed.store)), port: 0, limits: limits,
                                                    logger: testServerLogger())
            do {
                try await body(Shared(fixture: fixture, store: installed.store, snapshot: installed.snapshot, share: share,
                                      storeDirectory: directory))
            } catch {
                await share.stop()
                throw error
            }
            await share.stop()
        }
    }

    static func digest(of path: String, in shared: Shared) throws -> String {
        ContentHash.sha256Hex(of: try shared.fixture.contents(of: path))
    }

    @Test func servesInstalledContentByDigestWholeAndInRanges() async throws {
        try await Self.withSharedStore { shared in
            let contents = try shared.fixture.contents(of: "level/part0.bin")
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try Self.digest(of: "level/part0.bin", in: shared))
            let whole = try await CurlCommand.fetch(url)
            #expect(whole.status == 200)
            #expect(whole.body == contents)
            let range = try await CurlCommand.fetch(url, ["-r", "100-199"])
            #expect(range.status == 206)
            #expect(range.body == contents[100..<200])
            #expect(range.header("content-range") == "bytes 100-199/\(contents.count)")
            // A range past the end: 416, nothing served.
            let past = try await CurlCommand.fetch(url, ["-r", "\(contents.count)-"])
            #expect(past.status == 416)
            #expect(past.body.count < 200)
            let head = try await CurlCommand.fetch(url, ["-I"])
            #expect(head.status == 200)
            #expect(head.header("content-length") == "\(contents.count)")
        }
    }

    /// No request reaches a file outside what the database says is installed: traversal, encoded
    /// dots and slashes, malformed digests, digests of files not installed, other methods, listings.
    @Test func servesNothingElse() async throws {
        try await Self.withSharedStore { shared in
            let base = shared.share.baseURL.absoluteString
            let notInstalled = try Self.digest(of: "menu/menu.json", in: shared)
            let database = ContentHash.sha256Hex(of: try Data(contentsOf: shared.storeDirectory.appending(ResourceStore.databaseName)))
            let cases: [(String, [String], Int)] = [
                (base, [], 404),
                (base + "odr/v1/sha256/", [], 400),
                (base + "odr/v1/sha256/../../store.sqlite", ["--path-as-is"], 400),
                (base + "odr/v1/sha256/%2e%2e%2fstore.sqlite", ["--path-as-is"], 400),
                (base + "odr/v1/sha256/..%2F..%2F" + String(repeating: "a", count: 58), ["--path-as-is"], 400),
                (base + "odr/v1/sha256/" + String(repeating: "A", count: 64), [], 400),
                (base + "odr/v1/sha256/" + String(repeating: "a", count: 65), [], 400),
                (base + "odr/v1/sha256/" + String(repeating: "g", count: 64), [], 400),
                (base + "packs/", [], 404),
                (base + "../store.sqlite", ["--path-as-is"], 404),
                (base + "odr/v1/sha256/" + notInstalled, [], 404),
                (base + "odr/v1/sha256/" + database, [], 404),
                (base + "odr/v1/sha256/" + String(repeating: "0", count: 64), [], 404),
            ]
            for (url, arguments, status) in cases {
                let response = try await CurlCommand.fetch(url, arguments)
                #expect(response.status == status, "\(url)")
                #expect(response.body.count < 200, "\(url)")
            }
            let post = try await CurlCommand.fetch(base + "odr/v1/sha256/" + (try Self.digest(of: "level/part0.bin", in: shared)), ["-X", "POST"])
            #expect(post.status == 405)
        }
    }

    /// A pack purged stops being served: at once for new requests, and mid-body for one under way.
    @Test func stopsServingAPackBeingPurged() async throws {
        // 1 MiB/s: a 1 MiB body takes a second, long enough to purge under it.
        try await Self.withSharedStore(limits: ShareLimits(bytesPerSecond: 1 << 20)) { shared in
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try Self.digest(of: "level/part1.bin", in: shared))
            let underWay = Task { try await CurlCommand.fetch(url) }
            try await waitUntil("the body is under way", timeout: .seconds(60)) { shared.share.bytesSent > 0 }
            for id in try shared.snapshot.packs(forTags: ["level"]).map(\.id) {
                _ = try await shared.store.removeInstalledPack(id: id, event: .purge, reason: "test")
            }
            let cut = try await underWay.value
            #expect(cut.body.count < 1 << 20)
            #expect(cut.exitCode != 0)
            let after = try await CurlCommand.fetch(url)
            #expect(after.status == 404)
        }
    }

    /// How often a body asks the store whether its content is still shared (a database query
    /// each): before the body, then before each chunk. Without a rate limit a chunk is 1 MiB, so a
    /// 4 MiB body asks 5 times (at 256 KiB it asked 17 times, which cost `odr share` a third more
    /// CPU than `odrpack serve` for the same bytes). With one, a chunk is the limiter's 50 ms, at
    /// most 256 KiB: at 2 MiB/s 104,857 bytes, so a purge still cuts a slow body within about
    /// 50 ms; at the default 32 MiB/s 256 KiB, so a new body's first byte does not wait behind
    /// 1 MiB chunks (31 ms each) longer than the installer's hedge.
    @Test func asksWhetherContentIsStillSharedOncePerChunk() async throws {
        // No rate limit: chunks of 1 MiB.
        #expect(try await Self.stillSharedChecks(limits: .unlimited, range: nil) == 1 + 4)
        // 2 MiB/s: chunks of 104,857 bytes; 512 KiB is five of them and one of 3.
        #expect(try await Self.stillSharedChecks(limits: ShareLimits(bytesPerSecond: 2 << 20), range: 0..<524_288) == 1 + 6)
        // The default 32 MiB/s: chunks of 256 KiB, sixteen for 4 MiB.
        #expect(try await Self.stillSharedChecks(limits: ShareLimits(), range: nil) == 1 + 16)
    }

    /// The still-shared checks a share with `limits` makes while it serves `range` (the whole file
    /// when `nil`) of a 4 MiB file, once the bytes served are checked.
    static func stillSharedChecks(limits: ShareLimits, range: Range<Int>?) async throws -> Int {
        let count = CountingShareSource.Count()
        var checks = -1
        try await withSharedStore(limits: limits, fileBytes: 4 << 20, source: { CountingShareSource(base: $0, count: count) }) { shared in
            let contents = try shared.fixture.contents(of: "level/part0.bin")
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try digest(of: "level/part0.bin", in: shared))
            let before = count.stillSharedChecks
            let response = try await CurlCommand.fetch(url, range.map { ["-r", "\($0.lowerBound)-\($0.upperBound - 1)"] } ?? [])
            #expect(response.status == (range == nil ? 200 : 206))
            #expect(response.body == (range.map { contents[$0] } ?? contents))
            checks = count.stillSharedChecks - before
        }
        return checks
    }

    /// More transfers than the limit, from one address: the rest are answered 503 at once. (Twelve
    /// connections: more than the 8 a share keeps open from one address by default, which the
    /// next test covers, so the limit on connections is raised here.)
    @Test func aFloodOfTransfersGets503() async throws {
        let limits = ShareLimits(maximumConcurrentTransfers: 4, maximumTransfersPerAddress: 2, bytesPerSecond: 1 << 20, maximumConnectionsPerAddress: 16)
        try await Self.withSharedStore(limits: limits) { shared in
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try Self.digest(of: "level/part0.bin", in: shared))
            let responses = try await withThrowingTaskGroup(of: CurlResponse.self) { group in
                // Half a MiB each at 1 MiB/s in all: a served transfer holds its slot for half a
                // second or more, so requests that start in that time find none free.
                for _ in 0..<12 { group.addTask { try await CurlCommand.fetch(url, ["-r", "0-524287"]) } }
                var all: [CurlResponse] = []
                for try await response in group { all.append(response) }
                return all
            }
            let served = responses.filter { $0.status == 206 }.count
            #expect(served >= 1)
            #expect(served <= 12 - 1)
            #expect(responses.filter { $0.status == 503 }.count == 12 - served)
            await shared.share.waitUntilIdle()
            try await waitUntil("slots are free", timeout: .seconds(5)) { shared.share.activeTransfers == 0 }
        }
    }

    /// A flood of connections from one address (thousands, as a hostile or broken device on the
    /// LAN opens them): the share keeps 8 open (`maximumConnectionsPerAddress`) and closes the
    /// rest as soon as it accepts them, so it holds a bounded number of descriptors, and another
    /// address is served meanwhile. Before, every connection stayed open: `odr share` with 256
    /// descriptors ran out of them, spun a core on `accept` failing, and served nobody.
    @Test(.timeLimit(.minutes(3)))
    func aFloodOfConnectionsFromOneAddressKeepsAFewOpenAndOthersAreServed() async throws {
        let count = min(2000, Self.raiseDescriptorLimit(wanting: 2000 + 300) - 300)
        try #require(count >= 1000, "this process may open too few descriptors for the flood")
        // The default limits, but idle connections kept longer than the flood takes to open.
        var limits = ShareLimits()
        limits.idleConnectionSeconds = 600
        try await Self.withSharedStore(limits: limits) { shared in
            let port = shared.share.port
            let perAddress = shared.share.limits.maximumConnectionsPerAddress
            #expect(perAddress == 8)
            let contents = try shared.fixture.contents(of: "level/part0.bin")
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try Self.digest(of: "level/part0.bin", in: shared))
            var flood = try await LoopbackConnection.onThread { try (0..<count).map { _ in try LoopbackConnection(port: port) } }
            try await waitUntil("the share has taken every connection", timeout: .seconds(60)) {
                shared.share.openConnections + shared.share.refusedConnections >= count
            }
            #expect(shared.share.openConnections == perAddress)
            #expect(shared.share.refusedConnections == count - perAddress)
            try await waitUntil("the refused connections are closed", timeout: .seconds(30)) {
                flood.filter(\.isClosedByPeer).count >= count - perAddress
            }
            #expect(flood.filter(\.isClosedByPeer).count == count - perAddress)

            // Another device is served while the flood lasts; the flooding address is not.
            let other = try await CurlCommand.fetch(url, ["--interface", "127.0.0.2"])
            #expect(other.status == 200)
            #expect(other.body == contents)
            let flooding = try await CurlCommand.fetch(url)
            #expect(flooding.status == 0, "a connection past the address's limit is closed before any answer")

            // Once the flood's connections close, its address is served again.
            flood.removeAll()
            try await waitUntil("the flood's connections are released", timeout: .seconds(30)) { shared.share.openConnections == 0 }
            let after = try await CurlCommand.fetch(url)
            #expect(after.status == 200)
            #expect(after.body == contents)
        }
    }

    /// A connection that sends nothing, or only part of a request head, is closed after
    /// `idleConnectionSeconds`, freeing its place under the limits; a body being sent for longer
    /// than that (a slow share, a slow reader) is not cut.
    @Test(.timeLimit(.minutes(2)))
    func idleAndTricklingConnectionsAreClosedButALongBodyIsNot() async throws {
        var limits = ShareLimits(bytesPerSecond: 1 << 20)
        limits.idleConnectionSeconds = 1
        try await Self.withSharedStore(limits: limits, fileBytes: 2 << 20) { shared in
            let port = shared.share.port
            let silent = try LoopbackConnection(port: port)
            let trickling = try LoopbackConnection(port: port)
            try trickling.send("GET /odr/v1/sha256/")
            try await waitUntil("the share closes both", timeout: .seconds(30)) { silent.isClosedByPeer && trickling.isClosedByPeer }
            try await waitUntil("their places are free", timeout: .seconds(30)) { shared.share.openConnections == 0 }

            // 2 MiB at 1 MiB/s: about two seconds of body, twice the idle timeout.
            let url = shared.share.baseURL.absoluteString + "odr/v1/sha256/" + (try Self.digest(of: "level/part0.bin", in: shared))
            let long = try await CurlCommand.fetch(url)
            #expect(long.exitCode == 0)
            #expect(long.body == (try shared.fixture.contents(of: "level/part0.bin")))
        }
    }

    /// Raises this process's soft limit on open descriptors towards `wanting` (up to the hard
    /// limit) and returns the soft limit then.
    static func raiseDescriptorLimit(wanting: Int) -> Int {
        var limit = rlimit()
        guard getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit) == 0 else { return 0 }
        if limit.rlim_cur < rlim_t(wanting) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(wanting))
            _ = setrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
            _ = getrlimit(__rlimit_resource_t(RLIMIT_NOFILE.rawValue), &limit)
        }
        return Int(clamping: limit.rlim_cur)
    }

    /// A peer that stops reading in the middle of a body (a suspended device, a process stopped
    /// with SIGSTOP) does not hold up `stop()`, with the default limits (the rate limiter in
    /// play): its connection is closed once the responses under way had their second, so `stop()`
    /// returns, the port refuses connections and the peer's connection ends. The time limit is the
    /// guard against a `stop()` that never returns.
    @Test(.timeLimit(.minutes(1)))
    func stopClosesTheConnectionOfAPeerThatStoppedReadingMidBody() async throws {
        // 8 MiB: more than the loopback socket buffers hold (the client's receive buffer is made
        // small), so the server's writes wait for a reader that never comes.
        try await Self.withSharedStore(limits: ShareLimits(), fileBytes: 8 << 20) { shared in
            let port = shared.share.port
            let (connection, first) = try await Self.stalledBody(of: "level/part0.bin", in: shared, port: port)
            // Never read again. Wait until the body is under way, then stop.
            try await waitUntil("the body to be under way", timeout: .seconds(30)) { shared.share.bytesSent > 0 }
            await shared.share.stop()
            #expect(!LoopbackConnection.canConnect(port: port), "the port still accepts connections after stop()")
            // What the socket buffers held arrives, then the end of the connection: not the whole file.
            let rest = try await LoopbackConnection.onThread { try connection.receiveUntilClosed() }
            #expect(first.count + rest.count < 8 << 20)
        }
    }

    /// `odr share` on SIGINT, with such a peer: it stops as `stop()` does (the peer's connection
    /// ends, the port refuses connections) and exits with status 0, saying so on stderr. Before,
    /// it had no handler: SIGINT killed it outright, and one started in the background of a
    /// non-interactive shell (where SIGINT is ignored) did not stop on it at all.
    @Test(.timeLimit(.minutes(2)))
    func odrShareStopsOnSIGINTWithAPeerThatStoppedReading() async throws {
        let odr = try #require(ODRExecutable.url)
        try await Self.withSharedStore(fileBytes: 8 << 20) { shared in
            let share = try RunningProcess(odr, ["share", "--store", shared.storeDirectory.url.path, "--port", "0"])
            defer { share.terminate() }
            try await share.waitForOutput(containing: "Stop with Ctrl-C.", timeout: .seconds(60))
            let port = try #require(share.stdout.firstMatch(of: /127\.0\.0\.1:(\d+)\//).flatMap { Int($0.1) }, "\(share.stdout)")
            let (connection, first) = try await Self.stalledBody(of: "level/part0.bin", in: shared, port: port)
            #expect(kill(share.processIdentifier, SIGINT) == 0)
            let status = try await share.waitForExit(timeout: .seconds(60))
            #expect(status == 0, "\(share.stderr)")
            #expect(share.stderr.contains("Received SIGINT, stopping"), "\(share.stderr)")
            #expect(!LoopbackConnection.canConnect(port: port), "the port still accepts connections after odr share exited")
            let rest = try await LoopbackConnection.onThread { try connection.receiveUntilClosed() }
            #expect(first.count + rest.count < 8 << 20)
        }
    }

    /// A raw client that asks the share on `port` for the file at `path`, reads the first bytes of
    /// the answer (a 200: the body is under way) and never reads again; its receive buffer is
    /// small, so the server's writes soon wait for it. Returns the connection and what it read.
    static func stalledBody(of path: String, in shared: Shared, port: Int) async throws -> (LoopbackConnection, Data) {
        let digest = try digest(of: path, in: shared)
        let connection = try LoopbackConnection(port: port, receiveBufferBytes: 4096)
        try connection.send("GET /odr/v1/sha256/\(digest) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let first = try await LoopbackConnection.onThread { try connection.receive(upTo: 100) }
        #expect(String(decoding: first, as: UTF8.self).hasPrefix("HTTP/1.1 200"))
        return (connection, first)
    }
}

/// A ``ShareSource`` that counts the server's still-shared checks and passes everything to `base`.
struct CountingShareSource: ShareSource {
    final class Count: Sendable {
        private let checks = Locked(0)
        var stillSharedChecks: Int { checks.withLock { $0 } }
        func add() { checks.withLock { $0 += 1 } }
    }

    let base: any ShareSource
    let count: Count

    func locate(sha256 digest: String) -> SharedContent? { base.locate(sha256: digest) }

    func isStillShared(_ content: SharedContent) -> Bool {
        count.add()
        return base.isStillShared(content)
    }
}
