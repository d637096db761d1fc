import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A begin changes the state before it returns; a manager lists its catalog's tags and files; the
/// default network probe starts no process.
struct RequestBeginAndEnumerationTests {
    @Test func aBeginIsRequestedWhenItReturnsAndASecondBeginFailsAtOnce() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 400_000)
        // Slow, so that the download is still running when the second begin comes.
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 100_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["big"], manager: manager)
            let outcome = Locked<[Result<Void, ResourceError>]>([])
            let task = try request.startAccessingResources { result in outcome.withLock { $0.append(result) } }
            #expect(request.state == .requested)
            do throws(ResourceError) {
                try request.startAccessingResources { _ in Issue.record("a refused begin called back") }
                Issue.record("a second begin succeeded")
            } catch {
                #expect(error.code == .beginTwice)
            }
            // The completion-handler form is synchronous too.
            let other = ResourceRequest(tags: ["small"], manager: manager)
            let done = Locked(false)
            other.beginAccessingResources { error in
                #expect(error == nil)
                done.withLock { $0 = true }
            }
            #expect(other.state == .requested || other.state == .accessing)
            await task.value
            #expect(outcome.withLock { $0.count } == 1)
            #expect(request.state == .accessing)
            while !done.withLock({ $0 }) { await Task.yield() }
            try request.endAccessingResources()
            try other.endAccessingResources()
        }
    }

    @Test func cancellingTheTaskStartAccessingReturnedCancelsTheBegin() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 400_000)
        try await withTestServer(root: fixture.game.catalog, conditions: NetworkConditions(bytesPerSecond: 50_000)) { server in
            let manager = try fixture.manager(url: server.baseURL)
            try await manager.prepare()
            let request = ResourceRequest(tags: ["big"], manager: manager)
            let outcome = Locked<ResourceError.Code?>(nil)
            let task = try request.startAccessingResources { result in
                if case .failure(let error) = result { outcome.withLock { $0 = error.code } }
            }
            task.cancel()
            await task.value
            #expect(outcome.withLock { $0 } == .cancelled)
            #expect(request.state == .initial)
        }
    }

    @Test func theManagerListsTagsWithSizesAndTheFilesOfATag() async throws {
        let fixture = try await ManagerFixture.make(bigBytes: 10_000)
        try await withTestServer(root: fixture.game.catalog) { server in
            let manager = try fixture.manager(url: server.baseURL)
            #expect(throws: ResourceError.self) { try manager.catalogTags() }
            do throws(ResourceError) { _ = try manager.files(ofTag: "small") } catch { #expect(error.code == .catalogUnavailable) }
            try await manager.prepare()
            let manifest = try fixture.game.manifest(1)
            let tags = try manager.catalogTags()
            #expect(tags.map(\.name) == manifest.tags.map(\.name))
            let small = try #require(tags.first { $0.name == "small" })
            let packs = manifest.packs.filter { small.packs.contains($0.id) }
            #expect(small.downloadBytes == packs.reduce(0) { $0 + $1.archiveBytes })
            #expect(small.downloadBytes > 0 && small.installedBytes > 0)

            let files = try manager.files(ofTag: "small")
            #expect(files.map(\.path) == ["shared/palette.bin", "small/copy/map-again.json", "small/map.json", "small/notes.txt"].filter { path in
                manifest.files.contains { $0.path == path }
            })
            #expect(files.first { $0.path == "small/map.json" }?.size == Int64(try fixture.game.contents(of: "small/map.json").count))
            do throws(ResourceError) { _ = try manager.files(ofTag: "nope"); Issue.record("an unknown tag listed") } catch { #expect(error.code == .invalidTag) }
            // Every file listed is one a request for the tag finds.
            let request = ResourceRequest(tags: ["small"], manager: manager)
            try await request.beginAccessingResources()
            for file in files { #expect(request.path(forResource: file.path) != nil, "\(file.path)") }
            try request.endAccessingResources()
        }
    }

    @Test func theDefaultNetworkProbeAsksNetworkManagerOverTheBusAndAFixedOneTurnsProbingOff() {
        let configuration = ResourceManager.Configuration(catalogURL: URL(filePath: "/nonexistent"), storeDirectory: URL(filePath: "/nonexistent"))
        #expect(configuration.networkProbe is NetworkManagerBusProbe, "not nmcli: the default starts no process")
        #expect(FixedNetworkProbe().currentCondition() == .unmetered)
        #expect(FixedNetworkProbe(.metered).currentCondition() == .metered)
    }
}
