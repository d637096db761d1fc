import Foundation
import ODRServe
import ODRTestSupport
import Testing

/// The example engine loop (Examples/c-game/game.c), built with `cc` against libodr and run against
/// the sample game served on loopback, built as `odrpack build` builds it (split metadata).
@Suite(.enabled(if: builtLibrary(product: "odrc") != nil, "libodrc.so is not built"))
struct CGameTests {
    @Test func theCGamePlaysEveryLevelAndReadsTheRealFilesOfEach() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-game")
        let catalog = try await CProgram.sampleCatalog(in: directory, splitMetadata: nil)
        let game = try await CProgram.build("Examples/c-game/game.c", in: directory)
        let store = directory.appending("store")
        // Slow enough that level 5 (half a megabyte) cannot arrive in the three frames level 4 plays.
        let conditions = NetworkConditions(bytesPerSecond: 150_000)
        let result = try await withTestServer(root: catalog, conditions: conditions) { server in
            try await runCommandOffPool(game.path, [server.baseURL.absoluteString, store.path])
        }
        #expect(result.status == 0, "the game failed:\n\(result.stderr)\n\(result.stdout)")
        let lines = result.stdout.split(separator: "\n").map(String.init)

        #expect(lines.contains("prepared catalog version 1"))
        #expect(lines.contains("event: catalog version 1"))
        #expect(lines.contains { $0.hasPrefix("tag level5: ") }, "the game lists the catalog's tags")
        #expect(lines.contains { $0.hasPrefix("event: installed ") })
        for level in 1...5 {
            let accessing = try #require(lines.firstIndex(of: "level \(level): accessing"), "level \(level) never accessing")
            let read = try #require(lines.firstIndex { $0.hasPrefix("read \(level): ") }, "level \(level) not read")
            #expect(accessing < read)
            #expect(lines.contains("level \(level): played"))
            let ended = try #require(lines.firstIndex(of: "level \(level): ended"), "level \(level) never ended")
            #expect(read < ended)

            // The bytes the game read are the sample game's file, and so is the installed file.
            let resource = "Levels/Level\(level)/map.json"
            let original = try Data(contentsOf: CProgram.packageRoot.appending(path: "SampleAssets/\(resource)"))
            let fields = try #require(Self.fields(of: lines[read]))
            #expect(fields["resource"] == resource)
            #expect(fields["bytes"] == "\(original.count)")
            #expect(fields["fnv1a64"] == Self.fnv1a64(original))
            let path = try #require(fields["path"])
            #expect(path.hasPrefix(store.path))
            #expect(try Data(contentsOf: URL(filePath: path)) == original)
        }
        // Level 5 was prefetched at a low priority but not ready: the player waited, urgently.
        #expect(lines.contains("level 5: began at priority low"))
        #expect(lines.contains("level 5: player waiting, priority urgent"))
        let loading = lines.filter { $0.hasPrefix("level 5: loading ") }
        #expect(!loading.isEmpty)
        #expect(lines.last == "played 5 levels")
    }

    /// `read <n>: <resource> bytes=<size> fnv1a64=<hex> path=<path>` as a dictionary.
    static func fields(of line: String) -> [String: String]? {
        let parts = line.split(separator: " ", maxSplits: 5).map(String.init)
        guard parts.count == 6, parts[0] == "read" else { return nil }
        var fields = ["resource": parts[2]]
        for part in parts[3...] {
            guard let equals = part.firstIndex(of: "=") else { return nil }
            fields[String(part[..<equals])] = String(part[part.index(after: equals)...])
        }
        return fields
    }

    static func fnv1a64(_ data: Data) -> String {
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in data { hash = (hash ^ UInt64(byte)) &* 0x100_0000_01b3 }
        return String(format: "%016llx", hash)
    }
}
