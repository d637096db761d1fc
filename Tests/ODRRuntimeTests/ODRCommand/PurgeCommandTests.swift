import Foundation
import ODRFormat
import ODRRuntime
import ODRTestSupport
import Testing

/// `odr purge`, `odr log` and the purging `odr fetch` does, run as a script would.
@Suite(.enabled(if: ODRExecutable.url != nil))
struct PurgeCommandTests {
    struct Plan: Decodable {
        struct Pack: Decodable { var id: String; var reason: String; var bytes: Int64; var tags: [String]; var superseded: Bool; var lastUsedAt: Double? }
        var dryRun: Bool; var bytesNeeded: Int64; var bytesFreed: Int64; var shortfall: Int64; var packs: [Pack]; var inUse: [String]
    }
    struct LogLine: Decodable { var time: Double; var kind: String; var packID: String; var bytes: Int64; var reason: String }
    struct Fetch: Decodable {
        struct Purged: Decodable { var id: String; var bytes: Int64; var reason: String }
        var installed: [String]; var downloadedBytes: Int64; var purged: [Purged]
    }

    static let tags = ["a", "b", "c"]

    @Test func dryRunListsThePlanWithReasonsAndTheRealPurgeDoesThatAndLogsIt() async throws {
        let fixture = try await ManagerFixture.onePackPerTag(Self.tags, bytes: 50_000, rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] } } }
            """)
        let store = fixture.stores.appending("store").path
        let common = ["--catalog", fixture.game.catalog.path, "--store", store]
        for tag in Self.tags { #expect(try await ODRExecutable.run(["fetch"] + common + [tag]).status == 0) }
        let packOfTag = Dictionary(uniqueKeysWithValues: try fixture.game.manifest(1).packs.map { ($0.tags[0], $0.id) })

        let dry = try await ODRExecutable.run(["purge"] + common + ["--bytes", "60000", "--dry-run", "--json"])
        #expect(dry.status == 0, "\(dry.stderr)")
        let plan = try JSONDecoder().decode(Plan.self, from: Data(dry.stdout.utf8))
        #expect(plan.dryRun && plan.bytesNeeded == 60_000 && plan.shortfall == 0 && plan.inUse.isEmpty)
        #expect(plan.bytesFreed >= 60_000 && plan.bytesFreed == plan.packs.reduce(0) { $0 + $1.bytes })
        #expect(!plan.packs.isEmpty && plan.packs.count < 3, "enough, not everything")
        for pack in plan.packs {
            #expect(pack.tags.count == 1 && packOfTag[pack.tags[0]] == pack.id && !pack.superseded)
            #expect(!pack.reason.isEmpty && pack.bytes >= 50_000 && pack.lastUsedAt != nil)
        }
        let installed = try ResourceStore(directory: URL(filePath: store)).installedPackIDs()
        #expect(installed == Set(packOfTag.values), "a dry run deletes nothing")

        let text = try await ODRExecutable.run(["purge"] + common + ["--bytes", "60000", "--dry-run"])
        let lines = text.stdout.split(separator: "\n")
        #expect(lines.first?.hasPrefix("would purge \(plan.packs.count) pack(s), ") == true, "\(text.stdout)")
        for (line, pack) in zip(lines.dropFirst(), plan.packs) {
            #expect(line.hasPrefix("  \(pack.id.prefix(12))  \(pack.reason)") && line.contains("last used ") && line.hasSuffix(pack.tags[0]), "\(line)")
        }

        let real = try await ODRExecutable.run(["purge"] + common + ["--bytes", "60000", "--json"])
        let done = try JSONDecoder().decode(Plan.self, from: Data(real.stdout.utf8))
        #expect(!done.dryRun && done.packs.map(\.id) == plan.packs.map(\.id), "the purge does what the dry run showed")
        for pack in done.packs { #expect(!FileManager.default.fileExists(atPath: "\(store)/packs/\(pack.id)")) }

        let log = try await ODRExecutable.run(["log", "--store", store, "--json"])
        #expect(log.status == 0, "\(log.stderr)")
        let logged = try JSONDecoder().decode([LogLine].self, from: Data(log.stdout.utf8))
        // The first fetch followed the catalog: its `catalog` line is the oldest.
        #expect(logged.last.map { [$0.kind, $0.packID] } == ["catalog", "catalog.json"] && logged.last?.reason.hasPrefix("followed: version 1 (serial ") == true,
                "\(logged)")
        let entries = logged.filter { $0.kind != "catalog" }
        #expect(entries.count == 3 + done.packs.count)
        #expect(entries.prefix(done.packs.count).map { [$0.kind, $0.packID, $0.reason] }
                == done.packs.reversed().map { ["purge", $0.id, "\($0.reason) (tags: \($0.tags.joined(separator: ", ")))"] },
                "newest first, with the planner's reasons and the tags")
        #expect(entries.suffix(3).map(\.packID) == Self.tags.reversed().map { packOfTag[$0]! })
        for (line, tag) in zip(entries.suffix(3), Self.tags.reversed()) {
            #expect(line.kind == "install" && line.reason.hasPrefix("tags \(tag): ") && !line.reason.contains(": 0 bytes received")
                    && line.reason.contains(" 0 reused from the store") && line.reason.contains("; downloaded from file://"), "\(line)")
        }
        #expect(zip(entries, entries.dropFirst()).allSatisfy { $0.time >= $1.time })

        let logText = try await ODRExecutable.run(["log", "--store", store, "--limit", "1"])
        let only = try #require(done.packs.last)
        #expect(logText.stdout.split(separator: "\n").count == 1)
        #expect(logText.stdout.contains("purge   \(only.id.prefix(12))") && logText.stdout.contains(only.reason), "\(logText.stdout)")
    }

    /// `odr log` for support: catalog version changes, a refused catalog and a failed install, each
    /// with its error code.
    @Test func theLogHasCatalogChangesRefusalsAndFailedInstalls() async throws {
        let fixture = try await ManagerFixture.onePackPerTag(Self.tags, bytes: 50_000, rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] } } }
            """)
        let store = fixture.stores.appending("store").path
        let common = ["--catalog", fixture.game.catalog.path, "--store", store]
        #expect(try await ODRExecutable.run(["fetch"] + common + ["a"]).status == 0)
        try fixture.game.write("a/changed.bin", deterministicBytes(count: 1000, seed: 77))
        try await fixture.game.build()
        #expect(try await ODRExecutable.run(["fetch"] + common + ["a"]).status == 0)
        // b's archive is damaged on the server: its install fails.
        let packB = try #require(try fixture.game.manifest(2).packs.first { $0.tags == ["b"] }?.id)
        try Data(count: 50_000).write(to: fixture.game.catalog.appending(path: "packs/\(packB).zip"))
        let failed = try await ODRExecutable.run(["fetch"] + common + ["b"])
        #expect(failed.status == 1, "\(failed.stdout)")
        // A catalog.json whose serial went back: refused as a rollback.
        var index = try fixture.game.index()
        index.serial -= 1
        try index.encoded().write(to: fixture.game.catalog.appending(path: "catalog.json"))
        _ = try await ODRExecutable.run(["status"] + common)

        let log = try await ODRExecutable.run(["log", "--store", store, "--json"])
        let lines = try JSONDecoder().decode([LogLine].self, from: Data(log.stdout.utf8)).reversed()
        let catalog = lines.filter { $0.kind == "catalog" }.map(\.reason)
        #expect(catalog.count == 3, "\(catalog)")
        #expect(catalog.first?.hasPrefix("followed: version 1 (serial ") == true)
        #expect(catalog.dropFirst().first?.hasPrefix("version 1 -> 2 (serial ") == true)
        #expect(catalog.last?.hasPrefix("refused: error[catalog-rollback]") == true, "\(catalog)")
        let failure = try #require(lines.first { $0.kind == "failure" })
        #expect(failure.packID == packB && failure.reason.hasPrefix("install failed: error["), "\(failure)")
        let text = try await ODRExecutable.run(["log", "--store", store])
        #expect(text.stdout.contains("refused: error[catalog-rollback]") && text.stdout.contains("install failed: error["), "\(text.stdout)")
    }

    @Test func badInputIsRefusedWithAMessage() async throws {
        let noBytes = try await ODRExecutable.run(["purge", "--catalog", "/nowhere", "--store", "/tmp/x", "--bytes", "0"])
        #expect(noBytes.status != 0 && noBytes.stderr.contains("--bytes must be a positive number"))
        let directory = try TemporaryDirectory(prefix: "odr-no-store")
        let noStore = try await ODRExecutable.run(["log", "--store", directory.url.path])
        #expect(noStore.status == 1 && noStore.stderr.hasPrefix("error[storage-failure]:") && noStore.stderr.contains("holds no store"))
        #expect(!FileManager.default.fileExists(atPath: directory.appending(ResourceStore.databaseName).path), "nothing created")
        let watermark = try await ODRExecutable.run(["fetch", "--catalog", "/nowhere", "--store", "/tmp/x", "--watermark=-1", "a"])
        #expect(watermark.status == 64 && watermark.stderr.contains("--watermark") && watermark.stderr.contains("100 MiB"), "\(watermark.stderr)")
    }

    @Test func fetchWithACacheBudgetPurgesTheLeastRecentlyUsedPackAndSaysSo() async throws {
        let fixture = try await ManagerFixture.onePackPerTag(Self.tags, bytes: 50_000, rules: """
            { "tags": { "a": { "include": ["a"] }, "b": { "include": ["b"] }, "c": { "include": ["c"] } } }
            """)
        let store = fixture.stores.appending("store").path
        let common = ["--catalog", fixture.game.catalog.path, "--store", store]
        for tag in ["a", "b"] { #expect(try await ODRExecutable.run(["fetch"] + common + [tag]).status == 0) }
        let packOfTag = Dictionary(uniqueKeysWithValues: try fixture.game.manifest(1).packs.map { ($0.tags[0], $0.id) })
        // Room for two packs (each 60 KiB on disk: a 50,000-byte file in whole blocks and two
        // folders): c pushes out a, the least recently used.
        let fetch = try await ODRExecutable.run(["fetch"] + common + ["--cache-budget", "130000", "c"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        #expect(fetch.stdout.contains("Purged 1 pack(s) no request uses to make room"), "\(fetch.stdout)")
        #expect(fetch.stdout.contains("  \(packOfTag["a"]!.prefix(12))  "))
        #expect(fetch.stdout.contains("Installed 1 pack(s)"))
        // A budget no pack fits: its own error code, not out-of-space.
        let tiny = try await ODRExecutable.run(["fetch"] + common + ["--cache-budget", "1000", "a"])
        #expect(tiny.status == 1 && tiny.stderr.hasPrefix("error[cache-budget-exceeded]:"), "\(tiny.stderr)")
    }

    /// The issue's case: a 10 MiB file system holding 9 MiB of installed packs nothing uses, and a
    /// 3 MiB tag to fetch.
    @Test(.enabled(if: SmallDisk.isAvailable))
    func onASmallFullDiskFetchPurgesTheLeastRecentlyUsedUnusedPacks() async throws {
        let small = (1...9).map { "t\($0)" }
        let rules = "{ \"tags\": { " + (small + ["big"]).map { "\"\($0)\": { \"include\": [\"\($0)\"] }" }.joined(separator: ", ") + " } }"
        let game = try CatalogFixture(rules: rules)
        for (index, tag) in small.enumerated() { try game.write("\(tag)/data.bin", deterministicBytes(count: 1 << 20, seed: UInt64(index + 1))) }
        try game.write("big/data.bin", deterministicBytes(count: 3 << 20, seed: 99))
        try await game.build()
        let packOfTag = Dictionary(uniqueKeysWithValues: try game.manifest(1).packs.map { ($0.tags[0], $0.id) })

        let disk = try SmallDisk(bytes: 10 << 20)
        defer { disk.unmount() }
        let store = disk.url.appending(path: "store").path
        let common = ["--catalog", game.catalog.path, "--store", store, "--no-sync"]
        for tag in small {
            let fetch = try await ODRExecutable.run(["fetch"] + common + ["--watermark", "0", tag])
            #expect(fetch.status == 0, "\(tag): \(fetch.stderr)")
        }
        #expect(try ResourceStore(directory: URL(filePath: store)).usage().installedBytes >= 9 << 20)

        let fetch = try await ODRExecutable.run(["fetch"] + common + ["--watermark", "0", "--json", "big"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        let report = try JSONDecoder().decode(Fetch.self, from: Data(fetch.stdout.utf8))
        #expect(report.installed == [packOfTag["big"]!])
        let purged = Set(report.purged.map(\.id))
        #expect(purged.count >= 2 && purged.count <= 4, "about 3 MiB less the free space: \(report.purged)")
        #expect(purged.isSubset(of: Set(small.prefix(4).map { packOfTag[$0]! })), "the least recently used go first")
        let music = disk.url.appending(path: "store/packs/\(packOfTag["big"]!)/big/data.bin")
        #expect(try Data(contentsOf: music) == game.contents(of: "big/data.bin"))
    }
}
