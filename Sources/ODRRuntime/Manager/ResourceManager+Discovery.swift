#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// One discovery of a catalog's peers, shared by the installs that start while it runs and reused
/// for ``ResourceManager/peerDiscoveryReuseSeconds``.
final class PeerDiscoveryRun: Sendable {
    let startedAt: ContinuousClock.Instant
    let peers: Task<[URL], Never>

    init(peers: Task<[URL], Never>) {
        startedAt = .now
        self.peers = peers
    }
}

extension ResourceManager {
    /// How long a discovery's peers are reused before the next install browses again.
    static let peerDiscoveryReuseSeconds: Int64 = 60

    /// The peers found on the local network for `catalogID` (empty unless
    /// ``Configuration/discoversPeers``). Never throws and never waits more than the discovery's
    /// timeout: a failure is logged in the store and leaves the explicit peers and the origins.
    func discoveredPeers(catalogID: String) async -> [URL] {
        guard configuration.discoversPeers else { return [] }
        let run = peerDiscoveries.withLock { runs in
            if let run = runs[catalogID], run.startedAt.duration(to: .now) < .seconds(Self.peerDiscoveryReuseSeconds) { return run }
            let discovery = PeerDiscovery(timeout: configuration.peerDiscoveryTimeout)
            let run = PeerDiscoveryRun(peers: Task { [store] in
                let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<PeerDiscovery.Report, PeerDiscoveryError>, Never>) in
                    // The bus is read with blocking calls: on a thread of its own, not the pool's.
                    RuntimeThreads.start(name: "odr-discovery") {
                        continuation.resume(returning: Result { () throws(PeerDiscoveryError) in try discovery.discover(catalogID: catalogID) })
                    }
                }
                // The log is a record, not a condition of the install: a failed write loses only the line.
                try? store.log(.discovery, DiscoveredService.serviceType, bytes: 0, reason: Self.logLine(result), doing: "log a discovery of peers")
                return (try? result.get().peers) ?? []
            })
            runs[catalogID] = run
            return run
        }
        return await run.peers.value
    }

    /// The store's log line for a discovery.
    static func logLine(_ result: Result<PeerDiscovery.Report, PeerDiscoveryError>) -> String {
        switch result {
        case .failure(let error):
            return "failed: \(error.code) \(error.message)"
        case .success(let report):
            var line = "found \(report.peers.count) peer\(report.peers.count == 1 ? "" : "s")"
            if !report.peers.isEmpty { line += " (\(report.peers.map(\.absoluteString).joined(separator: ", ")))" }
            for (service, reason) in report.ignored {
                line += "; ignored '\(service.name.prefix(63))' at \(service.address.prefix(46)):\(service.port): \(reason)"
            }
            return line
        }
    }
}
