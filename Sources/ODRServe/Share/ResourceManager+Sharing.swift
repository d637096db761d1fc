import Logging
import ODRRuntime

extension ResourceManager {
    /// Shares this manager's store with peers on the local network: its installed, verified
    /// content by SHA-256, read-only over HTTP (see ``ShareServer``). Off until called; stop it with
    /// ``ShareServer/stop()``.
    ///
    /// - Parameters:
    ///   - host: the address to listen on: loopback by default; `0.0.0.0` shares with the LAN.
    ///   - port: the port (default 7420; 0 picks a free one).
    ///   - limits: transfers at once and the byte rate (defaults: 4, 2 per address, 32 MiB/s).
    /// - Throws: ``ServeError`` with `bindFailed`.
    ///
    /// ```swift
    /// let sharing = try await manager.startSharing(host: "0.0.0.0")
    /// // ... later
    /// await sharing.stop()
    /// ```
    public func startSharing(
        host: String = "127.0.0.1", port: Int = ShareServer.defaultPort, limits: ShareLimits = ShareLimits(),
        logger: Logger = Logger(label: "odr.share")
    ) async throws(ServeError) -> ShareServer {
        try await ShareServer.start(source: StoreShareSource(store: store), host: host, port: port, limits: limits, logger: logger)
    }
}
