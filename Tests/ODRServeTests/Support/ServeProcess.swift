import Foundation
import ODRTestSupport

/// `odrpack serve` running as a child process, as a developer or a script runs it.
final class ServeProcess: Sendable {
    /// The built `odrpack` next to the test bundle, if the build made one.
    static let executable = builtExecutable(named: "odrpack")

    private let process: Process
    private let output: Pipe
    private let errors: Pipe
    private let exited: AsyncStream<Int32>

    /// Starts `odrpack` with `arguments`.
    init(_ arguments: [String]) throws {
        guard let executable = Self.executable else { throw SocketError(description: "odrpack is not built") }
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        output = Pipe()
        errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        let (exited, continuation) = AsyncStream<Int32>.makeStream()
        self.exited = exited
        process.terminationHandler = { process in
            continuation.yield(process.terminationStatus)
            continuation.finish()
        }
        try process.run()
    }

    /// The first line the process prints on stdout (the server's URL), or nil if it exits first.
    func firstLine() async -> String? {
        let handle = output.fileHandleForReading
        return await withCheckedContinuation { continuation in
            Thread {
                var bytes: [UInt8] = []
                while true {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    bytes += chunk
                    if bytes.contains(UInt8(ascii: "\n")) { break }
                }
                let line = bytes.split(separator: UInt8(ascii: "\n"), omittingEmptySubsequences: false).first
                continuation.resume(returning: line.flatMap { $0.isEmpty ? nil : String(decoding: $0, as: UTF8.self) })
            }.start()
        }
    }

    /// Everything the process prints on stdout until it exits.
    func collectOutput() async -> String {
        let handle = output.fileHandleForReading
        return await withCheckedContinuation { continuation in
            Thread { continuation.resume(returning: String(decoding: handle.readDataToEndOfFile(), as: UTF8.self)) }.start()
        }
    }

    /// Sends SIGINT (`true`) or SIGTERM (`false`).
    func signal(interrupt: Bool) {
        if interrupt { process.interrupt() } else { process.terminate() }
    }

    /// Waits for the process to exit and returns its status and everything it wrote on stderr.
    func waitForExit() async -> (status: Int32, stderr: String) {
        var iterator = exited.makeAsyncIterator()
        let status = await iterator.next() ?? -1
        let stderr = errors.fileHandleForReading.readDataToEndOfFile()
        return (status, String(decoding: stderr, as: UTF8.self))
    }
}
