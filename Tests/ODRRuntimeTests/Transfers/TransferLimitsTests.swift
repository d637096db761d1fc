import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// What the engine does with servers that misbehave in size or time: response headers past the
/// cap, a server that accepts and says nothing, and one that is slow but moving. Real HTTP over
/// loopback (``RawHTTPPeer`` for what a well-formed server cannot send).
struct TransferLimitsTests {
    /// Many quick retries: without the progress timeout they alone would keep a silent server going.
    static let manyRetries = RetryPolicy(maximumAttempts: 20, initialDelay: 0.01, multiplier: 1, maximumDelay: 0.01)

    // MARK: Header cap

    /// One header line of 4 MiB (curl's own per-line cap answers first), and 128 KiB of short lines
    /// (the engine's 64 KiB cap answers).
    /// The oversized headers, by name: as arguments, their text (4 MiB, 1,024 lines) would fill the
    /// test log, which names each case by its argument.
    enum OversizedHeaders: String, CaseIterable, CustomTestStringConvertible {
        case oneHugeLine, manyShortLines

        var text: String {
            switch self {
            case .oneHugeLine: "X-Huge: " + String(repeating: "a", count: 4 << 20) + "\r\n"
            case .manyShortLines: String(repeating: "X-Filler: " + String(repeating: "b", count: 118) + "\r\n", count: 1024)
            }
        }

        var testDescription: String { rawValue }
    }

    @Test(arguments: OversizedHeaders.allCases)
    func oversizedResponseHeadersAreAnUnexpectedResponseNamingTheServer(_ oversized: OversizedHeaders) async throws {
        let headers = oversized.text
        let peer = try RawHTTPPeer(response: Data(("HTTP/1.1 200 OK\r\n" + headers + "Content-Length: 5\r\n\r\nhello").utf8))
        defer { peer.stop() }
        let engine = try TransferEngine(configuration: .init(retryPolicy: Self.manyRetries))
        let sink = RecordingSink()
        let error = await #expect(throws: ResourceError.self) {
            _ = try await engine.download(TransferRequest(url: peer.url(for: "packs/a.zip")), into: sink)
        }
        #expect(error?.code == .unexpectedResponse)
        #expect(error?.message.contains("127.0.0.1:\(peer.port)") == true)
        #expect(error?.message.contains("64 KiB") == true)
        // A server that sends this will send it again: no retry, and the sink saw nothing.
        #expect(peer.requestCount == 1)
        #expect(sink.bytes.isEmpty)
    }

    @Test func headersUnderTheCapAreAccepted() async throws {
        let filler = String(repeating: "X-Filler: " + String(repeating: "c", count: 118) + "\r\n", count: 400)  // 50 KiB
        let peer = try RawHTTPPeer(response: Data(("HTTP/1.1 200 OK\r\n" + filler + "Content-Length: 5\r\n\r\nhello").utf8))
        defer { peer.stop() }
        let sink = RecordingSink()
        _ = try await TransferEngine().download(TransferRequest(url: peer.url(for: "a.bin")), into: sink)
        #expect(sink.bytes == Data("hello".utf8))
    }

    // MARK: Silence and slowness

    @Test func defaultsFailASilentServerWithinAMinute() {
        let defaults = TransferEngine.Configuration()
        // What docs/TRANSFERS.md promises.
        #expect(defaults.connectTimeout == 5)
        #expect(defaults.lowSpeedLimit == 1024)
        #expect(defaults.lowSpeedTime == 30)
        #expect(defaults.progressTimeout == 45)
        #expect(defaults.maximumHeaderBytes == 64 << 10)
        #expect(defaults.bufferLimit == 256 << 10)
        #expect(defaults.retryPolicy == .standard)
        // The last attempt's timeouts are cut to what is left (curl counts whole seconds, so up to
        // one more), and no retry starts past the progress timeout: a silent server fails by then.
        #expect(defaults.progressTimeout + 1 < 60)
    }

    @Test func silentServerFailsOnceTheProgressTimeoutIsSpent() async throws {
        let peer = try RawHTTPPeer(response: Data())
        defer { peer.stop() }
        let engine = try TransferEngine(configuration: .init(retryPolicy: Self.manyRetries, lowSpeedTime: 1, progressTimeout: 3))
        let started = ContinuousClock.now
        let error = await #expect(throws: ResourceError.self) {
            _ = try await engine.download(TransferRequest(url: peer.url(for: "packs/a.zip")), into: RecordingSink())
        }
        #expect(error?.code == .timedOut)
        // Each attempt stalls for a second; the progress timeout, not the 20 attempts, ended it.
        #expect((1...5).contains(peer.requestCount))
        #expect(ContinuousClock.now - started >= .seconds(2))
    }

    @Test func slowButMovingDownloadOutlastsTheProgressTimeout() async throws {
        let body = deterministicBytes(count: 48 << 10, seed: 41)
        try await withTestServer(files: ["packs/a.zip": body], conditions: NetworkConditions(bytesPerSecond: 8 << 10)) { server, _ in
            // 6 s at 8 KiB/s, twice the progress timeout: the bytes that keep coming keep it alive.
            let engine = try TransferEngine(configuration: .init(retryPolicy: Self.manyRetries, lowSpeedTime: 2, progressTimeout: 3))
            let sink = RecordingSink()
            var request = TransferRequest(url: server.url(for: "packs/a.zip"))
            request.expectedSHA256 = ContentHash.sha256Hex(of: body)
            let result = try await engine.download(request, into: sink)
            #expect(sink.bytes == body)
            #expect(result.attempts == 1)
        }
    }
}
