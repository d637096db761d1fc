import ArgumentParser
import Foundation
import Logging
import ODRCommandLine
import ODRRuntime
import ODRServe

/// `odr share`: serves the store's verified content to peers on the local network.
struct ShareCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "share",
        abstract: "Serve the store's installed, verified content to other devices, read-only over HTTP, until stopped.",
        discussion: """
            Another device's odr fetch --peer URL (or a game's Configuration.peers) then asks this \
            store first for each file it needs, by SHA-256, and the CDN only for the rest. Only \
            GET and HEAD of /odr/v1/sha256/<digest> are served, whole or one byte range: a file \
            (or a chunk of a chunked file) the store's database says is installed, and never a \
            path from the request. Nothing lists what the store holds. A pack purged while shared \
            stops being served at once. A peer needs no trust: the device that installs checks \
            every byte against its signed catalog's digests.

            Sharing is off unless this runs (or a game calls startSharing). It listens on \
            loopback unless --host says otherwise; --host 0.0.0.0 shares with the local network. \
            Limits keep the device that shares responsive: --max-transfers bodies at once \
            (default 4, then 503), --max-per-address from one address (default 2), and --rate \
            bytes per second over all of them (default 32 MiB; 0 for no limit). It keeps at most \
            64 connections open (or twice --max-transfers), 8 from one address (or twice \
            --max-per-address; more are closed as soon as they are accepted), and closes a \
            connection idle for 10 s.

            Examples:
              odr share --store ./store
              odr share --store ./store --host 0.0.0.0 --port 7420
              odr fetch --catalog $CDN --store ./other --peer http://192.168.1.20:7420/ level1
            """)

    @OptionGroup var storeOption: StoreOption

    @Option(help: "The address to listen on (0.0.0.0 for every interface).")
    var host = "127.0.0.1"

    @Option(help: "The TCP port (0 picks a free one, printed at start).")
    var port = ShareServer.defaultPort

    @Option(name: .customLong("max-transfers"), help: "Bodies sent at once over all peers; more are answered 503.")
    var maxTransfers = 4

    @Option(name: .customLong("max-per-address"), help: "Bodies sent at once to one address.")
    var maxPerAddress = 2

    @Option(help: "Bytes per second over all transfers, as a byte size (32MiB, 100MB); 0 for no limit. (default: 32 MiB)",
            transform: ByteSizeArgument.bytes)
    var rate: Int64 = 32 << 20

    @Flag(help: "Announce the share on the local network (DNS-SD _odr._tcp through Avahi, with the ids of the store's catalogs), so odr fetch --discover finds it. Needs a --host the LAN reaches, such as 0.0.0.0.")
    var announce = false

    @Option(help: "The name to announce with --announce, at most 63 bytes of UTF-8 ('Living room Deck'); if another device on the network uses it, Avahi picks the next free one ('NAME #2'), which the share prints. (default: odr on <host>:<port>)")
    var name: String?

    @Flag(help: "Log every request (method, path, status, bytes, time) to standard error.")
    var verbose = false

    func validate() throws {
        guard maxTransfers >= 1 else { throw ValidationError("--max-transfers must be at least 1.") }
        guard maxPerAddress >= 1 else { throw ValidationError("--max-per-address must be at least 1.") }
        guard rate >= 0 else { throw ValidationError("--rate must be 0 (no limit) or a positive byte size.") }
        if let name {
            guard announce else { throw ValidationError("--name names the announcement: add --announce, or leave --name out.") }
            if let problem = PeerAnnouncement.problem(withName: name) { throw ValidationError("--name: \(problem)") }
        }
    }

    func run() async throws {
        try await reportingResourceErrors {
            let directory = URL(filePath: storeOption.path, directoryHint: .isDirectory)
            guard FileManager.default.fileExists(atPath: directory.appending(path: ResourceStore.databaseName).path) else {
                throw ResourceError(.storageFailure, "'\(storeOption.path)' holds no store (no \(ResourceStore.databaseName)). Pass the --store directory that odr fetch or your game uses.")
            }
            let store = try ResourceStore(directory: directory)
            // Before the server starts, so that a signal during startup is not lost.
            let signals = TerminationSignals(label: "odr.share.signals")
            var logger = Logger(label: "odr.share") { StreamLogHandler.standardError(label: $0) }
            logger.logLevel = verbose ? .info : .warning
            let limits = ShareLimits(maximumConcurrentTransfers: maxTransfers, maximumTransfersPerAddress: maxPerAddress,
                                     bytesPerSecond: rate == 0 ? nil : rate)
            let server: ShareServer
            do {
                server = try await ShareServer.start(source: StoreShareSource(store: store), host: host, port: port, limits: limits, logger: logger)
            } catch {
                throw ResourceError(.invalidArgument, "\(error)")
            }
            var announced: PeerAnnouncement.Status?
            if announce {
                let ids = try store.storedCatalogIDs()
                do throws(ServeError) {
                    try server.announce(catalogIDs: ids, name: name)
                } catch {
                    await server.stop()
                    throw ResourceError(.networkUnavailable, error.message)
                }
                // Avahi probes the names for about a second (more after a collision) before
                // devices that browse see them.
                announced = await server.waitUntilAnnounced(timeout: Self.announceWait)
                if case .failed(let error) = announced?.state {
                    await server.stop()
                    throw ResourceError(.networkUnavailable, "The share server could not be announced on the local network: \(error.message)")
                }
                if let announced { report(announced) }
            }
            print("Sharing \(storeOption.path) at \(server.baseURL) (\(maxTransfers) transfers, \(rate == 0 ? "no rate limit" : "\(byteText(rate))/s")). Stop with Ctrl-C.")
            fflush(nil)
            // Until SIGINT or SIGTERM, following the announcement: a device that joins the
            // network later with the same name makes Avahi pick another one.
            let following = Task { [announced] in
                var announced = announced
                while !Task.isCancelled {
                    try? await Task.sleep(for: .seconds(1))
                    if let now = server.announcementStatus, now != announced {
                        report(now)
                        announced = now
                    }
                }
            }
            let signal = await signals.next()
            following.cancel()
            FileHandle.standardError.write(Data("Received \(signal == SIGINT ? "SIGINT" : "SIGTERM"), stopping: responses under way get at most a second (send it again to exit at once).\n".utf8))
            await server.stop()
            withExtendedLifetime(signals) {}
        }
    }

    /// The most time `odr share --announce` waits for Avahi to establish the names before it says
    /// they are not confirmed yet (and goes on sharing).
    static let announceWait = Duration.seconds(5)

    /// Says where the announcement stands: names on standard output once established, the rest
    /// on standard error.
    private func report(_ status: PeerAnnouncement.Status) {
        let names = status.names.map { "'\($0)'" }.joined(separator: ", ")
        switch status.state {
        case .established:
            let renamed = status.renames == 0 ? "" : "; the name was taken on the local network, so Avahi picked the next free one"
            // Said again after a rename, and after avahi-daemon restarted (the status differs in avahiRestarts).
            print("Announced as \(names) (DNS-SD \(DiscoveredService.serviceType)\(renamed)).")
        case .registering:
            FileHandle.standardError.write(Data("Avahi has not confirmed the announcement as \(names) yet (it probes each name, and picks another when a device on the network uses it); sharing goes on, and 'Announced as' follows once it confirms.\n".utf8))
        case .waitingForAvahi:
            FileHandle.standardError.write(Data("avahi-daemon left the system bus (it stopped or restarts) and took the announcement as \(names) with it; sharing goes on, the share registers the names again once avahi-daemon is back, and 'Announced as' follows.\n".utf8))
        case .failed(let error):
            FileHandle.standardError.write(Data("The share is no longer announced on the local network (\(error.code)): \(error.message) Sharing goes on; peers can still name this share's URL.\n".utf8))
        }
        fflush(nil)
    }
}
