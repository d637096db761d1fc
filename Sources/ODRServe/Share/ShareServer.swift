#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Logging
import ODRFormat
import ODRRuntime

/// What a share server serves: content by SHA-256, located by the caller (a ``ResourceStore`` by
/// default, see ``StoreShareSource``). The server never builds a path from a request: it hands a
/// validated digest to ``locate(sha256:)`` and serves what that returns.
public protocol ShareSource: Sendable {
    /// Where the content with SHA-256 `digest` (64 lowercase hex digits, already validated) is, or
    /// `nil` when it is not shared.
    func locate(sha256 digest: String) -> SharedContent?
    /// Whether `content` may still be served: checked before the body starts and as it goes, so a
    /// file whose pack is being purged stops being served mid-body.
    func isStillShared(_ content: SharedContent) -> Bool
}

/// Shares a store's installed, verified content: a file or chunk is located in the store's
/// database by its digest, and must still be installed (and its file still in `packs/`) while it
/// is served.
public struct StoreShareSource: ShareSource {
    /// The store shared.
    public let store: ResourceStore

    /// Shares `store`.
    public init(store: ResourceStore) { self.store = store }

    public func locate(sha256 digest: String) -> SharedContent? {
        guard let content = try? store.sharedContent(sha256: digest) else { return nil }
        // Defence in depth: the file must be a regular file inside the store's pack folder.
        let packs = store.packURL(id: content.packID).path
        guard let real = realpath(content.file.path, nil) else { return nil }
        defer { free(real) }
        let resolved = String(cString: real)
        guard resolved.hasPrefix(packs.hasSuffix("/") ? packs : packs + "/") else { return nil }
        var info = stat()
        guard lstat(resolved, &info) == 0, info.st_mode & S_IFMT == S_IFREG,
              Int64(info.st_size) >= content.offset + content.size else { return nil }
        return content
    }

    public func isStillShared(_ content: SharedContent) -> Bool {
        access(content.file.path, F_OK) == 0 && store.isPackInstalled(content.packID)
    }
}

/// How much a share server may take from the device that shares (docs/STORE.md, "Local network peers").
public struct ShareLimits: Sendable, Hashable {
    /// Transfers (bodies being sent) at once over all clients; more are answered 503 at once
    /// (default 4).
    public var maximumConcurrentTransfers: Int
    /// Transfers at once from one client address (default 2), so one device (or one flood of
    /// connections) cannot take every slot.
    public var maximumTransfersPerAddress: Int
    /// Bytes per second over all transfers, `nil` for no limit (default 32 MiB/s: a quarter of a
    /// gigabit link, a fraction of any disk, so the game that shares keeps its own bandwidth).
    public var bytesPerSecond: Int64?
    /// Connections open at once over all clients (default 64, or twice
    /// ``maximumConcurrentTransfers`` when that is more). Past it the share stops accepting until
    /// one closes, so a flood of connections holds a bounded number of the process's file
    /// descriptors (a game's own, when the game shares) and of its memory.
    public var maximumConnections: Int
    /// Connections open at once from one client address (default 8, or twice
    /// ``maximumTransfersPerAddress`` when that is more); more are closed as soon as they are
    /// accepted, so one device cannot take every connection. An installer keeps 2 open to a peer.
    public var maximumConnectionsPerAddress: Int
    /// Seconds a connection stays open with no request under way, or while it has not sent a
    /// whole request head (default 10): then it is closed, so idle or trickling connections do
    /// not hold the connection limits. An installer opens a new one when it needs it.
    public var idleConnectionSeconds: Int

    /// The defaults: 4 transfers, 2 per address, 32 MiB/s; 64 connections, 8 per address, closed
    /// after 10 s idle.
    public init(maximumConcurrentTransfers: Int = 4, maximumTransfersPerAddress: Int = 2, bytesPerSecond: Int64? = 32 << 20,
                maximumConnections: Int? = nil, maximumConnectionsPerAddress: Int? = nil, idleConnectionSeconds: Int = 10) {
        self.maximumConcurrentTransfers = max(1, maximumConcurrentTransfers)
        self.maximumTransfersPerAddress = max(1, maximumTransfersPerAddress)
        self.bytesPerSecond = bytesPerSecond.map { max(1, $0) }
        let twice = { (count: Int) in count > Int.max / 2 ? Int.max : count * 2 }
        self.maximumConnections = max(1, maximumConnections ?? max(64, twice(self.maximumConcurrentTransfers)))
        self.maximumConnectionsPerAddress = max(1, maximumConnectionsPerAddress ?? max(8, twice(self.maximumTransfersPerAddress)))
        self.idleConnectionSeconds = max(1, idleConnectionSeconds)
    }

    /// No rate limit and generous slots: for measurements over loopback.
    public static let unlimited = ShareLimits(maximumConcurrentTransfers: 64, maximumTransfersPerAddress: 64, bytesPerSecond: nil)
}

/// Serves a store's verified content to peers, read-only over HTTP (`odr share`,
/// ``ODRRuntime/ResourceManager/startSharing(host:port:limits:logger:)``).
///
/// One resource family only: `GET` or `HEAD /odr/v1/sha256/<64 lowercase hex digits>`, whole or
/// with one byte range. Nothing lists what is shared, any other path is 404, a malformed digest
/// 400, content the store does not hold installed 404, and a full server 503. Built on the same
/// Hummingbird listener as `odrpack serve` (``CatalogServer``).
///
/// ```swift
/// let server = try await ShareServer.start(source: StoreShareSource(store: store), host: "0.0.0.0", port: 7420)
/// // peers: Configuration.peers = [URL(string: "http://<this machine>:7420/")!]
/// await server.stop()
/// ```
public final class ShareServer: Sendable {
    /// The host the server listens on.
    public let host: String
    /// The port the server listens on.
    public let port: Int
    /// `http://host:port/`: the URL peers name.
    public let baseURL: URL
    /// The limits in force.
    public let limits: ShareLimits

    private let listener: Listener
    private let log: RequestLog
    private let responder: ShareResponder
    private let connections: AddressSlots
    private let announcement = Locked<PeerAnnouncement?>(nil)

    /// The port `odr share` listens on by default.
    public static let defaultPort = 7420

    private init(host: String, baseURL: URL, limits: ShareLimits, listener: Listener, log: RequestLog, responder: ShareResponder,
                 connections: AddressSlots) {
        self.host = host
        port = listener.port
        self.baseURL = baseURL
        self.limits = limits
        self.listener = listener
        self.log = log
        self.responder = responder
        self.connections = connections
    }

    /// Starts serving `source` and returns once the port accepts connections.
    ///
    /// - Parameters:
    ///   - host: the address to listen on; loopback by default. Sharing on a LAN needs `0.0.0.0`
    ///     (or the LAN address): an explicit choice.
    ///   - port: the port; 0 picks a free one (read it back from ``port``).
    /// - Throws: ``ServeError`` with `bindFailed`.
    public static func start(
        source: any ShareSource, host: String = "127.0.0.1", port: Int = defaultPort, limits: ShareLimits = ShareLimits(),
        logger: Logger = Logger(label: "odr.share")
    ) async throws(ServeError) -> ShareServer {
        guard (0...65535).contains(port) else {
            throw ServeError(.bindFailed, "The port \(port) is not a TCP port: use 0 (any free port) to 65535.")
        }
        var frameworkLogger = logger
        frameworkLogger.logLevel = logger.logLevel <= .debug ? logger.logLevel : .critical
        let log = RequestLog(capacity: requestLogCapacity)
        let responder = ShareResponder(source: source, limits: limits, log: log, logger: logger)
        let connections = ConnectionLimits(maximumConnections: limits.maximumConnections, perAddress: limits.maximumConnectionsPerAddress,
                                           idleSeconds: limits.idleConnectionSeconds)
        let listener = try await Listener(host: host, port: port, offline: false, responder: responder, logger: frameworkLogger,
                                          serverName: "odr-share", connections: connections)
        let urlHost = host.contains(":") ? "[\(host)]" : host
        guard let baseURL = URL(string: "http://\(urlHost):\(listener.port)/") else {
            await listener.stop()
            throw ServeError(.bindFailed, "The host \(host) cannot appear in a URL: use an IP address such as 127.0.0.1.")
        }
        logger.info("Sharing at \(baseURL) (\(limits.maximumConcurrentTransfers) transfers, \(limits.bytesPerSecond.map { "\($0) bytes/s" } ?? "no rate limit"))")
        return ShareServer(host: host, baseURL: baseURL, limits: limits, listener: listener, log: log, responder: responder, connections: connections.open)
    }

    /// The newest requests (at most ``requestLogCapacity``), in arrival order (see
    /// ``CatalogServer/requests()``).
    public func requests() -> [ServedRequest] { log.requests }

    /// Requests answered or being answered since the start, including those ``requests()`` no
    /// longer keeps.
    public var requestCount: Int { log.count }

    /// How many requests ``requests()`` keeps: a game may share for hours, so the log is bounded.
    public static let requestLogCapacity = 10_000

    /// Returns once no request is being answered.
    public func waitUntilIdle() async { await log.waitUntilIdle() }

    /// Transfers being sent now.
    public var activeTransfers: Int { responder.slots.active }

    /// Connections open now (``ShareLimits/maximumConnections``).
    public var openConnections: Int { connections.active }

    /// Connections closed as soon as they were accepted since the start, their address having
    /// ``ShareLimits/maximumConnectionsPerAddress`` open already.
    public var refusedConnections: Int { connections.refused }

    /// Body bytes sent since the start.
    public var bytesSent: Int64 { responder.bytesSent.withLock { $0 } }

    /// Announces this server on the local network by DNS-SD (`_odr._tcp` through Avahi, one
    /// service per catalog id in `catalogIDs`, the id in the TXT record), until ``stop()``. Devices
    /// that discover peers (`odr fetch --discover`, ``ResourceManager/Configuration/discoversPeers``)
    /// then find it. Announce a server that listens on an address the LAN reaches (`0.0.0.0`).
    ///
    /// It returns once Avahi has taken the registration; Avahi then probes the names for about a
    /// second (``waitUntilAnnounced(timeout:)`` waits for that), and a name another device already
    /// uses is replaced by the next free one (`name #2`; ``announcementStatus`` has the names).
    ///
    /// - Parameters:
    ///   - name: the DNS-SD instance name (at most 63 bytes of UTF-8); by default `odr on <host>:<port>`.
    ///   - socketPath: the system bus's socket; by default from `DBUS_SYSTEM_BUS_ADDRESS`.
    /// - Throws: ``ServeError`` with `announceFailed` and the ``PeerDiscoveryError`` as its cause.
    public func announce(catalogIDs: [String], name: String? = nil, socketPath: String? = nil) throws(ServeError) {
        do {
            let made = try PeerAnnouncement(catalogIDs: catalogIDs, port: port, name: name, socketPath: socketPath)
            announcement.withLock { $0?.stop(); $0 = made }
        } catch {
            throw ServeError(.announceFailed, "The share server could not be announced on the local network: \(error.message)", cause: error)
        }
    }

    /// The DNS-SD names announced (empty when not announced); final once ``announcementStatus``
    /// is established.
    public var announcedNames: [String] { announcement.withLock { $0?.names ?? [] } }

    /// Where the announcement stands (`nil` when the server is not announced).
    public var announcementStatus: PeerAnnouncement.Status? { announcement.withLock { $0?.status } }

    /// Waits until Avahi has established the announcement's names, or the announcement has failed,
    /// at most `timeout`; `nil` when the server is not announced.
    public func waitUntilAnnounced(timeout: Duration) async -> PeerAnnouncement.Status? {
        guard let current = announcement.withLock({ $0 }) else { return nil }
        return await current.waitUntilSettled(timeout: timeout)
    }

    /// Stops listening, withdraws the announcement and closes every connection, and returns once
    /// the port is closed: bodies under way get at most a second to end, then their connections
    /// are closed, a peer's that stopped reading mid-body included. Calling it again does nothing.
    public func stop() async {
        withdraw()
        await listener.stop()
    }

    private func withdraw() {
        announcement.withLock { $0?.stop(); $0 = nil }
    }

    /// Cuts every connection at once, as a peer that dies (a laptop closed, a cable pulled) does:
    /// responses under way end mid-body. For tests and `odrbench peers`.
    public func kill() async {
        responder.killed.withLock { $0 = true }
        withdraw()
        await listener.stop()
    }
}
