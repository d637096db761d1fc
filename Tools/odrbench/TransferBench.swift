import ArgumentParser
import Foundation
import Logging
import ODRRuntime
import ODRServe

/// `odrbench transfer`: the transfer engine against `curl` fetching the same files from the same
/// loopback server in the same run.
///
/// 1. One large file to disk: our throughput over `curl -o FILE`'s (target at least 0.9x).
/// 2. Many small files: our total time over one `curl --parallel` run's (target at most 1.2x).
struct TransferBench: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "transfer",
        abstract: "Download throughput and many-small-files time against curl, over loopback.",
        discussion: """
            Serves generated files with the development server in-process on 127.0.0.1, downloads them \
            with the transfer engine and with the curl command line, and prints both figures and their \
            ratio. Each measurement is the best of --runs, taken alternately. Generated files live in a \
            temporary directory that is removed afterwards.
            """
    )

    @Option(name: .customLong("large-mib"), help: "Size of the large file in MiB.")
    var largeMiB = 512

    @Option(help: "How many small files.")
    var smallCount = 256

    @Option(name: .customLong("small-kib"), help: "Size of each small file in KiB.")
    var smallKiB = 16

    @Option(help: "Runs of each measurement; the best is reported.")
    var runs = 3

    @Option(help: "The engine's maximum concurrent transfers.")
    var concurrency = TransferEngine.Configuration().maximumConcurrentTransfers

    @Option(help: "The curl executable used as the baseline.")
    var curl = "/usr/bin/curl"

    func validate() throws {
        guard largeMiB > 0, smallCount > 0, smallKiB > 0, runs > 0, concurrency > 0 else {
            throw ValidationError("Sizes, counts and runs must be positive.")
        }
        guard FileManager.default.isExecutableFile(atPath: curl) else {
            throw ValidationError("No curl executable at \(curl); install curl or pass --curl PATH.")
        }
    }

    func run() async throws {
        let workspace = FileManager.default.temporaryDirectory.appending(path: "odrbench-transfer-\(UUID().uuidString)")
        let served = workspace.appending(path: "served")
        let output = workspace.appending(path: "out")
        try FileManager.default.createDirectory(at: served.appending(path: "small"), withIntermediateDirectories: true)
        try FileManager.default.createDirectory(at: output, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: workspace) }

        print("Generating \(largeMiB) MiB and \(smallCount) x \(smallKiB) KiB under \(workspace.path) ...")
        try writeLargeFile(to: served.appending(path: "large.bin"), mebibytes: largeMiB)
        let smallPaths = (0..<smallCount).map { "small/\($0).bin" }
        for path in smallPaths {
            try benchBytes(count: smallKiB * 1024).write(to: served.appending(path: path))
        }

        let silent = Logger(label: "odrbench.serve") { _ in SwiftLogNoOpLogHandler() }
        let server = try await CatalogServer.start(root: served, logger: silent)
        do {
            let engine = try TransferEngine(configuration: .init(maximumConcurrentTransfers: concurrency))
            try await measureLargeFile(server: server, engine: engine, output: output)
            try await measureSmallFiles(server: server, engine: engine, paths: smallPaths, output: output)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }

    // MARK: Measurements

    private func measureLargeFile(server: CatalogServer, engine: TransferEngine, output: URL) async throws {
        let url = server.url(for: "large.bin")
        let bytes = Double(largeMiB) * 1024 * 1024
        var ours: [Duration] = []
        var theirs: [Duration] = []
        for _ in 0..<runs {
            let destination = output.appending(path: "large-ours.bin")
            ours.append(try await timed {
                _ = try await engine.download(TransferRequest(url: url), into: FileSink(url: destination))
            })
            try checkSize(of: destination, bytes: bytes)
            try FileManager.default.removeItem(at: destination)

            let curlDestination = output.appending(path: "large-curl.bin")
            theirs.append(try await timed {
                try runCurl(["--silent", "--show-error", "--fail", "-o", curlDestination.path, url.absoluteString])
            })
            try checkSize(of: curlDestination, bytes: bytes)
            try FileManager.default.removeItem(at: curlDestination)
        }
        let oursRate = bytes / seconds(ours.min()) / 1_048_576
        let curlRate = bytes / seconds(theirs.min()) / 1_048_576
        print("")
        print("Large file (\(largeMiB) MiB, loopback, to disk), best of \(runs):")
        print("  engine      \(format(oursRate)) MiB/s   runs: \(ours.map { format(seconds($0)) + " s" }.joined(separator: ", "))")
        print("  curl -o     \(format(curlRate)) MiB/s   runs: \(theirs.map { format(seconds($0)) + " s" }.joined(separator: ", "))")
        print("  throughput ratio engine/curl: \(format(oursRate / curlRate))x   (target >= 0.90x)")
    }

    private func measureSmallFiles(server: CatalogServer, engine: TransferEngine, paths: [String], output: URL) async throws {
        let urls = paths.map { server.url(for: $0) }
        var ours: [Duration] = []
        var theirs: [Duration] = []
        for _ in 0..<runs {
            let ourDirectory = output.appending(path: "small-ours")
            try FileManager.default.createDirectory(at: ourDirectory, withIntermediateDirectories: true)
            ours.append(try await timed {
                let handles = urls.enumerated().map { index, url in
                    engine.transfer(TransferRequest(url: url), into: FileSink(url: ourDirectory.appending(path: "\(index).bin")))
                }
                for handle in handles { _ = try await handle.result() }
            })
            try FileManager.default.removeItem(at: ourDirectory)

            let curlDirectory = output.appending(path: "small-curl")
            try FileManager.default.createDirectory(at: curlDirectory, withIntermediateDirectories: true)
            var arguments = ["--silent", "--show-error", "--no-progress-meter", "--fail", "--parallel"]
            for (index, url) in urls.enumerated() {
                arguments += ["-o", curlDirectory.appending(path: "\(index).bin").path, url.absoluteString]
            }
            theirs.append(try await timed { try runCurl(arguments) })
            try FileManager.default.removeItem(at: curlDirectory)
        }
        let oursTime = seconds(ours.min())
        let curlTime = seconds(theirs.min())
        print("")
        print("\(paths.count) files of \(smallKiB) KiB, best of \(runs):")
        print("  engine (cap \(engine.configuration.maximumConcurrentTransfers))   \(format(oursTime * 1000)) ms   runs: \(ours.map { format(seconds($0) * 1000) + " ms" }.joined(separator: ", "))")
        print("  curl --parallel  \(format(curlTime * 1000)) ms   runs: \(theirs.map { format(seconds($0) * 1000) + " ms" }.joined(separator: ", "))")
        print("  time ratio engine/curl: \(format(oursTime / curlTime))x   (target <= 1.20x)")
    }

    // MARK: Helpers

    private func timed(_ body: () async throws -> Void) async throws -> Duration {
        // Start every measurement with no dirty pages, so one side does not pay for the other's
        // (or the generator's) writeback.
        sync()
        let clock = ContinuousClock()
        let start = clock.now
        try await body()
        return clock.now - start
    }

    /// A figure only counts if the whole file arrived.
    private func checkSize(of file: URL, bytes: Double) throws {
        let attributes = try FileManager.default.attributesOfItem(atPath: file.path)
        let size = (attributes[.size] as? NSNumber)?.doubleValue ?? -1
        guard size == bytes else {
            throw ValidationError("\(file.lastPathComponent) has \(size) bytes, not \(bytes): the download was incomplete.")
        }
    }

    private func runCurl(_ arguments: [String]) throws {
        let process = Process()
        process.executableURL = URL(filePath: curl)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            throw ValidationError("curl exited with status \(process.terminationStatus).")
        }
    }

    /// Writes `mebibytes` MiB of incompressible bytes: one random MiB, each copy varied by its index.
    private func writeLargeFile(to url: URL, mebibytes: Int) throws {
        guard FileManager.default.createFile(atPath: url.path, contents: nil) else {
            throw ValidationError("Could not create \(url.path).")
        }
        let handle = try FileHandle(forWritingTo: url)
        defer { try? handle.close() }
        var block = benchBytes(count: 1 << 20)
        for index in 0..<mebibytes {
            block.withUnsafeMutableBytes { $0.storeBytes(of: UInt64(index).bigEndian, as: UInt64.self) }
            try handle.write(contentsOf: block)
        }
    }

    /// Incompressible bytes; they need not be reproducible, both downloaders fetch the same files.
    private func benchBytes(count: Int) -> Data {
        var generator = SystemRandomNumberGenerator()
        var data = Data(count: count)
        data.withUnsafeMutableBytes { (buffer: UnsafeMutableRawBufferPointer) in
            for index in stride(from: 0, to: count, by: 8) {
                var word = generator.next()
                for offset in index..<min(index + 8, count) {
                    buffer[offset] = UInt8(truncatingIfNeeded: word)
                    word >>= 8
                }
            }
        }
        return data
    }

    private func seconds(_ duration: Duration?) -> Double {
        guard let duration else { return .nan }
        return Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
    }

    private func format(_ value: Double) -> String {
        String(format: "%.2f", value)
    }
}
