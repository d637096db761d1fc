import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Dead origins found fast and remembered: a host that accepts and never answers, a body that
/// stops in the middle, an origin that is slow but steady, and the back-off every process on a
/// store shares. Real HTTP over loopback; the silent host is a raw socket listener
/// (``RawHTTPPeer``). Timings are asserted only against the stall window the engine would
/// otherwise wait (30 s), with short timeouts configured, so a loaded machine cannot fail them.
struct DeadOriginTests {
    /// Quick timeouts, the default 30 s stall window: what ends an attempt here is the new limits.
    static func engine(firstByte: Double = 1, stall: Double = 1) throws -> TransferEngine {
        try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries, firstByteTimeout: firstByte,
                                                failoverStallTimeout: stall))
    }

    static func seconds(since start: ContinuousClock.Instant) -> Double {
        let elapsed = (ContinuousClock.now - start).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    @Test func theDefaultsAskTheNextOriginWithinSecondsNotTheStallWindow() {
        let defaults = TransferEngine.Configuration()
        // docs/TRANSFERS.md: a silent origin costs connect + first byte, a silent body 5 s.
        #expect(defaults.connectTimeout == 5)
        #expect(defaults.firstByteTimeout == 5)
        #expect(defaults.failoverStallTimeout == 5)
        #expect(defaults.firstByteTimeout + 1 < 10)
        // Not finite or not positive turns a limit off rather than failing every attempt at once.
        let off = TransferEngine.Configuration(firstByteTimeout: 0, failoverStallTimeout: -.infinity)
        #expect(off.firstByteTimeout == .infinity)
        #expect(off.failoverStallTimeout == .infinity)
    }

    @Test func aPrimaryThatAcceptsAndNeverAnswersFailsOverAtTheFirstByteTimeout() async throws {
        let body = deterministicBytes(count: 200_000, seed: 301)
        let silent = try RawHTTPPeer(response: Data())
        defer { silent.stop() }
        try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
            let switches = Locked<[TransferOriginSwitch]>([])
            var request = TransferRequest(url: silent.url(for: "packs/a.zip"), expectedSHA256: ContentHash.sha256Hex(of: body))
            request.alternateURLs = [mirror.url(for: "packs/a.zip")]
            request.originSwitched = { change in switches.withLock { $0.append(change) } }
            let sink = RecordingSink()
            let started = ContinuousClock.now
            let result = try await Self.engine().download(request, into: sink)
            #expect(sink.bytes == body)
            #expect(result.servedBy == mirror.url(for: "packs/a.zip"))
            #expect(switches.withLock { $0 }.map(\.reason) == [.timedOut])
            #expect(silent.requestCount == 1)
            // The stall window (30 s) would have ended it otherwise.
            #expect(Self.seconds(since: started) < 20)
        }
    }

    @Test func aSilentServerAloneIsRetriedWithTwiceTheWaitEachTime() async throws {
        let silent = try RawHTTPPeer(response: Data())
        defer { silent.stop() }
        let retries = RetryPolicy(maximumAttempts: 3, initialDelay: 0.01, multiplier: 1, maximumDelay: 0.01)
        let engine = try TransferEngine(configuration: .init(retryPolicy: retries, firstByteTimeout: 1, progressTimeout: 30))
        let started = ContinuousClock.now
        let error = await #expect(throws: ResourceError.self) {
            _ = try await engine.download(TransferRequest(url: silent.url(for: "catalog.json")), into: RecordingSink())
        }
        #expect(error?.code == .timedOut)
        // 1 s, 2 s, 4 s: each retry of an origin that did not answer waits twice as long, so a
        // link slower than the limit gets through on a retry.
        #expect((error?.cause as? CurlError)?.detail.contains("no response within 4 s of connecting (first-byte timeout)") == true,
                "\(String(describing: error?.cause))")
        #expect(silent.requestCount == 3)
        #expect(Self.seconds(since: started) >= 6.5)
    }

    /// A request's own first-byte deadline, in fractions of a second, ends an attempt to a host
    /// that accepts the connection and then says nothing, or sends the response's headers and then
    /// nothing, as `timed-out`, naming the deadline. Every other limit is two minutes here, past
    /// the test's time limit: only the request's deadline (and the loop waking for it) can end it.
    @Test(.timeLimit(.minutes(1)), arguments: ["", "HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n"])
    func aRequestsFirstByteDeadlineEndsASilentAttempt(_ response: String) async throws {
        let silent = try RawHTTPPeer(response: Data(response.utf8))
        defer { silent.stop() }
        let engine = try TransferEngine(configuration: .init(retryPolicy: RetryPolicy(maximumAttempts: 1), connectTimeout: 120,
                                                             firstByteTimeout: 120, lowSpeedTime: 120, progressTimeout: 600))
        var request = TransferRequest(url: silent.url(for: "packs/a.zip"))
        request.firstByteSeconds = 0.25
        let error = await #expect(throws: ResourceError.self) {
            _ = try await engine.download(request, into: RecordingSink())
        }
        #expect(error?.code == .timedOut)
        let detail = (error?.cause as? CurlError)?.detail ?? ""
        #expect(detail == "no byte of the body within 0.25 s of the request's start, connecting included (the request's first-byte timeout)",
                "\(String(describing: error))")
    }

    @Test func aBodyThatStallsMidTransferContinuesOnTheMirrorWhereItStopped() async throws {
        let body = deterministicBytes(count: 1 << 20, seed: 302)
        try await withTestServer(files: ["packs/a.zip": body]) { primary, _ in
            try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
                primary.injectFaults(.stall(afterBytes: 300_000, for: .seconds(120)), path: "/packs/a.zip")
                var request = TransferRequest(url: primary.url(for: "packs/a.zip"), expectedSHA256: ContentHash.sha256Hex(of: body))
                request.alternateURLs = [mirror.url(for: "packs/a.zip")]
                let sink = RecordingSink()
                let started = ContinuousClock.now
                let result = try await Self.engine().download(request, into: sink)
                #expect(sink.bytes == body)
                #expect(result.servedBy == mirror.url(for: "packs/a.zip"))
                await mirror.waitUntilIdle()
                // The held bytes stayed: the mirror sent only the rest.
                let ranges = mirror.requests().compactMap(\.range)
                #expect(ranges.count == 1)
                #expect(ranges.first.map { $0.hasPrefix("bytes=") && $0 != "bytes=0-" } == true, "\(ranges)")
                #expect(Self.seconds(since: started) < 20)
            }
        }
    }

    @Test func anOriginThatIsSlowButSteadyIsNotLeft() async throws {
        let body = deterministicBytes(count: 40 << 10, seed: 303)
        // The first byte after half a second, then 8 KiB/s: 5 s in all, longer than both limits.
        let slow = NetworkConditions(latency: .milliseconds(500), bytesPerSecond: 8 << 10)
        try await withTestServer(files: ["packs/a.zip": body], conditions: slow) { primary, _ in
            try await withTestServer(files: ["packs/a.zip": body]) { mirror, _ in
                let switches = Locked<[TransferOriginSwitch]>([])
                var request = TransferRequest(url: primary.url(for: "packs/a.zip"), expectedSHA256: ContentHash.sha256Hex(of: body))
                request.alternateURLs = [mirror.url(for: "packs/a.zip")]
                request.originSwitched = { change in switches.withLock { $0.append(change) } }
                let sink = RecordingSink()
                // Limits under the 5 s the body takes, with room for a loaded machine's pauses.
                let result = try await Self.engine(firstByte: 4, stall: 3).download(request, into: sink)
                #expect(sink.bytes == body)
                #expect(result.servedBy == primary.url(for: "packs/a.zip"))
                #expect(result.attempts == 1)
                #expect(switches.withLock { $0 }.isEmpty)
                await mirror.waitUntilIdle()
                #expect(mirror.requests().isEmpty)
            }
        }
    }
}

/// The back-off of origins that failed, recorded in the store: shared by every process on it,
/// kept for the next run, and robust against a clock that moved.
struct SharedOriginBackOffTests {
    let primary = URL(string: "https://cdn-a.example.com/game/")!
    let mirror = URL(string: "https://cdn-b.example.com/game/")!

    @Test func aFailureSeenByOneProcessSendsTheNextToTheMirrorFirst() throws {
        let directory = try TemporaryDirectory(prefix: "odr-origin-backoff")
        let clock = ManualClock(now: 10_000)
        let first = try ResourceStore(directory: directory.url)
        OriginSet([primary, mirror], backOff: .seconds(60), clock: clock, store: first)
            .markFailed(primary.appending(path: "catalog.json"))
        // Another store object on the same folder: what the next process (or run) opens.
        let second = try ResourceStore(directory: directory.url)
        let next = OriginSet([primary, mirror], backOff: .seconds(60), clock: clock, store: second)
        #expect(next.order() == [1, 0])
        clock.advance(61)
        #expect(next.order() == [0, 1])
        // A success anywhere lifts it everywhere.
        clock.advance(-61)
        let third = OriginSet([primary, mirror], backOff: .seconds(60), clock: clock, store: second)
        #expect(third.order() == [1, 0])
        third.markSucceeded(primary.appending(path: "packs/x.zip"))
        #expect(OriginSet([primary, mirror], backOff: .seconds(60), clock: clock, store: first).order() == [0, 1])
    }

    @Test func aFailureRecordedAheadOfTheClockIsNotTrustedToKeepAnOriginAway() throws {
        let directory = try TemporaryDirectory(prefix: "odr-origin-skew")
        let store = try ResourceStore(directory: directory.url)
        let clock = ManualClock(now: 10_000)
        func order() -> [Int] { OriginSet([primary, mirror], backOff: .seconds(60), clock: clock, store: store).order() }
        // Recorded a day ahead (the clock was set back since): ignored, the primary leads.
        try store.recordOriginFailure(primary.absoluteString, at: 10_000 + 86_400)
        #expect(order() == [0, 1])
        // A few seconds ahead (within the tolerance): avoided, for the back-off from that time.
        try store.recordOriginFailure(primary.absoluteString, at: 10_003)
        #expect(order() == [1, 0])
        clock.advance(62.5)
        #expect(order() == [1, 0])
        clock.advance(1)
        #expect(order() == [0, 1])
        // A failure far in the past is over; a row written outside the runtime is ignored.
        try store.recordOriginFailure(primary.absoluteString, at: -1e300)
        #expect(order() == [0, 1])
        try store.write("plant a damaged row") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO originFailure (origin, failedAt) VALUES (?, ?)", arguments: [mirror.absoluteString, "soon"])
        }
        #expect(order() == [0, 1])
    }

    @Test func odrRemembersAHungPrimarySoTheNextRunGoesStraightToTheMirror() async throws {
        let fixture = try await OriginFailoverTests.fixture()
        let store = fixture.stores.appending("cli").path
        let silent = try RawHTTPPeer(response: Data())
        defer { silent.stop() }
        try await withTestServer(root: fixture.game.catalog) { mirror in
            let arguments = ["fetch", "--catalog", silent.url(for: "").absoluteString, "--mirror", mirror.baseURL.absoluteString,
                             "--allow-unsigned-mirrors", "--store", store, "--watermark", "0", "--quiet", "big"]
            let started = ContinuousClock.now
            let first = try await ODRExecutable.run(arguments)
            #expect(first.status == 0, "\(first.stderr)")
            // The first-byte timeout (5 s), not the stall window (30 s), moved it to the mirror.
            #expect(DeadOriginTests.seconds(since: started) < 25)
            #expect(silent.requestCount == 1)
            // The next run (another process) does not ask the silent primary at all.
            let second = try await ODRExecutable.run(arguments)
            #expect(second.status == 0, "\(second.stderr)")
            #expect(silent.requestCount == 1)
        }
    }
}
