import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// `odr share` and `odr fetch --peer` as scripts use them (issue 43).
struct ShareCommandTests {
    @Test func aSecondStoreFetchesFromTheFirstOnesShareAndSaysSo() async throws {
        let fixture = try await PeerInstallTests.game(files: 2, fileBytes: 1 << 20)
        let first = try TemporaryDirectory(prefix: "odr-share-a")
        let second = try TemporaryDirectory(prefix: "odr-share-b")
        let odr = try #require(ODRExecutable.url)
        try await withTestServer(root: fixture.catalog) { cdn in
            let fetched = try await ODRExecutable.run(["fetch", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", first.url.path, "level"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            let share = try RunningProcess(odr, ["share", "--store", first.url.path, "--port", "0", "--rate", "0"])
            try await share.waitForOutput(containing: "Stop with Ctrl-C.", timeout: .seconds(60))
            let text = share.stdout
            let start = try #require(text.range(of: " at http://"))
            let end = try #require(text[start.upperBound...].firstIndex(of: " "))
            let peer = "http://" + text[start.upperBound..<end]
            cdn.clearRequests()
            let viaPeer = try await ODRExecutable.run(["fetch", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", second.url.path,
                                                       "--peer", peer, "level"])
            try await share.kill()
            #expect(viaPeer.status == 0, "\(viaPeer.stderr)")
            #expect(viaPeer.stdout.contains("from peers (\(peer)"), "\(viaPeer.stdout)")
            await cdn.waitUntilIdle()
            #expect(cdn.requests().filter { $0.target.hasPrefix("/packs/") }.reduce(0) { $0 + $1.bytesSent } == 0)
            let log = try await ODRExecutable.run(["log", "--store", second.url.path])
            #expect(log.stdout.contains("bytes from peers (\(peer)"), "\(log.stdout)")
        }
    }

    @Test func badArgumentsAreRefused() async throws {
        let store = try TemporaryDirectory(prefix: "odr-share-bad")
        let missing = try await ODRExecutable.run(["share", "--store", store.url.appending(path: "none").path])
        #expect(missing.status != 0)
        #expect(missing.stderr.contains("holds no store"))
        let peer = try await ODRExecutable.run(["fetch", "--catalog", "http://127.0.0.1:1/", "--store", store.url.path, "--peer", "file:///etc/", "level"])
        #expect(peer.status != 0)
        #expect(peer.stderr.contains("--peer"))
    }
}
