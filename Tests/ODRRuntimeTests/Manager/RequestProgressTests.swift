import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A request's progress as a loading screen shows it, over the conditioned loopback server: bytes as
/// they arrive, never back, each value once, held bytes counted as done, a stream that finishes when
/// the request is usable or fails, and a lost connection that is seen at once.
struct RequestProgressTests {
    typealias Snapshot = ResourceRequest.ProgressSnapshot

    /// One tag, `level`, in one pack of `bytes` incompressible bytes (a stored entry).
    static func fixture(bytes: Int) async throws -> ManagerFixture {
        try await ManagerFixture.onePackPerTag(["level"], bytes: bytes, rules: """
            { "tags": { "level": { "include": ["level"] } } }
            """)
    }

    /// What one stream of a request yielded, with when each value arrived, and when it finished.
    final class Recording: Sendable {
        let values = Locked<[(at: ContinuousClock.Instant, value: Snapshot)]>([])
        let end = Locked<ContinuousClock.Instant?>(nil)
        private let task = Locked<Task<Void, Never>?>(nil)

        /// Follows a stream of `request` read now.
        init(_ request: ResourceRequest) {
            let updates = request.progressUpdates
            let task = Task { [values, end] in
                for await value in updates { values.withLock { $0.append((.now, value)) } }
                end.withLock { $0 = .now }
            }
            self.task.withLock { $0 = task }
        }

        var snapshots: [Snapshot] { values.withLock { $0.map(\.value) } }
        var finished: Bool { end.withLock { $0 } != nil }

        /// Values never go back and none repeats.
        func expectOrdered(sourceLocation: SourceLocation = #_sourceLocation) {
            let snapshots = self.snapshots
            for (before, after) in zip(snapshots, snapshots.dropFirst()) {
                #expect(after != before, "a value repeats: \(after)", sourceLocation: sourceLocation)
                #expect(after.completedBytes >= before.completedBytes && after.fractionCompleted >= before.fractionCompleted,
                        "progress went back: \(before) -> \(after)", sourceLocation: sourceLocation)
            }
        }
    }

    @Test func at8KiBPerSecondProgressRisesWithinTheFirstSecond() async throws {
        let fixture = try await Self.fixture(bytes: 96 << 10)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            try await server.setConditions(NetworkConditions(bytesPerSecond: 8 << 10))
            let request = ResourceRequest(tags: ["level"], manager: manager)
            let recording = Recording(request)
            let started = ContinuousClock.now
            let begin = Task { try await request.beginAccessingResources() }
            try await waitUntil("two values with bytes", timeout: .seconds(30)) {
                recording.snapshots.filter { $0.completedBytes > 0 }.count >= 2
            }
            let rises = recording.values.withLock { $0.filter { $0.value.completedBytes > 0 } }
            // 96 KiB take 12 s at this rate: before, the first value came with the first 64 KiB (8 s).
            // The target is a second; the margin is for a test machine busy with other suites.
            #expect(started.duration(to: rises[0].at) < .seconds(2), "the first bytes show at once")
            #expect(rises[0].at.duration(to: rises[1].at) < .seconds(2), "and the next ones soon after")
            #expect(rises[0].value.completedBytes <= 16 << 10, "values come with the bytes, not in big steps")
            #expect(rises[1].value.completedBytes < 32 << 10, "values come with the bytes, not in big steps")
            try request.endAccessingResources()
            _ = await begin.result
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            recording.expectOrdered()
        }
    }

    @Test func at64KiBPerSecondValuesComeSteadilyAndTheStreamFinishesWhenUsable() async throws {
        let fixture = try await Self.fixture(bytes: 192 << 10)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            try await server.setConditions(NetworkConditions(bytesPerSecond: 64 << 10))
            let request = ResourceRequest(tags: ["level"], manager: manager)
            let recording = Recording(request)
            // When each value is made: a stream that is read late keeps only the newest value, so
            // the times a busy consumer sees them measure the test machine, not the runtime.
            let made = Locked<[ContinuousClock.Instant]>([])
            _ = request.observeProgress { value in
                if value.completedBytes > 0, value.fractionCompleted < 1 { made.withLock { $0.append(.now) } }
            }
            try await request.beginAccessingResources()
            let usable = ContinuousClock.now
            // The stream finishes by itself, without the request ending (the target is 100 ms; the
            // stream is finished before the begin returns, and the margin is for a busy machine).
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            let finished = try #require(recording.end.withLock { $0 })
            #expect(usable.duration(to: finished) < .milliseconds(500))
            #expect(request.state == .accessing)

            let values = recording.values.withLock { $0 }
            #expect(values.last?.value.fractionCompleted == 1)
            #expect(values.last?.value.completedBytes == values.last?.value.totalBytes)
            let times = made.withLock { $0 }
            let gaps = zip(times, times.dropFirst()).map { $0.duration(to: $1) }.sorted()
            // 3 s of bytes: a value at least every 100 ms or 16 KiB (250 ms at this rate); before,
            // values came every 64 KiB, a second apart. On an idle machine every gap is 100 ms; the
            // median (not the longest gap) is held to 250 ms, as a machine busy with other suites
            // delays a few of them.
            #expect(times.count >= 10, "\(times.count) values in 3 s")
            #expect(gaps.isEmpty || gaps[gaps.count / 2] <= .milliseconds(250), "gaps: \(gaps)")
            #expect(values.filter { $0.value.completedBytes > 0 && $0.value.fractionCompleted < 1 }.count >= 6,
                    "the stream yields them too")
            recording.expectOrdered()
            #expect(request.progress.fractionCompleted == 1)
        }
    }

    @Test func theStreamFinishesWhenTheBeginFails() async throws {
        let fixture = try await Self.fixture(bytes: 64 << 10)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            // The pack is gone from the server: 404, which is not retried.
            try FileManager.default.removeItem(at: fixture.game.catalog.appending(path: String(try fixture.packPath(ofTag: "level").dropFirst())))
            let request = ResourceRequest(tags: ["level"], manager: manager)
            let recording = Recording(request)
            let error = await #expect(throws: ResourceError.self) { try await request.beginAccessingResources() }
            #expect(error?.code == .resourceUnavailable)
            let failed = ContinuousClock.now
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            #expect(failed.duration(to: try #require(recording.end.withLock { $0 })) < .milliseconds(500))
            #expect(request.state == .initial)

            // A begin that fails at once (an unknown tag) finishes its stream too.
            let unknown = ResourceRequest(tags: ["nope"], manager: manager)
            let early = Recording(unknown)
            await #expect(throws: ResourceError.self) { try await unknown.beginAccessingResources() }
            try await waitUntil("the stream finished", timeout: .seconds(10)) { early.finished }
        }
    }

    @Test(.timeLimit(.minutes(1))) func aLostConnectionIsAnEventWithinASecondAndTheProgressSaysStalled() async throws {
        let fixture = try await Self.fixture(bytes: 256 << 10)
        let pack = try #require(try fixture.game.manifest(1).packs.first).id
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let events = manager.events()
            let retried = Locked<(at: ContinuousClock.Instant, event: ResourceManagerEvent)?>(nil)
            let watcher = Task {
                for await event in events {
                    if case .downloadRetrying = event { retried.withLock { $0 = $0 ?? (.now, event) } }
                }
            }
            defer { watcher.cancel() }
            try await server.setConditions(NetworkConditions(bytesPerSecond: 64 << 10))
            let request = ResourceRequest(tags: ["level"], manager: manager)
            let recording = Recording(request)
            let begin = Task { try await request.beginAccessingResources() }
            try await waitUntil("the first bytes", timeout: .seconds(30)) { request.progressSnapshot.completedBytes > 16 << 10 }

            // The server goes away mid-download: its port closes and the connection drops.
            let lost = ContinuousClock.now
            try await server.setConditions(NetworkConditions(bytesPerSecond: 64 << 10, offline: true))
            try await waitUntil("the retry event", timeout: .seconds(10)) { retried.withLock { $0 } != nil }
            let (at, event) = try #require(retried.withLock { $0 })
            // At once on an idle machine; the target is a second, the margin is for a busy one.
            #expect(lost.duration(to: at) < .seconds(2), "the event came \(lost.duration(to: at)) after the connection was lost")
            guard case let .downloadRetrying(packID, reason, attempt, nextAttempt) = event else { return }
            #expect(packID == pack)
            #expect(reason == .networkUnavailable)
            #expect(attempt >= 1)
            #expect(nextAttempt.timeIntervalSinceNow < 31, "the next attempt is within the retry policy's delays")
            // The progress says so too, in the snapshot and the stream.
            try await waitUntil("a stalled value", timeout: .seconds(2)) { request.progressSnapshot.isStalled }
            #expect(request.progressSnapshot.retry?.code == .networkUnavailable)
            #expect(recording.snapshots.contains { $0.isStalled })

            // Back online: the download goes on from where it stopped, and is not stalled any more.
            try await server.setConditions(.perfect)
            try await begin.value
            #expect(!request.progressSnapshot.isStalled)
            #expect(request.progressSnapshot.completedBytes == request.progressSnapshot.totalBytes)
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            #expect(recording.snapshots.last?.isStalled == false)
            recording.expectOrdered()
        }
    }

    @Test func aResumedDownloadStartsFromTheBytesAlreadyKept() async throws {
        let fixture = try await Self.fixture(bytes: 256 << 10)
        let pack = try #require(try fixture.game.manifest(1).packs.first).id
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            try await server.setConditions(NetworkConditions(bytesPerSecond: 64 << 10))
            // A first request stops part way: its download is cancelled, and staging keeps the bytes.
            let first = ResourceRequest(tags: ["level"], manager: manager)
            let begin = Task { try await first.beginAccessingResources() }
            try await waitUntil("96 KiB", timeout: .seconds(30)) { first.progressSnapshot.completedBytes >= 96 << 10 }
            try first.endAccessingResources()
            _ = await begin.result
            try await waitUntil("the download wound down", timeout: .seconds(30)) { manager.state.withLock { $0.downloads[pack] == nil } }
            let entry = manager.store.stagingURL.appending(path: "\(pack).d/level/data.bin")
            let kept = try #require(try FileManager.default.attributesOfItem(atPath: entry.path)[.size] as? Int)
            #expect(kept >= 64 << 10)

            // The next request counts them as done before any new byte arrives, and counts each byte once.
            try await server.setConditions(.perfect)
            let second = ResourceRequest(tags: ["level"], manager: manager)
            let recording = Recording(second)
            try await second.beginAccessingResources()
            try await waitUntil("the stream finished", timeout: .seconds(10)) { recording.finished }
            let firstCounted = try #require(recording.snapshots.first { $0.completedBytes > 0 })
            #expect(firstCounted.completedBytes >= Int64(kept))
            #expect(recording.snapshots.last?.completedBytes == second.progressSnapshot.totalBytes)
            recording.expectOrdered()
        }
    }
}
