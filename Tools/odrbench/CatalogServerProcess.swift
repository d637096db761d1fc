#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// `odrpack serve` running as a child process, serving one folder on loopback.
///
/// Benchmarks that time `odr` or `curl` against a server run it in its own process, so the server's
/// threads and memory are never counted against odrbench, and it serves exactly as in development.
/// The server's request log (its stderr) is kept in a file; ``requests(since:)`` reads it back.
///
/// ```swift
/// let server = try CatalogServerProcess.start(serving: folder, executable: try ChildProcess.sibling("odrpack"))
/// defer { server.stop() }
/// let mark = server.logMark
/// // ... run a client against server.url(for: "catalog/") ...
/// let packRequests = server.requests(since: mark).filter { $0.target.hasPrefix("/catalog/packs/") }
/// ```
final class CatalogServerProcess {
    /// The URL the server printed, ending in `/`.
    let baseURL: URL
    private let pid: pid_t
    private let logURL: URL
    private var stopped = false
    private var frozen = false

    private init(baseURL: URL, pid: pid_t, logURL: URL) {
        self.baseURL = baseURL
        self.pid = pid
        self.logURL = logURL
    }

    deinit { stop() }

    /// Starts `executable serve root --port 0` and waits until it prints the URL it listens on.
    ///
    /// - Throws: ``ValidationFailure`` when the server cannot start, exits, or prints no URL before
    ///   `timeout`; the message quotes its log. The process is stopped before throwing.
    static func start(serving root: URL, executable: String, timeout: Duration = .seconds(30)) throws -> CatalogServerProcess {
        let logURL = FileManager.default.temporaryDirectory.appending(path: "odrbench-serve-\(UUID().uuidString).log")
        var ends: [Int32] = [-1, -1]
        // Close-on-exec, so later children (odr, curl) do not hold the pipe; the child's stdout is a dup2 copy.
        guard pipe(&ends) == 0, fcntl(ends[0], F_SETFD, FD_CLOEXEC) == 0, fcntl(ends[1], F_SETFD, FD_CLOEXEC) == 0 else {
            throw ValidationFailure("could not make a pipe for odrpack serve: \(String(cString: strerror(errno)))")
        }
        let (readEnd, writeEnd) = (ends[0], ends[1])
        defer { close(readEnd) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, writeEnd, 1)
        posix_spawn_file_actions_addopen(&actions, 2, logURL.path, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
        let arguments = [executable, "serve", root.path, "--port", "0"]
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable, &actions, nil, argv, environ)
        close(writeEnd)  // The child holds its copy: end of file on the read end now means it exited.
        guard spawned == 0 else {
            throw ValidationFailure("could not start \(executable): \(String(cString: strerror(spawned)))")
        }

        let line: String
        do {
            line = try readLine(from: readEnd, deadline: .now + timeout)
        } catch {
            terminate(pid)
            let log = (try? String(contentsOf: logURL, encoding: .utf8)) ?? ""
            try? FileManager.default.removeItem(at: logURL)
            throw ValidationFailure("odrpack serve did not report its URL (\(error)); its log:\n\(log)")
        }
        guard let printed = URL(string: line.trimmingCharacters(in: .whitespacesAndNewlines)), printed.scheme == "http" else {
            terminate(pid)
            try? FileManager.default.removeItem(at: logURL)
            throw ValidationFailure("odrpack serve printed \(line.debugDescription), not a URL")
        }
        let baseURL = printed.absoluteString.hasSuffix("/") ? printed : printed.appending(path: "", directoryHint: .isDirectory)
        return CatalogServerProcess(baseURL: baseURL, pid: pid, logURL: logURL)
    }

    /// The URL of `path`, relative to the served folder (`"mixed/"`, `"mixed/packs/x.zip"`).
    func url(for path: String) -> URL {
        baseURL.appending(path: path, directoryHint: path.hasSuffix("/") ? .isDirectory : .notDirectory)
    }

    /// Stops the server: SIGTERM, then SIGKILL if it has not exited within `grace`. Idempotent.
    func stop(grace: Duration = .seconds(5)) {
        guard !stopped else { return }
        stopped = true
        // A frozen process takes no SIGTERM until continued: it would only wait out the grace.
        Self.terminate(pid, grace: frozen ? .zero : grace)
        try? FileManager.default.removeItem(at: logURL)
    }

    /// Freezes the server (SIGSTOP) the way a hung origin behaves: the kernel still completes the
    /// connections its listening socket is asked for (up to the backlog), and nothing ever answers
    /// them; a response being sent stops where it is. ``stop(grace:)`` then kills it at once.
    func freeze() {
        guard !stopped else { return }
        frozen = true
        kill(pid, SIGSTOP)
    }

    /// Kills the server the way a crashed origin dies, and says how many bytes it had written:
    /// freezes it (SIGSTOP), reads `wchar` from `/proc/PID/io` (every byte it wrote to sockets and
    /// its log: an upper bound of what it sent), then SIGKILL. `nil` when `/proc` cannot be read
    /// (the server is killed anyway).
    func freezeAndKill() -> Int64? {
        guard !stopped else { return nil }
        stopped = true
        kill(pid, SIGSTOP)
        let io = try? String(contentsOfFile: "/proc/\(pid)/io", encoding: .utf8)
        let written = io?.split(whereSeparator: \.isNewline).first { $0.hasPrefix("wchar:") }
            .flatMap { Int64($0.dropFirst("wchar:".count).trimmingCharacters(in: .whitespaces)) }
        kill(pid, SIGKILL)
        var status: Int32 = 0
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
        try? FileManager.default.removeItem(at: logURL)
        return written
    }

    // MARK: The request log

    /// One request as the server logged it on completion.
    struct LoggedRequest: Equatable {
        var method: String
        /// The request target, e.g. `/stored/packs/ab12.zip`.
        var target: String
        var status: Int
        /// Body bytes sent.
        var bytes: Int64
        /// The `Range` header's value (`bytes=0-99`), when the request had one.
        var range: String?
    }

    /// The log's current length, to pass to ``requests(since:)`` after the requests of interest.
    var logMark: Int { Int((try? FileManager.default.attributesOfItem(atPath: logURL.path)[.size] as? NSNumber)?.int64Value ?? 0) }

    /// The requests logged after `mark`.
    ///
    /// The server writes a request's line once the body is sent, which can be just after the client
    /// has its last byte and exits; so this waits (up to a second) until the log stops growing.
    func requests(since mark: Int) -> [LoggedRequest] {
        let deadline = ContinuousClock.now + .seconds(1)
        var length = logMark, quietSince = ContinuousClock.now
        while ContinuousClock.now < deadline, ContinuousClock.now - quietSince < .milliseconds(100) {
            usleep(10_000)
            let current = logMark
            if current != length { (length, quietSince) = (current, .now) }
        }
        guard let data = try? Data(contentsOf: logURL), data.count > mark else { return [] }
        return String(decoding: data[mark...], as: UTF8.self).split(whereSeparator: \.isNewline).compactMap(Self.parse)
    }

    /// Parses a request line of `odrpack serve`'s log, for example
    /// `... info odrpack.serve: connection=3 range=bytes=0-1048575 [ODRServe] GET /x/packs/a.zip 206 1048576 bytes 2.1 ms`;
    /// `nil` for other lines.
    static func parse(_ line: Substring) -> LoggedRequest? {
        let fields = line.split(separator: " ")
        let methods: Set<Substring> = ["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"]
        guard let at = fields.indices.first(where: { methods.contains(fields[$0]) && $0 + 4 < fields.count && fields[$0 + 4] == "bytes" }),
              let status = Int(fields[at + 2]), let bytes = Int64(fields[at + 3]) else { return nil }
        let range = fields[..<at].first { $0.hasPrefix("range=") }.map { String($0.dropFirst("range=".count)) }
        return LoggedRequest(method: String(fields[at]), target: String(fields[at + 1]), status: status, bytes: bytes, range: range)
    }

    // MARK: Process plumbing

    /// Reads until the first newline, waiting with `poll` until `deadline`.
    private static func readLine(from descriptor: Int32, deadline: ContinuousClock.Instant) throws -> String {
        var collected: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        while !collected.contains(UInt8(ascii: "\n")) {
            let remaining = deadline - .now
            guard remaining > .zero else { throw ValidationFailure("timed out") }
            let milliseconds = Int32(clamping: remaining.components.seconds * 1000 + remaining.components.attoseconds / 1_000_000_000_000_000 + 1)
            var request = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&request, 1, milliseconds)
            if ready < 0 && errno == EINTR { continue }
            guard ready >= 0 else { throw ValidationFailure("poll failed: \(String(cString: strerror(errno)))") }
            guard ready > 0 else { continue }
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0 && errno == EINTR { continue }
            guard count > 0 else { throw ValidationFailure("the server exited") }
            collected += buffer[..<count]
        }
        return String(decoding: collected.prefix { $0 != UInt8(ascii: "\n") }, as: UTF8.self)
    }

    /// SIGTERM, wait up to `grace` for the exit, then SIGKILL and wait.
    private static func terminate(_ pid: pid_t, grace: Duration = .seconds(5)) {
        kill(pid, SIGTERM)
        let deadline = ContinuousClock.now + grace
        var status: Int32 = 0
        while true {
            let reaped = waitpid(pid, &status, WNOHANG)
            if reaped == pid || (reaped < 0 && errno != EINTR) { return }
            if ContinuousClock.now >= deadline { break }
            usleep(10_000)
        }
        kill(pid, SIGKILL)
        while waitpid(pid, &status, 0) < 0 && errno == EINTR {}
    }
}
