#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging

/// The development catalog server: serves a directory of static files over HTTP with byte ranges,
/// validators and conditional requests, and imitates bad networks on demand.
///
/// `odrpack serve` runs one; integration tests start one in-process on a free port (see
/// `withTestServer` in ODRTestSupport) and read back what it served.
///
/// ```swift
/// let server = try await CatalogServer.start(root: catalogURL)
/// defer { Task { await server.stop() } }
/// server.injectFaults(.status(503), count: 2, path: "/catalog.json")
/// // ... fetch server.url(for: "catalog.json") three times: 503, 503, 200 ...
/// print(server.requests().map(\.status))
/// ```
public final class CatalogServer: Sendable {
    /// The host the server listens on.
    public let host: String
    /// The port the server listens on; stays the same while it goes offline and back.
    public let port: Int
    /// `http://host:port/`, the URL of the catalog directory.
    public let baseURL: URL
    /// The directory served.
    public let root: URL

    private let conditioner: Conditioner
    private let log: RequestLog
    private let listener: Listener
    private let logger: Logger

    private init(
        host: String,
        baseURL: URL,
        root: URL,
        conditioner: Conditioner,
        log: RequestLog,
        listener: Listener,
        logger: Logger
    ) {
        self.host = host
        self.port = listener.port
        self.baseURL = baseURL
        self.root = root
        self.conditioner = conditioner
        self.log = log
        self.listener = listener
        self.logger = logger
    }

    /// Starts serving `root` and returns once the port accepts connections (or is reserved, when
    /// `conditions.offline`).
    ///
    /// - Parameters:
    ///   - root: the catalog directory (any directory of static files).
    ///   - host: the address to listen on; loopback by default, so nothing is exposed.
    ///   - port: the port; 0 picks a free one (read it back from ``port``).
    ///   - conditions: the network to imitate; change it later with ``setConditions(_:)``.
    ///   - logger: where each request is logged (method, path, range, status, bytes, time) at `info`.
    /// - Throws: ``ServeError`` with `catalogNotFound`, `invalidConditions` or `bindFailed`.
    public static func start(
        root: URL,
        host: String = "127.0.0.1",
        port: Int = 0,
        conditions: NetworkConditions = .perfect,
        logger: Logger = Logger(label: "odr.serve")
    ) async throws(ServeError) -> CatalogServer {
        try conditions.validate()
        guard (0...65535).contains(port) else {
            throw ServeError(.bindFailed, "The port \(port) is not a TCP port: use 0 (any free port) to 65535.")
        }
        let catalog = try CatalogRoot(url: root)
        let conditioner = Conditioner(conditions: conditions)
        let log = RequestLog()
        // Hummingbird's own messages (its start banner, the cancellation that stops it) are noise
        // next to the request log, unless debugging.
        var frameworkLogger = logger
        frameworkLogger.logLevel = logger.logLevel <= .debug ? logger.logLevel : .critical
        let responder = CatalogResponder(root: catalog, conditioner: conditioner, log: log, logger: logger)
        let listener = try await Listener(
            host: host,
            port: port,
            offline: conditions.offline,
            responder: responder,
            logger: frameworkLogger
        )
        let urlHost = host.contains(":") ? "[\(host)]" : host
        guard let baseURL = URL(string: "http://\(urlHost):\(listener.port)/") else {
            await listener.stop()
            throw ServeError(.bindFailed, "The host \(host) cannot appear in a URL: use an IP address such as 127.0.0.1.")
        }
        let server = CatalogServer(
            host: host,
            baseURL: baseURL,
            root: URL(filePath: catalog.path, directoryHint: .isDirectory),
            conditioner: conditioner,
            log: log,
            listener: listener,
            logger: logger
        )
        logger.info("Serving \(catalog.path) at \(server.baseURL) (\(conditions))")
        return server
    }

    /// The URL of a file of the catalog, such as `packs/<sha256>.zip`.
    public func url(for path: String) -> URL {
        baseURL.appending(path: path.hasPrefix("/") ? String(path.dropFirst()) : path)
    }

    /// The network conditions in force.
    public var conditions: NetworkConditions {
        conditioner.conditions
    }

    /// Changes the network conditions; requests that arrive after this returns see the new ones.
    ///
    /// Going offline closes the listening socket (new connections are refused) and drops open
    /// connections; coming back online listens on the same port again before this returns.
    /// - Throws: ``ServeError`` with `invalidConditions`, `bindFailed` (the port could not be
    ///   listened on again) or `stopped`.
    public func setConditions(_ conditions: NetworkConditions) async throws(ServeError) {
        try conditions.validate()
        // Offline first, so no request sneaks in under the new faults while the port is closing.
        if conditions.offline {
            conditioner.setConditions(conditions)
            try await listener.setOffline(true)
        } else {
            try await listener.setOffline(false)
            conditioner.setConditions(conditions)
        }
        logger.info("Network conditions: \(conditions)")
    }

    /// Schedules `fault` for the next `count` requests whose decoded path is `path` (any path when nil).
    ///
    /// Faults are consumed in the order scheduled. A fault acting on the body (truncate, corrupt,
    /// stall) is only consumed by a GET whose body is long enough for it to change; the others by
    /// any matching request. They apply on top of the random faults of ``conditions``.
    ///
    /// ```swift
    /// server.injectFaults(.status(503), count: 2, path: "/packs/a.zip")
    /// server.injectFaults(.truncate(afterBytes: 4096), path: "/packs/a.zip")
    /// ```
    public func injectFaults(_ fault: Fault, count: Int = 1, path: String? = nil) {
        conditioner.schedule(fault, count: count, path: path)
    }

    /// Scheduled faults not yet consumed, one element per remaining use.
    public var pendingFaults: [Fault] {
        conditioner.pendingFaults
    }

    /// Drops every scheduled fault not yet consumed.
    public func clearFaults() {
        conditioner.clearScheduled()
    }

    /// Every request since the start (or the last ``clearRequests()``), in arrival order.
    ///
    /// A request still being answered appears with outcome `inProgress` (and status 0 until its
    /// response is chosen, after any latency); call ``waitUntilIdle()``
    /// first to read final byte counts.
    public func requests() -> [ServedRequest] {
        log.requests
    }

    /// Forgets the requests logged so far, including any still being answered: a response that
    /// finishes after the call does not reappear in ``requests()``.
    public func clearRequests() {
        log.clear()
    }

    /// Returns once no request is being answered (immediately if none is).
    ///
    /// A client may see the last byte of a response a moment before the server records it as
    /// finished; wait here before asserting on ``requests()``.
    public func waitUntilIdle() async {
        await log.waitUntilIdle()
    }

    /// Stops listening, lets responses under way finish (for at most a second), closes every
    /// connection and releases the port. Calling it again does nothing.
    public func stop() async {
        await listener.stop()
        logger.debug("Stopped serving \(root.path)")
    }
}
