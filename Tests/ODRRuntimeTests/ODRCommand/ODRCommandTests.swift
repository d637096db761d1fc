import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The built `odr` executable, run as a child process as a script would.
enum ODRExecutable {
    static let url: URL? = {
        let candidates = [Bundle.main.executableURL, Bundle.main.bundleURL, URL(filePath: CommandLine.arguments[0])]
        for candidate in candidates.compactMap({ $0 }) {
            let url = candidate.deletingLastPathComponent().appending(path: "odr")
            if FileManager.default.isExecutableFile(atPath: url.path) { return url }
        }
        return nil
    }()

    struct Outcome {
        var status: Int32
        var killedBySignal: Bool
        var stdout: String
        var stderr: String
    }

    /// Runs `odr` on its own thread: waiting for it must not block the concurrency pool, which the
    /// in-process test server needs to answer the child.
    static func run(_ arguments: [String], environment: [String: String] = [:], tool: String = "odr") async throws -> Outcome {
        let executable = try #require(tool == "odr" ? url : builtExecutable(named: tool), "\(tool) is not built; run swift build first")
        return try await withCheckedThrowingContinuation { continuation in
            Thread {
                continuation.resume(with: Result { try runBlocking(executable, arguments, environment: environment) })
            }.start()
        }
    }

    private static func runBlocking(_ executable: URL, _ arguments: [String], environment: [String: String]) throws -> Outcome {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let errData = err.fileHandleForReading.readDataToEndOfFile()
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return Outcome(status: process.terminationStatus, killedBySignal: process.terminationReason == .uncaughtSignal,
                       stdout: String(decoding: outData, as: UTF8.self), stderr: String(decoding: errData, as: UTF8.self))
    }
}

struct ODRCommandTests {
    @Test(arguments: ["download", "unpack", "after-rename"])
    func aFetchKilledMidwayIsRepairedAndTheNextFetchCompletes(_ point: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 4 << 20)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let arguments = ["fetch", "--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path, "big", "small"]
            let crashed = try await ODRExecutable.run(arguments, environment: ["ODR_CRASH_AT": point])
            #expect(crashed.killedBySignal && crashed.status == SIGKILL)

            let store = try ResourceStore(directory: storeDirectory.url)
            let report = store.repairReport
            switch point {
            case "download", "unpack": #expect(!report.keptPartialDownloads.isEmpty)
            default: #expect(!report.removedPackFolders.isEmpty)  // packs install two at a time
            }
            #expect(try store.verify().isEmpty)
            // What the crash left on disk, by pack, in archive bytes: complete entries and the
            // written part of a cut one.
            var staged: [String: Int64] = [:]
            let manifest = try fixture.manifest(1)
            for id in report.keptPartialDownloads {
                for entry in manifest.expectedEntries(inPack: id) {
                    let path = storeDirectory.appending("staging/\(id).d/\(entry.name)").path
                    guard let size = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? NSNumber)?.int64Value else { continue }
                    staged[id, default: 0] += size == entry.size ? entry.storedSize : size
                }
            }

            await server.waitUntilIdle()  // the killed fetch's last request is logged before clearing
            server.clearRequests()
            let second = try await ODRExecutable.run(arguments)
            #expect(second.status == 0, "\(second.stderr)")
            await server.waitUntilIdle()
            if point == "download" {
                // The partial download was resumed, not started over.
                #expect(server.requests().contains { $0.path.hasPrefix("/packs/") && $0.range != nil })
            }
            // What was on disk does not travel again: a pack's second download is at most what it
            // lacked (the fixture's entries are stored, so archive bytes and file bytes match),
            // plus headers and the central directory.
            for (id, held) in staged {
                let archive = try #require(manifest.packs.first { $0.id == id }).archiveBytes
                let sent = server.requests().filter { $0.path == "/packs/\(id).zip" }.reduce(0) { $0 + Int64($1.bytesSent) }
                #expect(sent <= archive - held + (64 << 10), "\(id): \(sent) bytes sent, \(held) of \(archive) were on disk")
            }
            let verify = try await ODRExecutable.run(["verify", "--store", storeDirectory.url.path])
            #expect(verify.status == 0, "\(verify.stdout)")
            let path = try await ODRExecutable.run(["path", "--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path, "big/music.bin"])
            #expect(path.status == 0)
            let installed = URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(try Data(contentsOf: installed) == fixture.contents(of: "big/music.bin"))
            #expect(storeDirectory.allFiles().filter { $0.hasPrefix("staging/") }.isEmpty)
        }
    }

    /// A `--catalog` URL of another scheme is a usage error naming the schemes odr reads; before,
    /// `gopher://host/` was taken for a relative folder and a store was filled from nothing.
    @Test(arguments: ["gopher://example.com/game/", "ftp://example.com/game/", "FTP://example.com/"])
    func aCatalogURLOfAnotherSchemeIsAUsageError(_ url: String) async throws {
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let outcome = try await ODRExecutable.run(["fetch", "--catalog", url, "--store", storeDirectory.url.path, "small"])
        #expect(outcome.status == 64, "\(outcome.stderr)")
        #expect(outcome.stderr.contains("http://, https:// or file://"), "\(outcome.stderr)")
        #expect(storeDirectory.allFiles().isEmpty)
    }

    @Test func fetchReportsErrorsWithTheirCodeAndStatusShowsStates() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let common = ["--catalog", fixture.catalog.path, "--store", storeDirectory.url.path]
        let unknown = try await ODRExecutable.run(["fetch"] + common + ["small", "level9"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.hasPrefix("error[invalid-tag]:") && unknown.stderr.contains("level9"))

        #expect(try await ODRExecutable.run(["fetch"] + common + ["small"]).status == 0)
        let status = try await ODRExecutable.run(["status"] + common + ["--json"])
        #expect(status.status == 0)
        struct Report: Decodable { struct Tag: Decodable { var name: String; var state: String }; var tags: [Tag] }
        let report = try JSONDecoder().decode(Report.self, from: Data(status.stdout.utf8))
        #expect(Dictionary(uniqueKeysWithValues: report.tags.map { ($0.name, $0.state) }) == ["small": "downloaded", "big": "not downloaded"])

        let missing = try await ODRExecutable.run(["path"] + common + ["big/music.bin"])
        #expect(missing.status == 1 && missing.stderr.hasPrefix("error[resource-not-installed]:"))
    }

    @Test func updateStatusAndFetchReportWhatAnUpdateReallyDownloads() async throws {
        let fixture = try await EntryInstallTests.levelFixture()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path]
            #expect(try await ODRExecutable.run(["fetch"] + common + ["level"]).status == 0)
            try fixture.write(EntryInstallTests.name(3), deterministicBytes(count: 64 << 10, seed: 1234))
            try await fixture.build()
            let v2 = try fixture.manifest(2)
            let pack = try #require(v2.packs.first)
            let entries = v2.expectedEntries(inPack: pack.id).sorted { $0.headerOffset < $1.headerOffset }
            let changed = try #require(entries.firstIndex { $0.name == EntryInstallTests.name(3) })
            let range = entries[changed + 1].headerOffset - entries[changed].headerOffset

            struct Update: Decodable { var downloadBytes: Int64 }
            let update = try await ODRExecutable.run(["update"] + common + ["--json", "--dry-run"])
            #expect(try JSONDecoder().decode(Update.self, from: Data(update.stdout.utf8)).downloadBytes == range)
            struct Status: Decodable { struct Tag: Decodable { var name: String; var downloadBytes: Int64 }; var tags: [Tag] }
            let status = try await ODRExecutable.run(["status"] + common + ["--json"])
            #expect(try JSONDecoder().decode(Status.self, from: Data(status.stdout.utf8)).tags.first?.downloadBytes == range)

            let fetch = try await ODRExecutable.run(["fetch"] + common + ["level"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            #expect(fetch.stdout.contains("level: 1 of 8 files changed"), "\(fetch.stdout)")
            let after = try await ODRExecutable.run(["status"] + common + ["--json"])
            #expect(try JSONDecoder().decode(Status.self, from: Data(after.stdout.utf8)).tags.first?.downloadBytes == 0)
        }
    }

    @Test func statusFallsBackWithANoticeWhenTheServerIsDownAndFailsOnAMissingCatalog() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let baseURL = try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path]
            #expect(try await ODRExecutable.run(["fetch"] + common + ["small"]).status == 0)
            server.injectFaults(.status(404), count: 10, path: "/catalog.json")
            let missing = try await ODRExecutable.run(["status"] + common)
            #expect(missing.status == 1)
            #expect(missing.stderr.hasPrefix("error[resource-unavailable]:") && missing.stderr.contains("catalog.json"), "\(missing.stderr)")
            return server.baseURL
        }
        // The server is gone: the stored catalog serves, and odr says so and from when.
        let down = try await ODRExecutable.run(["status", "--catalog", baseURL.absoluteString, "--store", storeDirectory.url.path])
        #expect(down.status == 0, "\(down.stderr)")
        #expect(down.stderr.contains("notice: the catalog server cannot be reached [network-unavailable]"), "\(down.stderr)")
        // It names the server it could not reach, and says the stored copy is used.
        #expect(down.stderr.contains(baseURL.absoluteString) && down.stderr.contains("going on with the stored copy"), "\(down.stderr)")
        #expect(down.stdout.contains("small"))
    }

    @Test func updateAfterARollbackCountsTagsInstalledUnderEitherVersion() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 50_000)
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", storeDirectory.url.path]
            #expect(try await ODRExecutable.run(["fetch"] + common + ["small", "big"]).status == 0)
            // Version 2 changes big; the client sees it (odr update) but does not fetch it.
            try fixture.write("big/level.json", Data("{\"tile\": 2}\n".utf8))
            try await fixture.build()
            struct Update: Decodable { var previousVersion: Int?; var currentVersion: Int; var held: [String]; var tags: [String]; var downloadBytes: Int64 }
            let seen = try JSONDecoder().decode(Update.self, from: Data(try await ODRExecutable.run(["update"] + common + ["--json", "--dry-run"]).stdout.utf8))
            #expect(seen.currentVersion == 2 && seen.held == ["big", "small"] && seen.tags == ["big"] && seen.downloadBytes > 0, "only big changes")

            // The publisher rolls live back to version 1: big is fully installed under it again.
            var index = try fixture.index()
            index.distributions["live"] = 1
            index.serial += 1
            try index.encoded().write(to: fixture.catalog.appending(path: "catalog.json"))
            let back = try JSONDecoder().decode(Update.self, from: Data(try await ODRExecutable.run(["update"] + common + ["--json", "--dry-run"]).stdout.utf8))
            #expect(back.previousVersion == 2 && back.currentVersion == 1)
            #expect(back.held == ["big", "small"], "big was installed under version 1 and must still count")
            #expect(back.tags.isEmpty && back.downloadBytes == 0, "nothing changes")
        }
    }

    @Test func statusShowsLongTagNamesWhole() async throws {
        let name = "track-ancient-colosseum-labyrinth"
        let fixture = try CatalogFixture(rules: #"{ "tags": { "\#(name)": { "include": ["t"] }, "a": { "include": ["a"] } } }"#)
        try fixture.write("t/data.bin", deterministicBytes(count: 1000, seed: 1))
        try fixture.write("a/data.bin", deterministicBytes(count: 1000, seed: 2))
        try await fixture.build()
        let storeDirectory = try TemporaryDirectory(prefix: "odr-store")
        let status = try await ODRExecutable.run(["status", "--catalog", fixture.catalog.path, "--store", storeDirectory.url.path, "--all-tags"])
        #expect(status.status == 0, "\(status.stderr)")
        let lines = status.stdout.split(separator: "\n")
        let tagsStart = (lines.firstIndex(of: "tags:") ?? 0) + 1, tagsEnd = lines.firstIndex(of: "packs:") ?? lines.endIndex
        let rows = lines[tagsStart..<tagsEnd].filter { $0.contains("not downloaded") }
        #expect(rows.contains { $0.hasPrefix("  \(name) ") }, "\(status.stdout)")
        // The state column starts at the same place in every row.
        let columns = rows.compactMap { row in row.range(of: "not downloaded").map { row.distance(from: row.startIndex, to: $0.lowerBound) } }
        #expect(Set(columns).count == 1, "\(rows)")
    }
}
