import Foundation
import ODRFormat
import ODRServe
import ODRTestSupport
import Testing

/// The C API's request progress checked from C (Tests/ODRCAPITests/C/progress_checks.c): the progress
/// callback, its lifetime, odr_request_stalled and ODR_EVENT_DOWNLOAD_RETRYING.
@Suite(.enabled(if: builtLibrary(product: "odrc") != nil, "libodrc.so is not built"))
struct CProgressCallbackTests {
    @Test func theProgressCallbackFollowsTheBytesAndStopsWhenTheRequestGoes() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-progress")
        let game = try CatalogFixture(rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] }, "d": { "include": ["d"] } } }
            """)
        for (index, tag) in ["a", "b", "c", "d"].enumerated() {
            try game.write("\(tag)/data.bin", deterministicBytes(count: 96 << 10, seed: UInt64(index + 1)))
        }
        try await game.build()
        let cut = try #require(try game.manifest(1).packs.first { $0.tags == ["d"] }).id
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/progress_checks.c", in: directory)
        let result = try await withTestServer(root: game.catalog, conditions: NetworkConditions(bytesPerSecond: 64 << 10)) { server in
            // d's first download breaks off after 8 KiB, as when the connection is lost.
            server.injectFaults(.truncate(afterBytes: 8 << 10), path: "/packs/\(cut).zip")
            return try await runCommandOffPool(checks.path, [server.baseURL.absoluteString, directory.appending("store").path])
        }
        let lines = CProgram.checkedLines(result, of: "progress_checks")
        for name in ["the callback runs as bytes arrive", "values never go back or repeat", "no call after odr_request_end returned",
                     "no call after odr_request_destroy returned", "no call after destroy from inside the callback",
                     "the retry was an ODR_EVENT_DOWNLOAD_RETRYING with its reason and delay",
                     "odr_request_stalled said stalled, with the time to the next attempt", "a version 2 event is filled only up to its own end"] {
            #expect(lines.contains("ok \(name)"), "missing check: \(name)")
        }
    }
}
