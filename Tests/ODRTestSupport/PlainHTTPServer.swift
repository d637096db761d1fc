import Foundation

/// Python's built-in `http.server` serving a folder on a free loopback port, in a child process.
///
/// It answers every `GET` with the whole file and `200`, ignoring `Range` and `If-Range`, and
/// validates only by `Last-Modified` (to the second): the server a client meets when a proxy or a
/// plain origin drops range support.
///
/// ```swift
/// let log = try await withPlainHTTPServer(serving: folder) { server in
///     _ = try await engine.download(TransferRequest(url: server.url(for: "a.bin")), into: sink)
/// }
/// #expect(log.contains("\"GET /a.bin HTTP/1.1\" 200"))
/// ```
public final class PlainHTTPServer: Sendable {
    public let port: Int
    private let process: Process
    private let requestLog: Pipe

    private init(port: Int, process: Process, requestLog: Pipe) {
        self.port = port
        self.process = process
        self.requestLog = requestLog
    }

    /// Starts the server and returns once its port accepts connections.
    public static func start(serving directory: URL) async throws -> PlainHTTPServer {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/env")
        // Port 0: the system picks a free one, which the server prints (unbuffered, -u) once it listens.
        process.arguments = ["python3", "-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", directory.path]
        let output = Pipe(), requestLog = Pipe()
        process.standardOutput = output
        process.standardError = requestLog
        process.standardInput = FileHandle.nullDevice
        try process.run()
        do {
            let banner = await firstLine(of: output.fileHandleForReading)
            guard let port = banner.firstMatch(of: /port (\d+)/).flatMap({ Int($0.1) }) else {
                throw ServerStartFailure(description: "python3 -m http.server did not report its port (it printed \"\(banner)\")")
            }
            try await waitUntilAccepting(port: port)
            return PlainHTTPServer(port: port, process: process, requestLog: requestLog)
        } catch {
            kill(process.processIdentifier, SIGKILL)
            process.waitUntilExit()
            throw error
        }
    }

    /// The server's root, with a trailing slash.
    public var baseURL: URL { url(for: "") }

    /// The URL of `path` below the served folder.
    public func url(for path: String) -> URL {
        var components = URLComponents()
        components.scheme = "http"
        components.host = "127.0.0.1"
        components.port = port
        components.path = "/" + path
        return components.url ?? URL(filePath: "/unreachable")
    }

    /// Stops the server and returns its log: one line per request, as `"GET /path HTTP/1.1" 200 -`.
    public func stop() -> String {
        // SIGKILL, not `terminate()`: a child spawned from a concurrency-pool thread inherits that
        // thread's blocked signals, so it would never see SIGTERM. The log is complete: Python writes
        // it unbuffered.
        kill(process.processIdentifier, SIGKILL)
        process.waitUntilExit()
        return String(decoding: requestLog.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
    }

    /// Reads up to the first newline (or the end) on a thread of its own: the read blocks.
    private static func firstLine(of handle: FileHandle) async -> String {
        await withCheckedContinuation { continuation in
            Thread {
                var data = Data()
                while !data.contains(UInt8(ascii: "\n")) {
                    let chunk = handle.availableData
                    if chunk.isEmpty { break }
                    data.append(chunk)
                }
                continuation.resume(returning: String(decoding: data, as: UTF8.self))
            }.start()
        }
    }

    /// Tries to connect until the port accepts, for at most `timeout`.
    private static func waitUntilAccepting(port: Int, timeout: Duration = .seconds(30)) async throws {
        let deadline = ContinuousClock.now + timeout
        while !LoopbackConnection.canConnect(port: port) {
            guard ContinuousClock.now < deadline else {
                throw ServerStartFailure(description: "127.0.0.1:\(port) did not accept connections within \(timeout)")
            }
            try await Task.sleep(for: .milliseconds(10))
        }
    }
}

/// Why a test server could not be started.
public struct ServerStartFailure: Error, CustomStringConvertible {
    public var description: String
}

/// Runs `body` with a ``PlainHTTPServer`` serving `directory`, stops it whether `body` returns or
/// throws, and returns the server's request log.
public func withPlainHTTPServer(
    serving directory: URL,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (PlainHTTPServer) async throws -> Void
) async throws -> String {
    let server = try await PlainHTTPServer.start(serving: directory)
    do {
        try await body(server)
    } catch {
        _ = server.stop()
        throw error
    }
    return server.stop()
}
