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
    ///   - announce: whether to announce the server by DNS-SD (`_odr._tcp` through Avahi, with
    ///     the ids of the catalogs the store holds) so that devices that discover peers find it
    ///     (default `false`; see ``ShareServer/announce(catalogIDs:name:socketPath:)``).
    /// - Throws: ``ServeError`` with `bindFailed`, or `announceFailed` (the server is stopped then).
    ///
    /// ```swift
    /// let sharing = try await manager.startSharing(host: "0.0.0.0")
    /// // ... later
    /// await sharing.stop()
    /// ```
    public func startSharing(
        host: String = "127.0.0.1", port: Int = ShareServer.defaultPort, limits: ShareLimits = ShareLimits(),
        announce: Bool = false, logger: Logger = Logger(label: "odr.share")
    ) async throws(ServeError) -> ShareServer {
        let server = try await ShareServer.start(source: StoreShareSource(store: store), host: host, port: port, limits: limits, logger: logger)
        guard announce else { return server }
        do throws(ServeError) {
            try server.announce(catalogIDs: (try? store.storedCatalogIDs()) ?? [])
        } catch {
            await server.stop()
            throw error
        }
        return server
    }
}
