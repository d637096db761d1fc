import Foundation
import ODRBuilder
import ODRFormat
import ODRRuntime

/// Step 5 of `odrbench delta`: large files that change by a little update by their changed chunks.
///
/// Two catalogs, each one file in one pack, built twice (distributions `c1`, `c2`):
/// - `chunk-big`: `bigMiB` MiB of incompressible bytes (a stored, chunked entry); v2 inserts 1 MiB at
///   10% and overwrites 4 MiB at 60%. Target: at most 1.25x the 5 MiB changed plus 2 MiB moved, and
///   at most 1.5x what zsync 0.6 moves for the same change (`zsyncmake` on the served v2 file,
///   `zsync -i v1` against it).
/// - `chunk-text`: `textMiB` MiB of text-like bytes (a deflated entry, flushed at every chunk
///   boundary); v2 overwrites 100 bytes at 10 places spread over the file. Target: at most 2 MiB.
///
/// Then the assembly's speed: the big update's `odr fetch` (nearly all chunks from disk) against
/// `cp` of the v1 file followed by `sha256sum` of the copy. Target: at least 0.8x their speed.
struct ChunkDeltaCases {
    var bigMiB: Int
    var textMiB: Int
    var workspace: URL
    var served: URL

    private static let mib = 1 << 20

    /// Writes and builds both catalogs, and the zsync files of the big file's v2, into `served`;
    /// keeps the v1 files for zsync's and cp's input.
    func prepare() async throws {
        let big = workspace.appending(path: "chunk-big-assets"), text = workspace.appending(path: "chunk-text-assets")
        let rules = { (limit: Int) in #"{"catalogID":"chunks","tags":{"bench":{"include":["files"]}},"limits":{"packSize":"\#(limit) MiB"}}"# }
        for (folder, limit) in [(big, 2 * bigMiB + 8), (text, 2 * textMiB + 8)] {
            try FileManager.default.createDirectory(at: folder.appending(path: "files"), withIntermediateDirectories: true)
            try Data(rules(limit).utf8).write(to: folder.appending(path: "odr.json"))
        }
        let bigV1 = big.appending(path: "files/world.pak"), textV1 = text.appending(path: "files/world.db")
        try Self.writeIncompressible(to: bigV1, bytes: bigMiB * Self.mib)
        try Self.writeText(to: textV1, bytes: textMiB * Self.mib)
        try await Self.build(big, into: served.appending(path: "chunk-big"), distribution: "c1")
        try await Self.build(text, into: served.appending(path: "chunk-text"), distribution: "c1")
        try FileManager.default.copyItem(at: bigV1, to: v1Big)

        // v2 of the big file: 1 MiB inserted at 10%, 4 MiB overwritten at 60% (of the new file).
        let size = bigMiB * Self.mib
        let insertAt = size / 10, overwriteAt = (size + Self.mib) * 6 / 10
        try Self.rewrite(bigV1, from: v1Big, edits: [(insertAt, 0, Self.noise(Self.mib, seed: 0xC0FFEE))])
        try Self.rewrite(bigV1, from: nil, edits: [(overwriteAt, 4 * Self.mib, Self.noise(4 * Self.mib, seed: 0xBEEF))])
        // v2 of the text file: 100 bytes overwritten at ten places spread over it.
        let textSize = textMiB * Self.mib
        let edits = (0..<10).map { index -> (offset: Int, removing: Int, bytes: Data) in
            (textSize / 10 * index + textSize / 20, 100, Data(String(repeating: "edited! ", count: 13).utf8.prefix(100)))
        }
        try Self.rewrite(textV1, from: nil, edits: edits)
        try await Self.build(big, into: served.appending(path: "chunk-big"), distribution: "c2")
        try await Self.build(text, into: served.appending(path: "chunk-text"), distribution: "c2")

        // zsync's file: the served v2 file (its control file is made once the server's URL is known).
        let zsync = served.appending(path: "zsync")
        try FileManager.default.createDirectory(at: zsync, withIntermediateDirectories: true)
        try FileManager.default.moveItem(at: bigV1, to: zsync.appending(path: "world.pak"))
        try? FileManager.default.removeItem(at: big)
        try? FileManager.default.removeItem(at: text)
    }

    /// The big file's v1, kept for zsync's input and the cp + sha256sum reference.
    var v1Big: URL { workspace.appending(path: "world-v1.pak") }

    /// Runs the cases against `server` and prints their rows.
    func run(client: (_ catalog: String, _ distribution: String, _ store: URL) throws -> (summary: InstallSummary, seconds: Double, peak: Int64),
             server: CatalogServerProcess) throws {
        let row = { (title: String, value: String) in print(BenchFormat.row(title, value, indent: 4, width: 29)) }
        let mib = Int64(Self.mib)
        print("\n5. chunked files (--chunk-mib \(bigMiB), --text-mib \(textMiB)):")

        let bigStore = workspace.appending(path: "store-chunk-big")
        defer { try? FileManager.default.removeItem(at: bigStore) }
        try ChildProcess.syncFileSystems()
        let bigFull = try client("chunk-big/", "c1", bigStore)
        try ChildProcess.syncFileSystems()
        let mark = server.logMark
        let bigUpdate = try client("chunk-big/", "c2", bigStore)
        let served = server.requests(since: mark).filter { $0.target.hasPrefix("/chunk-big/packs/") }
        let target = Int64(1.25 * Double(5 * mib)) + 2 * mib

        // zsync 0.6 on the same change, from the v1 file. The control file names the file by its
        // absolute URL (zsync 0.6 resolves a relative one without the port), and is fetched with
        // curl: zsync's own fetch of it reads until the server closes a kept-alive connection.
        let zsyncFolder = self.served.appending(path: "zsync"), control = workspace.appending(path: "world.pak.zsync")
        _ = try ChildProcess.measure(["/usr/bin/zsyncmake", "-u", server.url(for: "zsync/world.pak").absoluteString,
                                      "-o", zsyncFolder.appending(path: "world.pak.zsync").path,
                                      zsyncFolder.appending(path: "world.pak").path]).succeeded()
        let output = workspace.appending(path: "zsync-out.pak")
        defer { try? FileManager.default.removeItem(at: output) }
        let zsyncMark = server.logMark
        let zsync = try ChildProcess.measure(["/bin/sh", "-c", "/usr/bin/curl -s -f -o \"$1\" \"$2\" && /usr/bin/zsync -q -i \"$3\" -o \"$4\" \"$1\"",
                                              "zsync", control.path, server.url(for: "zsync/world.pak.zsync").absoluteString,
                                              v1Big.path, output.path]).succeeded()
        guard FileManager.default.contentsEqual(atPath: output.path, andPath: zsyncFolder.appending(path: "world.pak").path) else {
            throw ValidationFailure("zsync did not rebuild the v2 file")
        }
        let zsyncRequests = server.requests(since: zsyncMark)
        let zsyncData = zsyncRequests.filter { $0.target == "/zsync/world.pak" }.reduce(0) { $0 + $1.bytes }
        let zsyncControl = zsyncRequests.filter { $0.target == "/zsync/world.pak.zsync" }.reduce(0) { $0 + $1.bytes }
        let moved = bigUpdate.summary.downloadedBytes

        print("  \(bigMiB) MiB incompressible file, 1 MiB inserted at 10% and 4 MiB overwritten at 60%:")
        row("full download (v1)", "\(BenchFormat.mib(bigFull.summary.downloadedBytes)) in \(BenchFormat.seconds(bigFull.seconds))")
        row("update (v2)", "\(Self.exact(moved)) in \(bigUpdate.summary.requests) request(s), \(BenchFormat.seconds(bigUpdate.seconds));"
            + " target <= \(Self.exact(target)) (1.25 x 5 MiB + 2 MiB): \(moved <= target ? "met" : "NOT met")")
        row("server log", "\(served.count) pack request(s), \(Self.exact(served.reduce(0) { $0 + $1.bytes })) sent")
        row("zsync 0.6 (anchor)", "\(Self.exact(zsyncData)) of the file in \(zsyncRequests.filter { $0.target == "/zsync/world.pak" }.count) request(s)"
            + " + \(BenchFormat.mib(zsyncControl)) control file, \(BenchFormat.seconds(zsync.seconds))")
        row("odr / zsync", "\(BenchFormat.ratio(Double(moved) / Double(max(1, zsyncData)))) of zsync's file bytes (target <= 1.5x);"
            + " \(BenchFormat.ratio(Double(moved) / Double(max(1, zsyncData + zsyncControl)))) counting its control file")
        row("odr fetch peak memory", "\(BenchFormat.mib(max(bigFull.peak, bigUpdate.peak))) (target < 64 MiB)")

        // Assembly: the update above took nearly every chunk from disk.
        let copy = workspace.appending(path: "cp-copy.pak")
        defer { try? FileManager.default.removeItem(at: copy) }
        try ChildProcess.syncFileSystems()
        let cp = try ChildProcess.measure(["/usr/bin/cp", v1Big.path, copy.path]).succeeded()
        let sum = try ChildProcess.measure(["/usr/bin/sha256sum", copy.path]).succeeded()
        let reference = cp.seconds + sum.seconds
        row("assembly (v2 update)", "\(BenchFormat.seconds(bigUpdate.seconds)) (\(BenchFormat.rate(Int64(bigMiB) * mib, bigUpdate.seconds))) against"
            + " cp + sha256sum \(BenchFormat.seconds(reference)) (\(BenchFormat.seconds(cp.seconds)) + \(BenchFormat.seconds(sum.seconds)));"
            + " speed \(BenchFormat.ratio(reference / bigUpdate.seconds)) of theirs (target >= 0.8x)")

        let textStore = workspace.appending(path: "store-chunk-text")
        defer { try? FileManager.default.removeItem(at: textStore) }
        try ChildProcess.syncFileSystems()
        let textFull = try client("chunk-text/", "c1", textStore)
        try ChildProcess.syncFileSystems()
        let textUpdate = try client("chunk-text/", "c2", textStore)
        print("  \(textMiB) MiB text-like file (deflated), 10 edits of 100 bytes spread out:")
        row("full download (v1)", "\(Self.exact(textFull.summary.downloadedBytes)) in \(BenchFormat.seconds(textFull.seconds))")
        row("update (v2)", "\(Self.exact(textUpdate.summary.downloadedBytes)) in \(textUpdate.summary.requests) request(s),"
            + " \(BenchFormat.seconds(textUpdate.seconds)); target <= 2 MiB: \(textUpdate.summary.downloadedBytes <= 2 * mib ? "met" : "NOT met")")
        row("odr fetch peak memory", "\(BenchFormat.mib(max(textFull.peak, textUpdate.peak))) (target < 64 MiB)")
    }

    private static func build(_ assets: URL, into catalog: URL, distribution: String) async throws {
        var options = BuildOptions(assets: assets, output: catalog)
        options.distribution = distribution
        options.concurrency = 2
        _ = try await CatalogBuilder(options: options).build()
    }

    /// `count` incompressible bytes, the same for the same seed.
    private static func noise(_ count: Int, seed: UInt64) -> Data {
        var generator = SplitMix64(seed: seed)
        var bytes = [UInt8](repeating: 0, count: count)
        generator.fill(&bytes)
        return Data(bytes)
    }

    private static func writeIncompressible(to url: URL, bytes: Int) throws {
        var generator = SplitMix64(seed: 0x5EED)
        var block = [UInt8](repeating: 0, count: mib)
        try write(to: url, bytes: bytes) { generator.fill(&block); return block }
    }

    /// Lines of words drawn from a small vocabulary: compresses about as well as a text database.
    private static func writeText(to url: URL, bytes: Int) throws {
        var generator = SplitMix64(seed: 0x7E47)
        let words = ["level", "tile", "door", "key", "enemy", "spawn", "health", "ammo", "quest", "npc", "dialogue", "chest",
                     "gold", "x", "y", "z", "true", "false", "null", "id", "name", "texture", "sound", "trigger"]
        try write(to: url, bytes: bytes) {
            var text = ""
            while text.utf8.count < mib {
                let count = Int(generator.next() % 12) + 3
                text += (0..<count).map { _ in words[Int(generator.next() % UInt64(words.count))] + "=" + String(generator.next() % 10_000) }
                    .joined(separator: " ") + "\n"
            }
            return Array(text.utf8.prefix(mib))
        }
    }

    private static func write(to url: URL, bytes: Int, next: () -> [UInt8]) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else { throw ValidationFailure("could not create \(url.path)") }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var written = 0
        while written < bytes {
            let block = next()
            let count = min(block.count, bytes - written)
            try handle.write(contentsOf: block[..<count])
            written += count
        }
    }

    /// Rewrites `url` (reading `source`, or `url` itself) with `edits` applied in order of offset:
    /// at each offset, `removing` bytes are replaced by the edit's bytes.
    private static func rewrite(_ url: URL, from source: URL?, edits: [(offset: Int, removing: Int, bytes: Data)]) throws {
        let input = try FileHandle(forReadingFrom: source ?? url)
        let temporary = url.appendingPathExtension("new")
        guard FileManager.default.createFile(atPath: temporary.path, contents: nil) else { throw ValidationFailure("could not create \(temporary.path)") }
        let output = try FileHandle(forWritingTo: temporary)
        var position = 0
        func copy(upTo end: Int) throws {
            while position < end {
                let data = try input.read(upToCount: min(mib, end - position)) ?? Data()
                guard !data.isEmpty else { throw ValidationFailure("\(url.path) is shorter than \(end) bytes") }
                try output.write(contentsOf: data)
                position += data.count
            }
        }
        for edit in edits.sorted(by: { $0.offset < $1.offset }) {
            try copy(upTo: edit.offset)
            try output.write(contentsOf: edit.bytes)
            try input.seek(toOffset: UInt64(edit.offset + edit.removing))
            position = edit.offset + edit.removing
        }
        while let data = try input.read(upToCount: mib), !data.isEmpty { try output.write(contentsOf: data) }
        try input.close()
        try output.close()
        try FileManager.default.removeItem(at: url)
        try FileManager.default.moveItem(at: temporary, to: url)
    }

    private static func exact(_ bytes: Int64) -> String { "\(BenchFormat.mib(bytes)) (\(bytes) bytes)" }
}
