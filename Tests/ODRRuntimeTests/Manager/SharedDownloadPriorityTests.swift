import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A pack that several requests wait for runs at the highest of their priorities, and drops to the
/// highest of the rest when one of them stops waiting.
struct SharedDownloadPriorityTests {
    /// A transport that remembers the last priority given to any transfer of each URL.
    final class RecordingTransport: Transport {
        let base: any Transport
        private let priorities = Locked<[URL: TransferPriority]>([:])

        init(base: any Transport) { self.base = base }

        func transfer(_ request: TransferRequest, into sink: any TransferSink) -> any TransferHandle {
            priorities.withLock { $0[request.url] = request.priority }
            return RecordingHandle(base: base.transfer(request, into: sink), transport: self)
        }

        func priority(of url: URL) -> TransferPriority? { priorities.withLock { $0[url] } }

        /// Every URL a transfer was made for.
        var urls: [URL] { priorities.withLock { Array($0.keys) } }

        fileprivate func record(_ priority: TransferPriority, for url: URL) { priorities.withLock { $0[url] = priority } }
    }

    final class RecordingHandle: TransferHandle {
        let base: any TransferHandle
        let transport: RecordingTransport
        init(base: any TransferHandle, transport: RecordingTransport) {
            self.base = base
            self.transport = transport
        }
        var url: URL { base.url }
        var priority: TransferPriority { base.priority }
        var progress: TransferProgress { base.progress }
        func setPriority(_ priority: TransferPriority) {
            transport.record(priority, for: base.url)
            base.setPriority(priority)
        }
        func pause() { base.pause() }
        func resume() { base.resume() }
        func cancel() { base.cancel() }
        func outcome() async -> Result<TransferResult, ResourceError> { await base.outcome() }
    }

    struct Timeout: Error, CustomStringConvertible {
        var what: String
        var description: String { "timed out waiting for \(what)" }
    }

    /// Polls `condition` until it holds, for at most 30 s.
    static func eventually(_ what: String, _ condition: () throws -> Bool) async throws {
        let deadline = ContinuousClock.now + .seconds(30)
        while try !condition() {
            guard ContinuousClock.now < deadline else { throw Timeout(what: what) }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    @Test func aLaterLowerRequestNeverDemotesAnUrgentDownload() async throws {
        // Tags a and b share a large folder: one shared pack, which downloads slowly.
        let game = try CatalogFixture(rules: #"{ "tags": { "a": { "include": ["a", "shared"] }, "b": { "include": ["b", "shared"] } } }"#)
        try game.write("shared/world.bin", deterministicBytes(count: 4 << 20, seed: 1))
        try game.write("a/a.bin", deterministicBytes(count: 1000, seed: 2))
        try game.write("b/b.bin", deterministicBytes(count: 1000, seed: 3))
        try await game.build()
        let shared = try #require(game.manifest(1).packs.first { Set($0.tags) == ["a", "b"] })
        let stores = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: game.catalog, conditions: NetworkConditions(bytesPerSecond: 256 << 10)) { server in
            let recorder = RecordingTransport(base: try TransferEngine())
            var configuration = ResourceManager.Configuration(catalogURL: server.baseURL, storeDirectory: stores.url)
            configuration.transport = recorder
            configuration.freeSpaceWatermark = 0
            let manager = try ResourceManager(configuration: configuration)
            try await manager.prepare()
            let sharedURL = server.baseURL.appending(path: "packs/\(shared.id).zip")

            let urgent = ResourceRequest(tags: ["a"], manager: manager)
            urgent.loadingPriority = .urgent
            let first = Task { try await urgent.beginAccessingResources() }
            try await Self.eventually("the shared pack's transfer") { recorder.priority(of: sharedURL) == .urgent }

            let background = ResourceRequest(tags: ["b"], manager: manager)
            background.loadingPriority = .loading(0.1)
            let second = Task { try await background.beginAccessingResources() }
            try await Self.eventually("b to begin") { background.state == .requested }
            #expect(recorder.priority(of: sharedURL) == .urgent, "b's 0.1 must not demote the download a waits for")
            background.loadingPriority = .loading(0.4)
            #expect(recorder.priority(of: sharedURL) == .urgent)

            // a stops waiting: the download drops to b's priority.
            urgent.progress.cancel()
            _ = await first.result
            try await Self.eventually("the shared pack to drop to b's priority") { recorder.priority(of: sharedURL) == .loading(0.4) }
            background.progress.cancel()
            _ = await second.result
        }
    }
}
