import ArgumentParser
import Foundation
import ODRBuilder
import ODRFormat
import ODRRuntime

/// `odrbench delta`: what `odr fetch` moves when a pack changes by a little, and when a download
/// killed half way is fetched again, against the full download, from an `odrpack serve` child.
///
/// 1. Full download of v1 (with `curl -o` of the pack for reference).
/// 2. One file changed (v2): at most 1.1 MiB downloaded.
/// 3. A tenth of the files changed (v3): at most 1.15x their stored bytes, at most 60 requests.
/// 4. Resume after SIGKILL: at most the missing bytes plus 1 MiB downloaded; the bytes the kill
///    lost (sent twice by the server) next to those `curl -C -` loses under the same kill.
/// 5. Chunked files (`ChunkDeltaCases`): a large incompressible file with 1 MiB inserted and 4 MiB
///    overwritten, against zsync 0.6 on the same change; a text-like file with 10 small edits; the
///    assembly's speed against `cp` + `sha256sum`.
/// 6. Peak memory of every `odr fetch` under 64 MiB.
struct DeltaBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "delta",
        abstract: "Bytes, requests and time of delta updates and of resuming a killed download, against a full download.",
        discussion: """
            Builds one catalog whose tag is a single stored pack of --mib files of 1 MiB each \
            (incompressible bytes from a seeded SplitMix64, so every run builds the same archives), in \
            three versions, each published under its own distribution (v1, v2, v3). It serves the \
            catalogs with `odrpack serve` as a child process on 127.0.0.1 and installs them with the \
            `odr` built next to this executable, reading what each fetch did from `odr fetch --json` \
            (and the pack requests from the server's log, as a check):

            1. full download: v1 into an empty store; `curl -o` of the same pack for reference;
            2. one file changed: v2 into the same store; target: at most 1.1 MiB downloaded;
            3. a tenth of the files changed (every 10th): v3 into the same store; targets: at most \
            1.15x the changed files' stored bytes downloaded, at most 60 requests;
            4. resume: a fresh single-pack catalog of --resume-mib MiB, once as 1 MiB files and once \
            as one file, fetched with ODR_CRASH_AT=download (odr kills itself with SIGKILL once \
            half of the pack arrived); the bytes left in STORE/staging/<id>.d are summed, then \
            the fetch runs again; target: downloaded <= archive bytes - bytes on disk + 1 MiB. The \
            bytes the kill lost (pack bytes the server sent over both fetches, minus the archive) \
            are printed next to those of `curl` killed with SIGKILL once half of the pack is on disk \
            and resumed with `curl -C -`. Both are mostly the bytes in flight when the process died \
            (socket buffers on both ends, a few MiB on loopback), so one run's pair is noisy: odr \
            itself keeps every byte its installer received (downloaded - missing is about 0).

            5. chunked files: a catalog of one --chunk-mib MiB incompressible file (stored, chunked), \
            whose v2 inserts 1 MiB at 10% and overwrites 4 MiB at 60%; targets: at most 1.25x the 5 MiB \
            changed plus 2 MiB downloaded, and at most 1.5x what zsync 0.6 downloads for the same change \
            (`zsyncmake` on the served v2 file, `zsync -i` the v1 file; needs Debian's zsync). A catalog of \
            one --text-mib MiB text-like file (deflated, chunked), whose v2 overwrites 100 bytes at 10 \
            places; target: at most 2 MiB downloaded. And the big update's time (its file assembled from \
            chunks on disk) against `cp` of the v1 file then `sha256sum` of the copy; target: at least \
            0.8x their speed. --full-chunks runs the issue's sizes (1024 and 256 MiB); --chunks-only \
            skips steps 1 to 4.

            Updates print their wall time next to the full download's. Times are the best of --runs \
            (each run starts from an empty store, with odr's default durability; a `sync` precedes each \
            step); the resume step runs once. Peak memory of each odr fetch (/usr/bin/time): < 64 MiB. \
            The temporary workspace is removed at the end.
            """
    )

    @Option(help: "Files of 1 MiB in the delta catalog's pack (its size in MiB); at least 10.")
    var mib = 512

    @Option(name: .customLong("resume-mib"), help: "Size of the resume step's pack in MiB; at least 8.")
    var resumeMiB = 256

    @Option(help: "Runs of steps 1 to 3; the best time is reported.")
    var runs = 1

    @Option(name: .customLong("chunk-mib"), help: "Size of step 5's incompressible file in MiB; at least 16.")
    var chunkMiB = 128

    @Option(name: .customLong("text-mib"), help: "Size of step 5's text-like file in MiB; at least 16.")
    var textMiB = 32

    @Flag(name: .customLong("full-chunks"), help: "Step 5 at the issue's sizes: --chunk-mib 1024 --text-mib 256.")
    var fullChunks = false

    @Flag(name: .customLong("chunks-only"), help: "Run step 5 only.")
    var chunksOnly = false

    func validate() throws {
        guard mib >= 10 else { throw ValidationError("--mib must be at least 10, so that a tenth of the files is one file or more.") }
        guard resumeMiB >= 8 else { throw ValidationError("--resume-mib must be at least 8: odr crashes only after 2 MiB and half the pack arrived.") }
        guard runs > 0 else { throw ValidationError("--runs must be positive.") }
        guard chunkMiB >= 16, textMiB >= 16 else { throw ValidationError("--chunk-mib and --text-mib must be at least 16, twice the chunking threshold.") }
        for tool in ["/usr/bin/curl", "/usr/bin/sync", "/usr/bin/env", "/usr/bin/zsync", "/usr/bin/zsyncmake", "/usr/bin/sha256sum"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw ValidationError("\(tool) is needed.")
        }
    }

    func run() async throws {
        let odr = try ChildProcess.sibling("odr"), odrpack = try ChildProcess.sibling("odrpack")
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-delta-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: workspace) }
        let served = workspace.appending(path: "served")
        let plan = ChangePlan(files: mib)
        let chunkCases = ChunkDeltaCases(bigMiB: fullChunks ? 1024 : chunkMiB, textMiB: fullChunks ? 256 : textMiB,
                                         workspace: workspace, served: served)
        print("Generating and building the chunked files (\(chunkCases.bigMiB) and \(chunkCases.textMiB) MiB) in two versions ...")
        try await chunkCases.prepare()
        if chunksOnly {
            let server = try CatalogServerProcess.start(serving: served, executable: odrpack)
            defer { server.stop() }
            try runChunkCases(chunkCases, client: FetchClient(odr: odr, server: server))
            return
        }

        print("Generating and building \(mib) x 1 MiB in three versions, and \(resumeMiB) MiB twice, under \(workspace.path) ...")
        let delta = GeneratedAssets(folder: workspace.appending(path: "delta-assets"), packLimitMiB: 2 * mib)
        try delta.write(files: 0..<mib, bytes: 1 << 20, revision: 0)
        try await delta.build(into: served.appending(path: "delta"), distribution: "v1")
        let v1Pack = try Self.onlyPack(of: served.appending(path: "delta"))
        try delta.write(files: [plan.single], bytes: 1 << 20, revision: 1)
        try await delta.build(into: served.appending(path: "delta"), distribution: "v2")
        try delta.write(files: plan.tenth, bytes: 1 << 20, revision: 1)
        try await delta.build(into: served.appending(path: "delta"), distribution: "v3")
        delta.remove()
        let resumeLayouts = [
            ResumeLayout(name: "resume-files", label: "\(resumeMiB) files of 1 MiB", files: resumeMiB, bytes: 1 << 20),
            ResumeLayout(name: "resume-single", label: "1 file of \(resumeMiB) MiB", files: 1, bytes: resumeMiB << 20),
        ]
        for layout in resumeLayouts {
            let assets = GeneratedAssets(folder: workspace.appending(path: "\(layout.name)-assets"), packLimitMiB: 2 * resumeMiB)
            try assets.write(files: 0..<layout.files, bytes: layout.bytes, revision: 0)
            try await assets.build(into: served.appending(path: layout.name), distribution: "live")
            assets.remove()
        }

        let server = try CatalogServerProcess.start(serving: served, executable: odrpack)
        defer { server.stop() }
        print("Serving \(served.path) with odrpack serve at \(server.baseURL.absoluteString)")
        let client = FetchClient(odr: odr, server: server)

        // Steps 1 to 3.
        var best = (full: Double.infinity, curl: Double.infinity, single: Double.infinity, tenth: Double.infinity)
        var peaks = (full: Int64(0), single: Int64(0), tenth: Int64(0))
        var last: (full: FetchResult, single: FetchResult, tenth: FetchResult)?
        for run in 0..<runs {
            let store = workspace.appending(path: "store-\(run)")
            defer { try? FileManager.default.removeItem(at: store) }
            try ChildProcess.syncFileSystems()
            let full = try client.fetch(catalog: "delta/", distribution: "v1", store: store)
            let copy = workspace.appending(path: "curl-\(run).zip")
            try ChildProcess.syncFileSystems()
            let curl = try ChildProcess.measure(
                ["/usr/bin/curl", "-s", "-f", server.url(for: "delta/packs/\(v1Pack.file)").absoluteString, "-o", copy.path]).succeeded()
            try? FileManager.default.removeItem(at: copy)
            try ChildProcess.syncFileSystems()
            let single = try client.fetch(catalog: "delta/", distribution: "v2", store: store)
            try ChildProcess.syncFileSystems()
            let tenth = try client.fetch(catalog: "delta/", distribution: "v3", store: store)
            best = (min(best.full, full.seconds), min(best.curl, curl.seconds), min(best.single, single.seconds), min(best.tenth, tenth.seconds))
            peaks = (max(peaks.full, full.peakMemory), max(peaks.single, single.peakMemory), max(peaks.tenth, tenth.peakMemory))
            last = (full, single, tenth)
        }
        guard let last else { return }
        let fileBytes: Int64 = 1 << 20
        let changedBytes = Int64(plan.tenth.count) * fileBytes

        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, width: 31)) }
        let update = { (seconds: Double) in
            "\(BenchFormat.seconds(seconds)) against \(BenchFormat.seconds(best.full)) for the full download"
                + String(format: " (%.1f%%)", seconds / best.full * 100)
        }
        print("\n1. full download of v1: \(mib) files, pack of \(BenchFormat.mib(v1Pack.bytes))")
        row("odr fetch", "\(BenchFormat.seconds(best.full))  (\(BenchFormat.rate(last.full.summary.downloadedBytes, best.full))),"
            + " \(BenchFormat.mib(last.full.summary.downloadedBytes)) downloaded in \(last.full.summary.requests) request(s)")
        row("curl -o (reference, no sync)", "\(BenchFormat.seconds(best.curl))  (\(BenchFormat.rate(v1Pack.bytes, best.curl)))")
        row("server log", last.full.servedText)
        row("odr fetch peak memory", "\(BenchFormat.mib(peaks.full)) (target < 64 MiB)")

        print("\n2. one file changed (v2, file \(plan.single)):")
        row("downloaded", "\(Self.exact(last.single.summary.downloadedBytes)) (target <= 1.1 MiB)")
        row("requests", "\(last.single.summary.requests); \(last.single.summary.fetchedFiles) file(s) fetched, \(last.single.summary.reusedFiles) reused")
        row("server log", last.single.servedText)
        row("update time", update(best.single))
        row("odr fetch peak memory", "\(BenchFormat.mib(peaks.single)) (target < 64 MiB)")

        print("\n3. \(plan.tenth.count) of \(mib) files changed (v3, every \(plan.stride)th):")
        row("downloaded", "\(Self.exact(last.tenth.summary.downloadedBytes)) for \(Self.exact(changedBytes)) of changed stored bytes:"
            + " \(BenchFormat.ratio(Double(last.tenth.summary.downloadedBytes) / Double(changedBytes))) (target <= 1.15x)")
        row("requests", "\(last.tenth.summary.requests) (target <= 60); \(last.tenth.summary.fetchedFiles) file(s) fetched,"
            + " \(last.tenth.summary.reusedFiles) reused")
        row("server log", last.tenth.servedText)
        row("update time", update(best.tenth))
        row("odr fetch peak memory", "\(BenchFormat.mib(peaks.tenth)) (target < 64 MiB)")

        print("\n4. resume after SIGKILL half way through the download (ODR_CRASH_AT=download):")
        for layout in resumeLayouts {
            try resume(layout, served: served, workspace: workspace, client: client)
        }
        try runChunkCases(chunkCases, client: client)
    }

    /// Step 5, against the running server.
    private func runChunkCases(_ cases: ChunkDeltaCases, client: FetchClient) throws {
        try cases.run(client: { catalog, distribution, store in
            let result = try client.fetch(catalog: catalog, distribution: distribution, store: store)
            return (result.summary, result.seconds, result.peakMemory)
        }, server: client.server)
    }

    /// Step 4 for one layout: a fetch that kills itself, what it left, and the fetch that finishes.
    private func resume(_ layout: ResumeLayout, served: URL, workspace: URL, client: FetchClient) throws {
        let pack = try Self.onlyPack(of: served.appending(path: layout.name))
        let store = workspace.appending(path: "store-\(layout.name)")
        defer { try? FileManager.default.removeItem(at: store) }
        try ChildProcess.syncFileSystems()
        let packPath = "/\(layout.name)/packs/\(pack.id).zip"
        let crashMark = client.server.logMark
        let crashed = try client.crashingFetch(catalog: "\(layout.name)/", store: store)
        let crashedSent = client.server.requests(since: crashMark).filter { $0.target == packPath }.reduce(0) { $0 + $1.bytes }
        let onDisk = DiskUsage.bytes(under: store.appending(path: "staging/\(pack.id).d"))
        try ChildProcess.syncFileSystems()
        let resumed = try client.fetch(catalog: "\(layout.name)/", distribution: "live", store: store)
        let missing = pack.bytes - onDisk
        let excess = resumed.summary.downloadedBytes - missing
        let odrLost = crashedSent + resumed.packRequests.reduce(0) { $0 + $1.bytes } - pack.bytes
        let curlLost = try curlLoss(url: client.server.url(for: "\(layout.name)/packs/\(pack.id).zip"), path: packPath,
                                    bytes: pack.bytes, server: client.server, workspace: workspace)
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, indent: 4, width: 29)) }
        print("  \(layout.label), pack of \(BenchFormat.mib(pack.bytes)):")
        row("killed fetch", "exit status \(crashed.status)\(crashed.status == 128 + SIGKILL ? " (SIGKILL)" : ""), \(BenchFormat.seconds(crashed.seconds));"
            + " \(Self.exact(onDisk)) left in staging" + String(format: " (%.0f%% of the pack)", Double(onDisk) / Double(pack.bytes) * 100))
        row("missing", "\(Self.exact(missing)) (archive bytes - bytes on disk)")
        row("resumed fetch", "\(Self.exact(resumed.summary.downloadedBytes)) downloaded in \(resumed.summary.requests) request(s),"
            + " \(BenchFormat.seconds(resumed.seconds)); \(Self.exact(resumed.summary.resumedBytes)) reported resumed")
        row("downloaded - missing", "\(excess) bytes (target <= 1048576)")
        row("server log", resumed.servedText)
        row("lost to the kill", "odr \(Self.exact(odrLost)), curl -C - \(Self.exact(curlLost)) (bytes in flight, mostly socket buffers)")
        row("odr fetch peak memory", "\(BenchFormat.mib(max(crashed.peakMemory, resumed.peakMemory))) (target < 64 MiB)")
    }

    /// What `curl` loses to the same kill: killed with SIGKILL once half of the pack is on disk, then
    /// resumed with `curl -C -`; the pack bytes the server sent over both, minus the pack.
    private func curlLoss(url: URL, path: String, bytes: Int64, server: CatalogServerProcess, workspace: URL) throws -> Int64 {
        let output = workspace.appending(path: "curl-resume.zip")
        defer { try? FileManager.default.removeItem(at: output) }
        try ChildProcess.syncFileSystems()
        let mark = server.logMark
        let killed = Process()
        killed.executableURL = URL(filePath: "/usr/bin/curl")
        killed.arguments = ["-s", "-f", url.absoluteString, "-o", output.path]
        try killed.run()
        while killed.isRunning, DiskUsage.bytes(under: output) * 2 < bytes { usleep(200) }
        kill(killed.processIdentifier, SIGKILL)
        killed.waitUntilExit()
        _ = try ChildProcess.measure(["/usr/bin/curl", "-s", "-f", "-C", "-", url.absoluteString, "-o", output.path]).succeeded()
        guard DiskUsage.bytes(under: output) == bytes else { throw ValidationFailure("curl -C - did not complete \(path)") }
        return server.requests(since: mark).filter { $0.target == path }.reduce(0) { $0 + $1.bytes } - bytes
    }

    /// The pack archive of a catalog that has exactly one.
    private static func onlyPack(of catalog: URL) throws -> (id: String, file: String, bytes: Int64) {
        let folder = catalog.appending(path: "packs")
        let files = try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { $0.hasSuffix(".zip") }
        guard files.count == 1, let file = files.first else {
            throw ValidationFailure("expected one pack in \(folder.path), found \(files.count): raise the rules' packSize limit")
        }
        return (String(file.dropLast(".zip".count)), file, DiskUsage.bytes(under: folder.appending(path: file)))
    }

    /// Bytes with their unit and exact count: `1.0 MiB (1048620 bytes)`.
    private static func exact(_ bytes: Int64) -> String { "\(BenchFormat.mib(bytes)) (\(bytes) bytes)" }
}

/// Which files each version changes: one in the middle for v2, then every 10th (offset by 5, so
/// never the middle one) for v3.
private struct ChangePlan {
    var single: Int
    var tenth: [Int]
    var stride: Int

    init(files: Int) {
        stride = 10
        tenth = Array(Swift.stride(from: stride / 2, to: files, by: stride))
        single = files / 2 % stride == stride / 2 ? files / 2 + 1 : files / 2
    }
}

/// A resume layout: the same pack size as many files or as one.
private struct ResumeLayout {
    var name: String
    var label: String
    var files: Int
    var bytes: Int
}

/// An assets folder of generated files, `files/f00000.bin`, tagged `bench` in one pack.
struct GeneratedAssets {
    var folder: URL
    var packLimitMiB: Int

    /// Writes each of `files` with `bytes` bytes drawn from a generator seeded by its index and `revision`.
    func write(files: some Sequence<Int>, bytes: Int, revision: UInt64) throws {
        let directory = folder.appending(path: "files")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let rules = #"{"catalogID":"delta","tags":{"bench":{"include":["files"]}},"limits":{"packSize":"\#(packLimitMiB) MiB"}}"#
        try Data(rules.utf8).write(to: folder.appending(path: "odr.json"))
        var chunk = [UInt8](repeating: 0, count: min(bytes, 1 << 20))
        for index in files {
            // Seeds pass through one draw first, so neighbouring indices start far apart in the sequence.
            var seeder = SplitMix64(seed: UInt64(index) << 16 | revision)
            var generator = SplitMix64(seed: seeder.next())
            let url = directory.appending(path: String(format: "f%05d.bin", index))
            guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw ValidationFailure("could not create \(url.path)") }
            let handle = try FileHandle(forWritingTo: url)
            defer { try? handle.close() }
            var written = 0
            while written < bytes {
                generator.fill(&chunk)
                let count = min(chunk.count, bytes - written)
                try handle.write(contentsOf: chunk[..<count])
                written += count
            }
        }
    }

    /// Builds the folder into `catalog` (the next version when it exists), pointing `distribution` at it.
    func build(into catalog: URL, distribution: String) async throws {
        var options = BuildOptions(assets: folder, output: catalog)
        options.distribution = distribution
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
    }

    func remove() { try? FileManager.default.removeItem(at: folder) }
}

/// What one `odr fetch --json` did, as odr and as the server saw it.
private struct FetchResult {
    var summary: InstallSummary
    var seconds: Double
    var peakMemory: Int64
    /// The server's log lines for pack archives during the fetch.
    var packRequests: [CatalogServerProcess.LoggedRequest]

    var servedText: String {
        let ranged = packRequests.filter { $0.range != nil }.count
        return "\(packRequests.count) pack request(s) (\(ranged) with a Range header),"
            + " \(BenchFormat.mib(packRequests.reduce(0) { $0 + $1.bytes })) of pack bytes sent"
    }
}

/// Runs the built `odr fetch` of tag `bench` against the served catalogs.
private struct FetchClient {
    var odr: String
    var server: CatalogServerProcess

    func fetch(catalog: String, distribution: String, store: URL) throws -> FetchResult {
        let mark = server.logMark
        let run = try ChildProcess.measureAlone(arguments(catalog: catalog, distribution: distribution, store: store) + ["--json", "bench"]).succeeded()
        let summary: InstallSummary
        do {
            summary = try JSONDecoder().decode(InstallSummary.self, from: Data(run.output.utf8))
        } catch {
            throw ValidationFailure("odr fetch --json printed something else than an install summary (\(error)):\n\(run.output)")
        }
        let packRequests = server.requests(since: mark).filter { $0.target.hasPrefix("/\(catalog)packs/") }
        return FetchResult(summary: summary, seconds: run.seconds, peakMemory: run.peakMemory, packRequests: packRequests)
    }

    /// `odr fetch` with `ODR_CRASH_AT=download`: it must die by SIGKILL.
    func crashingFetch(catalog: String, store: URL) throws -> ChildMeasurement {
        let run = try ChildProcess.measureAlone(["/usr/bin/env", "ODR_CRASH_AT=download"]
                                                + arguments(catalog: catalog, distribution: "live", store: store) + ["--quiet", "bench"])
        guard run.status == 128 + SIGKILL else {
            throw ValidationFailure("odr fetch with ODR_CRASH_AT=download exited with status \(run.status), not by SIGKILL:\n\(run.output)")
        }
        return run
    }

    private func arguments(catalog: String, distribution: String, store: URL) -> [String] {
        [odr, "fetch", "--catalog", server.url(for: catalog).absoluteString, "--distribution", distribution, "--store", store.path]
    }
}
