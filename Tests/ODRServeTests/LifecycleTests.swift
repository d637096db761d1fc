import Foundation
import ODRServe
import ODRTestSupport
import Testing

/// Many clients at once, kept-alive connections, and stopping or going offline mid-response.
struct LifecycleTests {
    @Test func concurrentDownloadsAreEachIntact() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: SampleCatalog.packPath)
            let bodies = try await withThrowingTaskGroup(of: Data.self) { group in
                for index in 0..<16 {
                    group.addTask {
                        let range = index.isMultiple(of: 2) ? [] : ["-r", "\(index * 1000)-\(index * 1000 + 999)"]
                        return try await CurlCommand.fetch(url, range).body
                    }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(bodies.filter { $0 == SampleCatalog.pack }.count == 8)
            #expect(bodies.filter { $0.count == 1000 }.allSatisfy { SampleCatalog.pack.range(of: $0) != nil })
        }
    }

    @Test func requestsOnOneConnectionShareItsName() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let pipelined = "GET /catalog.json HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n"
                + "GET /\(SampleCatalog.smallPackPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            let received = try await rawExchange(port: server.port, request: pipelined).reduce(Data(), +)
            #expect(received.range(of: SampleCatalog.catalogJSON) != nil)
            #expect(received.range(of: SampleCatalog.smallPack) != nil)
            _ = try await CurlCommand.fetch(server.url(for: "catalog.json"))
            await server.waitUntilIdle()
            let connections = server.requests().map(\.connection)
            #expect(connections.count == 3)
            #expect(connections[0] == connections[1])
            #expect(connections[1] != connections[2])
        }
    }

    @Test(.timeLimit(.minutes(1)))
    func stoppingEndsAStalledResponse() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-stall")
        try SampleCatalog.pack.write(to: directory.appending("pack.zip"))
        let server = try await CatalogServer.start(root: directory.url, logger: testServerLogger())
        server.injectFaults(.stall(afterBytes: 1000, for: .seconds(3600)))
        let download = Task { try await CurlCommand.fetch(server.url(for: "pack.zip")) }
        while server.requests().first?.bytesSent != 1000 { try await Task.sleep(for: .milliseconds(10)) }
        await server.stop()
        let response = try await download.value
        #expect(response.exitCode != 0)
        #expect(response.body == SampleCatalog.pack.prefix(1000))
        #expect(server.requests().first?.outcome == .aborted)
    }

    @Test(.timeLimit(.minutes(1)))
    func goingOfflineCutsAResponseInProgress() async throws {
        let conditions = NetworkConditions(bytesPerSecond: 64 * 1024)
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, _ in
            let download = Task { try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath)) }
            while server.requests().first?.status != 200 { try await Task.sleep(for: .milliseconds(10)) }
            try await server.setConditions(NetworkConditions(offline: true))
            let response = try await download.value
            #expect(response.exitCode != 0)
            #expect(response.body.count < SampleCatalog.pack.count)
            #expect(response.body == SampleCatalog.pack.prefix(response.body.count))
            await server.waitUntilIdle()
            #expect(server.requests().first?.outcome == .aborted)
        }
    }

    @Test func conditionsChangeWhileServing() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: "catalog.json")
            #expect(try await CurlCommand.fetch(url).status == 200)
            try await server.setConditions(NetworkConditions(failRate: 1))
            #expect(server.conditions.failRate == 1)
            #expect(try await CurlCommand.fetch(url).status == 503)
            try await server.setConditions(.perfect)
            #expect(try await CurlCommand.fetch(url).status == 200)
        }
    }

    @Test func invalidConditionsAreRejectedAndChangeNothing() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            await #expect(throws: ServeError.self) {
                try await server.setConditions(NetworkConditions(truncateRate: 2))
            }
            #expect(server.conditions == .perfect)
        }
    }

    @Test func startingOnAMissingDirectoryFails() async throws {
        let error = await #expect(throws: ServeError.self) {
            _ = try await CatalogServer.start(root: URL(filePath: "/nonexistent/odr-catalog"))
        }
        #expect(error?.code == .catalogNotFound)
    }

    @Test func startingOnABusyPortFails() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, directory in
            let error = await #expect(throws: ServeError.self) {
                _ = try await CatalogServer.start(root: directory.url, port: server.port, logger: testServerLogger())
            }
            #expect(error?.code == .bindFailed)
        }
    }
}
