import Foundation

/// `rclone serve webdav` over a folder on a free loopback port: a real remote for `odrpack
/// publish` to upload to through rclone, whose files the test reads back from the folder.
///
/// ```swift
/// let dav = try await RcloneWebDAV.start(serving: folder.url)
/// defer { dav.stop() }
/// // publish to dav.remote("game"), then read folder.appending("game/catalog.json")
/// ```
public final class RcloneWebDAV: Sendable {
    /// The port the server listens on.
    public let port: Int
    private let process: RunningProcess

    private init(port: Int, process: RunningProcess) {
        self.port = port
        self.process = process
    }

    /// Whether `rclone` is on `PATH` (tests that need it are skipped otherwise).
    public static var isAvailable: Bool {
        (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
            .contains { FileManager.default.isExecutableFile(atPath: "\($0)/rclone") }
    }

    /// Starts serving `folder`; returns once the server has said where it listens.
    public static func start(serving folder: URL) async throws -> RcloneWebDAV {
        let rclone = try requireRclone()
        let process = try RunningProcess(rclone, ["serve", "webdav", folder.path, "--addr", "127.0.0.1:0"])
        var port: Int?
        try await waitUntil("rclone serve webdav to listen", timeout: .seconds(60)) {
            guard process.isRunning else {
                throw ServerStartFailure(description: "rclone serve webdav exited: \(process.stderr)")
            }
            port = Self.port(in: process.stderr)
            return port != nil
        }
        return RcloneWebDAV(port: port ?? 0, process: process)
    }

    /// The rclone connection string of `path` on this server (`:webdav,url='...':path`).
    public func remote(_ path: String) -> String {
        ":webdav,url='http://127.0.0.1:\(port)/':\(path)"
    }

    /// The process id, so a test can kill the server in the middle of an upload.
    public var processIdentifier: Int32 { process.processIdentifier }

    /// Stops the server.
    public func stop() async {
        try? await process.kill()
    }

    /// The port in rclone's "started on http://127.0.0.1:PORT/" line.
    static func port(in log: String) -> Int? {
        guard let range = log.range(of: "started on http://127.0.0.1:") else { return nil }
        let digits = log[range.upperBound...].prefix { $0.isNumber }
        return Int(digits)
    }
}

/// The rclone executable on `PATH`.
private func requireRclone() throws -> URL {
    for folder in (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":") {
        let candidate = URL(filePath: String(folder)).appending(path: "rclone")
        if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
    }
    throw ServerStartFailure(description: "rclone is not on PATH (apt install rclone)")
}
