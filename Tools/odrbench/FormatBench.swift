import ArgumentParser
import Foundation
import ODRFormat

/// `odrbench format`: the pack format's speed and memory against `unzip -t` on the same pack.
struct FormatBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "format",
        abstract: "Verifying read of a mixed pack vs. unzip -t, and writer/reader peak memory.",
        discussion: """
            Generates a mixed tree (half compressible JSON-like text, half incompressible media), \
            writes it into one pack, then times our verifying read (inflate + SHA-256 of every entry \
            and of the archive) against `unzip -tq` (inflate + CRC-32) on the same file, best of \
            --runs. Peak memory of the writer and the reader is measured in child processes on a \
            second, larger pack to show it does not grow with pack size.

            Targets: verify time <= 1.3x unzip -t; writer and reader peak memory < 64 MiB for 1 GiB.
            """
    )

    @Option(name: .customLong("size-mib"), help: "Size of the pack timed against unzip -t, in MiB.")
    var sizeMiB = 256

    @Option(name: .customLong("memory-pack-mib"), help: "Size of the pack whose writer and reader memory is measured, in MiB (0 skips).")
    var memoryPackMiB = 1024

    @Option(help: "Timed runs of each reader; the best is reported.")
    var runs = 3

    func validate() throws {
        guard sizeMiB > 0, memoryPackMiB >= 0, runs > 0 else {
            throw ValidationError("--size-mib and --runs must be positive, --memory-pack-mib not negative.")
        }
    }

    func run() async throws {
        let work = FileManager.default.temporaryDirectory.appending(path: "odrbench-format-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: work, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: work) }
        let exe = ChildProcess.selfExecutable

        print("== odrbench format: \(sizeMiB) MiB mixed pack ==")
        let source = work.appending(path: "tree")
        try MixedTree.generate(at: source, bytes: Int64(sizeMiB) << 20, seed: 1)
        let pack = work.appending(path: "pack.zip")
        let write = try ChildProcess.measureAlone([exe, "format-worker", "write", source.path, pack.path])
        guard write.status == 0 else { throw ValidationFailure("writing the pack failed: \(write.output)") }
        let manifest = work.appending(path: "entries.json")
        try Data(write.output.utf8).write(to: manifest)
        let packBytes = try PackArchive(contentsOf: pack).size
        print("write:  \(BenchFormat.mib(packBytes)) archive in \(String(format: "%.2f", write.seconds)) s, peak memory \(BenchFormat.mib(write.peakMemory))")

        var ours = Double.infinity, unzip = Double.infinity
        for _ in 0..<runs {
            let verify = try ChildProcess.measureAlone([exe, "format-worker", "verify", pack.path, manifest.path])
            guard verify.status == 0 else { throw ValidationFailure("verifying the pack failed: \(verify.output)") }
            ours = min(ours, verify.seconds)
            let baseline = try ChildProcess.measure(["unzip", "-tq", pack.path], quiet: true)
            guard baseline.status == 0 else { throw ValidationFailure("unzip -t failed on our pack") }
            unzip = min(unzip, baseline.seconds)
        }
        print("verify: ours \(String(format: "%.3f", ours)) s (\(BenchFormat.rate(packBytes, ours))), unzip -t \(String(format: "%.3f", unzip)) s (\(BenchFormat.rate(packBytes, unzip)))")
        print("ratio verify/unzip-t: \(BenchFormat.ratio(ours / unzip))  (target <= 1.30x)")

        guard memoryPackMiB > 0 else { return }
        print("== peak memory on a \(memoryPackMiB) MiB pack ==")
        try FileManager.default.removeItem(at: source)
        let big = work.appending(path: "big-tree")
        try MixedTree.generate(at: big, bytes: Int64(memoryPackMiB) << 20, seed: 2)
        let bigPack = work.appending(path: "big.zip")
        let bigWrite = try ChildProcess.measureAlone([exe, "format-worker", "write", big.path, bigPack.path])
        guard bigWrite.status == 0 else { throw ValidationFailure("writing the large pack failed") }
        try FileManager.default.removeItem(at: big)
        let bigManifest = work.appending(path: "big.json")
        try Data(bigWrite.output.utf8).write(to: bigManifest)
        let bigVerify = try ChildProcess.measureAlone([exe, "format-worker", "verify", bigPack.path, bigManifest.path])
        guard bigVerify.status == 0 else { throw ValidationFailure("verifying the large pack failed") }
        print("writer peak memory: \(BenchFormat.mib(write.peakMemory)) at \(sizeMiB) MiB, \(BenchFormat.mib(bigWrite.peakMemory)) at \(memoryPackMiB) MiB (target < 64 MiB)")
        print("reader peak memory: \(BenchFormat.mib(bigVerify.peakMemory)) at \(memoryPackMiB) MiB (target < 64 MiB)")
        let idle = try ChildProcess.measureAlone([exe, "format-worker", "idle", "-", "-"])
        print("(an idle odrbench process, which links every module, peaks at \(BenchFormat.mib(idle.peakMemory)))")
    }
}

/// The child-process side of `odrbench format`, so each step's memory is measured alone.
struct FormatWorker: ParsableCommand {
    static let configuration = CommandConfiguration(commandName: "format-worker", shouldDisplay: false)

    @Argument var action: String
    @Argument var input: String
    @Argument var output: String

    func run() throws {
        switch action {
        case "write":
            let root = URL(filePath: input)
            let names = try FileManager.default.contentsOfDirectory(atPath: root.path).sorted()
            let writer = try PackWriter(creating: URL(filePath: output))
            for name in names { _ = try writer.addEntry(named: name, contentsOf: root.appending(path: name)) }
            let summary = try writer.finish()
            let entries = summary.entries.map {
                ["name": $0.name, "method": $0.method.rawValue, "stored": String($0.storedSize), "size": String($0.size),
                 "offset": String($0.headerOffset), "sha256": $0.sha256]
            }
            let object: [String: Any] = ["sha256": summary.sha256, "entries": entries]
            print(String(decoding: try JSONSerialization.data(withJSONObject: object), as: UTF8.self))
        case "verify":
            let object = try JSONSerialization.jsonObject(with: Data(contentsOf: URL(filePath: output))) as? [String: Any]
            guard let sha = object?["sha256"] as? String, let list = object?["entries"] as? [[String: String]] else {
                throw ValidationError("bad entries file")
            }
            let entries = try list.map { e -> PackEntryExpectation in
                guard let name = e["name"], let method = e["method"].flatMap(CompressionMethod.init(rawValue:)),
                      let stored = e["stored"].flatMap(Int64.init), let size = e["size"].flatMap(Int64.init),
                      let offset = e["offset"].flatMap(Int64.init), let digest = e["sha256"] else {
                    throw ValidationError("bad entry")
                }
                return PackEntryExpectation(name: name, method: method, storedSize: stored, size: size, headerOffset: offset, sha256: digest)
            }
            try PackArchive(contentsOf: URL(filePath: input)).verify(expecting: entries, archiveSHA256: sha)
        case "idle":
            return
        default:
            throw ValidationError("unknown action \(action)")
        }
    }
}

/// Generated benchmark content: half compressible text, half incompressible bytes, in files of
/// 256 KiB to 8 MiB.
enum MixedTree {
    static func generate(at root: URL, bytes: Int64, seed: UInt64) throws {
        try FileManager.default.createDirectory(at: root, withIntermediateDirectories: true)
        var state = seed &* 0x9E37_79B9_7F4A_7C15 | 1
        func next() -> UInt64 {
            state ^= state << 13; state ^= state >> 7; state ^= state << 17
            return state
        }
        var written: Int64 = 0
        var index = 0
        while written < bytes {
            let size = Int(min(Int64(256 << 10) + Int64(next() % UInt64(8 << 20)), bytes - written))
            let media = index % 2 == 1
            var data = [UInt8](repeating: 0, count: size)
            if media {
                data.withUnsafeMutableBytes { raw in
                    let words = raw.bindMemory(to: UInt64.self)
                    for i in 0..<words.count { words[i] = next() }
                }
            } else {
                var line = 0
                var offset = 0
                while offset < size {
                    let text = "{\"id\": \(line), \"tile\": \(next() % 512), \"kind\": \"grass\", \"height\": \(next() % 64)},\n"
                    for byte in text.utf8 where offset < size { data[offset] = byte; offset += 1 }
                    line += 1
                }
            }
            let name = String(format: "%05d.%@", index, media ? "png" : "json")
            try Data(data).write(to: root.appending(path: name))
            written += Int64(size)
            index += 1
        }
    }
}
