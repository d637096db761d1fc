import Foundation

/// What the `curl` command line tool saw: an independent HTTP client to check servers against.
public struct CurlResponse: Sendable {
    /// curl's exit code: 0 for a complete transfer, 7 connection refused, 18 body shorter than
    /// announced, 52 empty reply, 56 failure receiving data (see `man curl`, EXIT CODES).
    public var exitCode: Int32
    /// The status of the last response, or 0 when none arrived.
    public var status: Int
    /// The header fields of the last response, names lowercased (a repeated field keeps the last).
    public var headers: [String: String]
    /// The body bytes received (all of them, even from a transfer that failed part way).
    public var body: Data
    /// curl's error message, if any.
    public var stderr: String

    /// The value of the header field `name` (any case).
    public func header(_ name: String) -> String? {
        headers[name.lowercased()]
    }
}

/// Runs `curl` without blocking a thread of Swift's cooperative pool, which matters when the
/// server being tested runs in the same process and needs those threads to answer.
public enum CurlCommand {
    /// Fetches `url` with extra curl `arguments` (such as `["-r", "0-99"]`, `["-I"]`,
    /// `["-H", "If-None-Match: \"x\""]` or `["--path-as-is"]`).
    ///
    /// Retries, redirects and globbing are off, so the response is exactly what the server sent.
    public static func fetch(_ url: URL, _ arguments: [String] = []) async throws -> CurlResponse {
        try await fetch(url.absoluteString, arguments)
    }

    /// Fetches a URL given as text, for targets `URL` would normalise (`/../`, `%2e%2e`).
    public static func fetch(_ url: String, _ arguments: [String] = []) async throws -> CurlResponse {
        let directory = try TemporaryDirectory(prefix: "odr-curl")
        let headerFile = directory.appending("headers")
        let bodyFile = directory.appending("body")
        guard FileManager.default.createFile(atPath: bodyFile.path, contents: nil) else {
            throw CocoaError(.fileWriteUnknown, userInfo: [NSLocalizedDescriptionKey: "could not create \(bodyFile.path)"])
        }
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = ["curl", "--silent", "--show-error", "--globoff", "--max-time", "120",
                             "--dump-header", headerFile.path, "--output", bodyFile.path]
            + arguments + [url]
        let errors = Pipe()
        process.standardError = errors
        process.standardOutput = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        let exitCode = try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Int32, any Error>) in
            process.terminationHandler = { continuation.resume(returning: $0.terminationStatus) }
            do {
                try process.run()
            } catch {
                process.terminationHandler = nil
                continuation.resume(throwing: error)
            }
        }
        let stderr = String(decoding: errors.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let (status, headers) = parseLastResponseHead((try? String(contentsOf: headerFile, encoding: .utf8)) ?? "")
        return CurlResponse(
            exitCode: exitCode,
            status: status,
            headers: headers,
            body: (try? Data(contentsOf: bodyFile)) ?? Data(),
            stderr: stderr
        )
    }

    /// The status and fields of the last head in curl's `--dump-header` file.
    private static func parseLastResponseHead(_ text: String) -> (Int, [String: String]) {
        var status = 0
        var headers: [String: String] = [:]
        for line in text.split(separator: "\r\n", omittingEmptySubsequences: true) {
            if line.hasPrefix("HTTP/") {
                status = line.split(separator: " ").dropFirst().first.flatMap { Int($0) } ?? 0
                headers = [:]
            } else if let colon = line.firstIndex(of: ":") {
                let name = line[..<colon].lowercased()
                headers[name] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            }
        }
        return (status, headers)
    }
}
