import Foundation
import ODRServe
import ODRTestSupport
import Testing

/// Each fault of the network conditioner, as a client observes it, with scheduled faults for
/// exact outcomes and seeded random ones for determinism.
struct ConditionerTests {
    @Test func scheduledStatusesAnswerTheNextRequestsThenTheFileComes() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.status(503), count: 2, path: "/catalog.json")
            let url = server.url(for: "catalog.json")
            var statuses: [Int] = []
            for _ in 0..<3 { statuses.append(try await CurlCommand.fetch(url).status) }
            #expect(statuses == [503, 503, 200])
            #expect(server.pendingFaults.isEmpty)
            await server.waitUntilIdle()
            #expect(server.requests().map(\.status) == [503, 503, 200])
            #expect(server.requests().map(\.faults) == [[.status(503)], [.status(503)], []])
        }
    }

    @Test func scheduledFaultsOnlyHitTheirPath() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.status(500), path: SampleCatalog.packPath)
            let other = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(other.status == 200)
            #expect(server.pendingFaults == [.status(500)])
            let hit = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(hit.status == 500)
        }
    }

    @Test func failRateOneAnswersEveryRequestWith503() async throws {
        try await withTestServer(files: SampleCatalog.files, conditions: NetworkConditions(failRate: 1)) { server, _ in
            for path in ["catalog.json", SampleCatalog.packPath, "missing"] {
                let response = try await CurlCommand.fetch(server.url(for: path))
                #expect(response.status == 503)
            }
        }
    }

    @Test func truncationClosesTheConnectionAfterExactlyTheScheduledBytes() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.truncate(afterBytes: 100_000), path: SampleCatalog.packPath)
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 18)  // CURLE_PARTIAL_FILE
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == String(SampleCatalog.pack.count))
            #expect(response.body == SampleCatalog.pack.prefix(100_000))
            await server.waitUntilIdle()
            let served = try #require(server.requests().last)
            #expect(served.outcome == .aborted)
            #expect(served.bytesSent == 100_000)
            #expect(served.faults == [.truncate(afterBytes: 100_000)])
        }
    }

    @Test func truncationOfARangeKeepsTheRangeBytes() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.truncate(afterBytes: 10))
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-r", "1000-1999"])
            #expect(response.exitCode == 18)
            #expect(response.status == 206)
            #expect(response.body == SampleCatalog.pack.subdata(in: 1000..<1010))
        }
    }

    @Test func bodyFaultsWaitForABodyLongEnoughToChange() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.truncate(afterBytes: 1000))
            let small = try await CurlCommand.fetch(server.url(for: SampleCatalog.smallPackPath))
            #expect(small.exitCode == 0)
            #expect(small.body == SampleCatalog.smallPack)
            #expect(server.pendingFaults == [.truncate(afterBytes: 1000)])
            let large = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(large.exitCode == 18)
            #expect(large.body.count == 1000)
        }
    }

    @Test func randomTruncationSendsLessThanAnnounced() async throws {
        let conditions = NetworkConditions(truncateRate: 1, seed: 3)
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 18)
            #expect(response.body.count < SampleCatalog.pack.count)
            #expect(response.body == SampleCatalog.pack.prefix(response.body.count))
        }
    }

    /// The server reads files 256 KiB at a time: the offsets include both sides of a chunk
    /// boundary, the first chunk and the last byte.
    @Test(arguments: [0, 123_456, 262_143, 262_144, 2_000_000, SampleCatalog.pack.count - 1])
    func corruptionInvertsExactlyTheScheduledByte(offset: Int) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.corrupt(atOffset: offset), path: SampleCatalog.packPath)
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 0)
            #expect(response.body.count == SampleCatalog.pack.count)
            var expected = SampleCatalog.pack
            expected[offset] = ~expected[offset]
            #expect(response.body == expected)
        }
    }

    @Test func randomCorruptionChangesBytesButNotTheLength() async throws {
        let conditions = NetworkConditions(corruptRate: 1, seed: 9)
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 0)
            #expect(response.body.count == SampleCatalog.pack.count)
            #expect(response.body != SampleCatalog.pack)
        }
    }

    @Test func scheduledDelayStillServesAndIsRecorded() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.delay(.milliseconds(50)))
            let response = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(response.status == 200)
            await server.waitUntilIdle()
            #expect(server.requests().first?.faults == [.delay(.milliseconds(50))])
        }
    }

    @Test func droppedConnectionGivesNoResponseAtAll() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.dropConnection)
            let response = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(response.exitCode == 52)  // CURLE_GOT_NOTHING
            #expect(response.status == 0)
            let next = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(next.status == 200)
        }
    }

    @Test func stallSendsTheFirstBytesThenNothingUntilItCloses() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.stall(afterBytes: 4096, for: .milliseconds(200)))
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 18)
            #expect(response.body == SampleCatalog.pack.prefix(4096))
        }
    }

    @Test func offlineRefusesConnectionsAndComingBackServesOnTheSamePort() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: "catalog.json")
            try await server.setConditions(NetworkConditions(offline: true))
            let refused = try await CurlCommand.fetch(url)
            #expect(refused.exitCode == 7)  // CURLE_COULDNT_CONNECT
            try await server.setConditions(.perfect)
            let served = try await CurlCommand.fetch(url)
            #expect(served.status == 200)
            #expect(served.body == SampleCatalog.catalogJSON)
        }
    }

    @Test func startingOfflineReservesAPortThatRefuses() async throws {
        try await withTestServer(files: SampleCatalog.files, conditions: NetworkConditions(offline: true)) { server, _ in
            #expect(server.port > 0)
            let refused = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(refused.exitCode == 7)
            try await server.setConditions(.perfect)
            let served = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(served.status == 200)
        }
    }

    @Test func rateLimitedBodyArrivesOverSeveralReads() async throws {
        // 4000 bytes at 2000 bytes per second go out in 100-byte slices over two seconds; the
        // client cannot receive them in one read, whatever the machine's speed.
        let body = deterministicBytes(count: 4000, seed: 5)
        let conditions = NetworkConditions(bytesPerSecond: 2000)
        try await withTestServer(files: ["slow.bin": body], conditions: conditions) { server, _ in
            let chunks = try await rawExchange(
                port: server.port,
                request: "GET /slow.bin HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            let received = chunks.reduce(Data(), +)
            let headEnd = try #require(received.range(of: Data("\r\n\r\n".utf8)))
            #expect(received[headEnd.upperBound...] == body)
            #expect(chunks.count > 1)
        }
    }

    @Test func latencyStillDeliversTheFile() async throws {
        let conditions = NetworkConditions(latency: .milliseconds(50))
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(response.status == 200)
            #expect(response.body == SampleCatalog.catalogJSON)
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func aClientLeavingDuringTheLatencyStillEndsItsRequest() async throws {
        let conditions = NetworkConditions(latency: .milliseconds(300))
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
            _ = try await rawExchange(
                port: server.port,
                request: "GET /\(SampleCatalog.packPath) HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n",
                readingResponse: false
            )
            while server.requests().isEmpty { try await Task.sleep(for: .milliseconds(10)) }
            await server.waitUntilIdle()
            #expect(server.requests().count == 1)
            #expect(server.requests().first?.outcome != .inProgress)
        }
    }

    @Test func theSameSeedMakesTheSameDecisions() async throws {
        let conditions = NetworkConditions(failRate: 0.5, truncateRate: 0.3, corruptRate: 0.3, seed: 1234)
        var runs: [[String]] = []
        for _ in 0..<2 {
            let outcomes = try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
                var outcomes: [String] = []
                for _ in 0..<12 {
                    let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.smallPackPath))
                    let intact = response.body == SampleCatalog.smallPack
                    outcomes.append("\(response.status) \(response.exitCode) \(response.body.count) \(intact)")
                }
                return outcomes
            }
            runs.append(outcomes)
        }
        #expect(runs[0] == runs[1])
        // The run mixes outcomes, so agreeing is not a coincidence of everything succeeding.
        #expect(Set(runs[0]).count > 1)
    }

    @Test func requestLogRecordsWhatWasServed() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            _ = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-r", "0-99"])
            _ = try await CurlCommand.fetch(server.url(for: "catalog.json") .absoluteString + "?v=2", ["-H", "If-None-Match: \"x\""])
            await server.waitUntilIdle()
            let requests = server.requests()
            #expect(requests.map(\.sequence) == [0, 1])
            #expect(requests[0].method == "GET")
            #expect(requests[0].target == "/" + SampleCatalog.packPath)
            #expect(requests[0].range == "bytes=0-99")
            #expect(requests[0].status == 206)
            #expect(requests[0].bytesSent == 100)
            #expect(requests[0].contentLength == 100)
            #expect(requests[0].outcome == .completed)
            #expect(requests[1].path == "/catalog.json")
            #expect(requests[1].ifNoneMatch == "\"x\"")
            #expect(requests[1].bytesSent == SampleCatalog.catalogJSON.count)
            server.clearRequests()
            #expect(server.requests().isEmpty)
        }
    }

    /// A response still being sent when the log is cleared belongs to the step before: it must
    /// not reappear when it ends (a retry test once counted the last step's mirror request).
    @Test(.timeLimit(.minutes(1)))
    func clearingTheLogForgetsAResponseStillBeingSent() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            server.injectFaults(.stall(afterBytes: 1000, for: .milliseconds(300)), path: "/" + SampleCatalog.packPath)
            let download = Task { try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath)) }
            try await waitUntil("the stalled response has sent its first bytes", timeout: .seconds(30)) {
                server.requests().first?.bytesSent == 1000
            }
            server.clearRequests()
            _ = try await download.value
            await server.waitUntilIdle()
            #expect(server.requests().isEmpty)
            let next = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            #expect(next.status == 200)
            await server.waitUntilIdle()
            #expect(server.requests().map(\.sequence) == [1])
            #expect(server.requests().map(\.path) == ["/catalog.json"])
        }
    }
}
