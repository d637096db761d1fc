import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Byte-range transfers (``TransferRequest/byteRange``) against the loopback server, a server that
/// ignores `Range`, and `file://` URLs.
///
/// Every test checks the bytes the sink holds and what the servers saw: a range answered wrongly must
/// fail before the sink receives anything.
struct RangeTransferTests {
    private func engine() throws -> TransferEngine {
        try TransferEngine(configuration: .init(retryPolicy: HTTPTransferTests.fastRetries))
    }

    /// A request for `range` of `url` that expects exactly the slice `body[range]`.
    private func request(_ url: URL, _ range: Range<Int64>, of body: Data) -> TransferRequest {
        let slice = body[Int(range.lowerBound)..<Int(range.upperBound)]
        return TransferRequest(url: url, expectedSize: Int64(slice.count), expectedSHA256: ContentHash.sha256Hex(of: slice),
                               byteRange: range)
    }

    private func slice(_ body: Data, _ range: Range<Int64>) -> Data {
        Data(body[Int(range.lowerBound)..<Int(range.upperBound)])
    }

    // MARK: Served ranges

    @Test func rangeInTheMiddleDeliversExactlyThoseBytes() async throws {
        let body = deterministicBytes(count: 1024 * 1024, seed: 40)
        let range: Range<Int64> = 300_000..<700_123
        try await withTestServer(files: ["packs/a.zip": body]) { server, _ in
            let sink = RecordingSink()
            let result = try await engine().download(request(server.url(for: "packs/a.zip"), range, of: body), into: sink)

            #expect(sink.bytes == slice(body, range))
            #expect(result.bytes == 400_123)
            #expect(result.statusCode == 206)
            #expect(result.resumedBytes == 0)
            #expect(sink.heads.map(\.offset) == [0])
            #expect(sink.heads.first?.totalBytes == 400_123)
            await server.waitUntilIdle()
            #expect(server.requests().map(\.range) == ["bytes=300000-700122"])
            #expect(server.requests().map(\.ifRange) == [nil])
        }
    }

    @Test func currentIfRangeValidatorsAreSentAndTheRangeArrives() async throws {
        let body = deterministicBytes(count: 200_000, seed: 41)
        let range: Range<Int64> = 1000..<151_000
        try await withTestServer(files: ["a.bin": body]) { server, _ in
            let engine = try engine()
            let url = server.url(for: "a.bin")
            let planned = try await engine.download(TransferRequest(url: url), into: RecordingSink()).validators
            var ranged = request(url, range, of: body)
            ranged.ifRange = planned
            let sink = RecordingSink()
            _ = try await engine.download(ranged, into: sink)

            #expect(sink.bytes == slice(body, range))
            await server.waitUntilIdle()
            let last = try #require(server.requests().last)
            #expect(last.status == 206)
            #expect(last.ifRange == planned.entityTag)
            #expect(last.ifRange != nil)
        }
    }

    @Test func truncatedRangeResumesWithinTheRange() async throws {
        let body = deterministicBytes(count: 1024 * 1024, seed: 42)
        let range: Range<Int64> = 200_000..<800_000
        try await withTestServer(files: ["packs/a.zip": body]) { server, _ in
            server.injectFaults(.truncate(afterBytes: 100_000), path: "/packs/a.zip")
            let sink = RecordingSink()
            let result = try await engine().download(request(server.url(for: "packs/a.zip"), range, of: body), into: sink)

            #expect(sink.bytes == slice(body, range))
            #expect(result.bytes == 600_000)
            #expect(result.attempts == 2)
            #expect(result.resumedBytes == 100_000)
            #expect(sink.heads.map(\.offset) == [0, 100_000])
            await server.waitUntilIdle()
            let requests = server.requests()
            #expect(requests.map(\.status) == [206, 206])
            #expect(requests.map(\.range) == ["bytes=200000-799999", "bytes=300000-799999"])
            #expect(requests.last?.ifRange == result.validators.entityTag)
            #expect(requests.last?.ifRange != nil)
        }
    }

    @Test func heldBytesContinueTheRange() async throws {
        let body = deterministicBytes(count: 300_000, seed: 43)
        let range: Range<Int64> = 100_000..<250_000
        try await withTestServer(files: ["a.bin": body]) { server, _ in
            let engine = try engine()
            let url = server.url(for: "a.bin")
            let validators = try await engine.download(TransferRequest(url: url), into: RecordingSink()).validators
            let sink = RecordingSink(heldBytes: slice(body, 100_000..<150_000), heldValidators: validators)
            let result = try await engine.download(request(url, range, of: body), into: sink)

            #expect(sink.bytes == slice(body, range))
            #expect(result.bytes == 150_000)
            #expect(result.resumedBytes == 50_000)
            #expect(sink.heads.map(\.offset) == [50_000])
            await server.waitUntilIdle()
            #expect(server.requests().last?.range == "bytes=150000-249999")
        }
    }

    // MARK: Ranges the server does not serve exactly

    @Test func staleIfRangeGetsTheWholeFileAndFailsWithoutTouchingTheSink() async throws {
        let body = deterministicBytes(count: 2 * 1024 * 1024, seed: 44)
        // Paced, so sending the whole file would take seconds: the engine must hang up at once.
        let paced = NetworkConditions(bytesPerSecond: 512 * 1024)
        try await withTestServer(files: ["packs/a.zip": body], conditions: paced) { server, _ in
            var ranged = request(server.url(for: "packs/a.zip"), 1000..<2000, of: body)
            ranged.ifRange = TransferValidators(entityTag: "\"stale\"")
            let sink = RecordingSink()
            let error = await #expect(throws: ResourceError.self) {
                try await engine().download(ranged, into: sink)
            }

            #expect(error?.code == .rangeNotSupported)
            #expect(error?.url == ranged.url)
            #expect(sink.bytes.isEmpty)
            #expect(sink.heads.isEmpty)
            #expect(sink.failure?.code == .rangeNotSupported)
            await server.waitUntilIdle()
            let requests = server.requests()
            #expect(requests.map(\.status) == [200])
            #expect(requests.map(\.ifRange) == ["\"stale\""])
            #expect(requests.map(\.outcome) == [.aborted])
            #expect((requests.first?.bytesSent ?? .max) < body.count)
        }
    }

    /// Past the end the server answers 416; overlapping the end, 206 with the shorter range it has.
    @Test(arguments: [(Int64(10_000)..<10_010, 416), (Int64(9_990)..<10_010, 206)])
    func rangeBeyondTheEndOfTheFileFails(range: Range<Int64>, status: Int) async throws {
        let body = deterministicBytes(count: 10_000, seed: 45)
        try await withTestServer(files: ["a.bin": body]) { server, _ in
            let sink = RecordingSink()
            let error = await #expect(throws: ResourceError.self) {
                try await engine().download(TransferRequest(url: server.url(for: "a.bin"), byteRange: range), into: sink)
            }

            #expect(error?.code == .rangeNotSupported)
            #expect(sink.bytes.isEmpty)
            #expect(sink.heads.isEmpty)
            await server.waitUntilIdle()
            #expect(server.requests().map(\.status) == [status])
        }
    }

    @Test func serverThatIgnoresRangeFailsAndTheSinkGetsNothing() async throws {
        let directory = try TemporaryDirectory()
        let body = deterministicBytes(count: 2 * 1024 * 1024, seed: 46)
        try body.write(to: directory.appending("a.bin"))
        let log = try await withPlainHTTPServer(serving: directory.url) { server in
            let sink = RecordingSink()
            let error = await #expect(throws: ResourceError.self) {
                try await engine().download(request(server.url(for: "a.bin"), 5000..<6000, of: body), into: sink)
            }
            #expect(error?.code == .rangeNotSupported)
            #expect(sink.bytes.count == 0)
            #expect(sink.heads.isEmpty)
        }
        // One request: a server that ignores Range would ignore it again, so there is no retry.
        #expect(log.components(separatedBy: "\"GET /a.bin ").count - 1 == 1)
        #expect(log.contains("\"GET /a.bin HTTP/1.1\" 200"))
    }

    @Test func emptyRangeFailsWithoutARequest() async throws {
        try await withTestServer(files: ["a.bin": Data("abc".utf8)]) { server, _ in
            let sink = RecordingSink()
            let error = await #expect(throws: ResourceError.self) {
                try await engine().download(TransferRequest(url: server.url(for: "a.bin"), byteRange: 2..<2), into: sink)
            }
            // A caller's mistake, not the server's doing.
            #expect(error?.code == .invalidArgument)
            #expect(sink.heads.isEmpty)
            await server.waitUntilIdle()
            #expect(server.requests().isEmpty)
        }
    }

    // MARK: file:// URLs

    @Test func fileURLRangeDeliversTheSlice() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.appending("source.bin")
        // Longer than the delivery's 1 MiB read chunk, so the range spans several reads.
        let body = deterministicBytes(count: 3 * 1024 * 1024, seed: 47)
        try body.write(to: source)
        let range: Range<Int64> = 1_000_001..<2_500_000
        let destination = directory.appending("slice.bin")

        let result = try await engine().download(request(source, range, of: body), into: FileSink(url: destination))

        #expect(try Data(contentsOf: destination) == slice(body, range))
        #expect(result.bytes == 1_499_999)
        #expect(result.statusCode == 0)
    }

    @Test(arguments: [Int64(990)..<1010, Int64(1000)..<1001, Int64(5)..<5, Int64(-1)..<10])
    func fileURLRangeOutsideTheFileFails(range: Range<Int64>) async throws {
        let directory = try TemporaryDirectory()
        let source = directory.appending("source.bin")
        try deterministicBytes(count: 1000, seed: 48).write(to: source)
        let sink = RecordingSink()
        let error = await #expect(throws: ResourceError.self) {
            try await engine().download(TransferRequest(url: source, byteRange: range), into: sink)
        }
        // Empty or negative ranges are the caller's mistake; ranges past the end, the file's.
        #expect(error?.code == (range.isEmpty || range.lowerBound < 0 ? .invalidArgument : .rangeNotSupported))
        #expect(sink.heads.isEmpty)
        #expect(sink.bytes.isEmpty)
    }
}
