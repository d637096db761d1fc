#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// What the network moved for one pack over every transfer of its install, across rounds:
/// ``PackInstaller/downloadFromOrigins(_:of:into:traffic:check:)`` adds each one, before its check,
/// and a transfer that failed as a whole (every origin down, or a damaged entry refused as it
/// arrived) adds what it had received when it failed.
struct PackTraffic: Sendable {
    /// Body bytes received over the network: every origin, attempt and retry, bytes later continued
    /// by a range request and bytes the final check refused included.
    var receivedBytes: Int64 = 0
    /// Bytes a range request continued instead of fetching them again, after a cut or a failover.
    var continuedBytes: Int64 = 0
    /// The origins whose bytes the pack kept, in the order they first sent (only with several origins).
    var origins: [URL] = []
    /// Body bytes received from each peer (see ``PackInstaller/peers``), checked or not, in the
    /// order they first sent.
    var peerBytes: [(peer: URL, bytes: Int64)] = []
}

/// The origin bookkeeping every request for pack bytes shares, whole archive, entry ranges or chunk
/// ranges: the origin that served bytes the installer refused is blamed, so the next attempt asks
/// another one (see ``PackInstaller/origins``).
extension PackInstaller {
    /// Downloads `request` (for bytes of the pack's archive) into `sink`, then runs `check` on the
    /// result. With several origins: a switch during the transfer marks the origin left as failed;
    /// an `integrity` failure (the sink or `check` refused the bytes) marks the origin that served
    /// them as failed and reports the switch the next attempt will make; success marks the serving
    /// origin as good. The bytes received (checked or not) and continued go to `traffic`, and on
    /// success every origin that sent bytes of the body.
    func downloadFromOrigins(
        _ request: TransferRequest, of pack: PackRecord, into sink: any TransferSink, traffic: Locked<PackTraffic>,
        check: (TransferResult) throws(ResourceError) -> Void = { _ throws(ResourceError) in }
    ) async throws(ResourceError) -> TransferResult {
        var request = request
        request.failedAfterReceiving = { bytes in traffic.withLock { $0.receivedBytes = $0.receivedBytes.clampedAdding(bytes) } }
        let origins = request.alternateURLs.isEmpty ? nil : self.origins
        let originSwitched = self.originSwitched
        // The origin serving now: the one to blame for bytes that fail verification.
        let serving = Locked(request.url)
        if let origins {
            request.originSwitched = { change in
                origins.markFailed(change.from)
                serving.withLock { $0 = change.to }
                originSwitched?(pack.id, change)
            }
        }
        do throws(ResourceError) {
            let result = try await transport.download(request, into: sink)
            traffic.withLock {
                $0.receivedBytes = $0.receivedBytes.clampedAdding(result.receivedBytes)
                $0.continuedBytes = $0.continuedBytes.clampedAdding(result.resumedBytes)
            }
            try check(result)
            if let origins, let served = result.servedBy, origins.origin(of: served) != nil {
                origins.markSucceeded(served)
                // The origins a failover left kept their bytes in the body: they served it too.
                let senders = (result.receivedFrom + [served]).compactMap { origins.origin(of: $0) }
                traffic.withLock { for origin in senders where !$0.origins.contains(origin) { $0.origins.append(origin) } }
            }
            return result
        } catch {
            if error.code == .integrity, let origins {
                let bad = serving.withLock { $0 }
                origins.markFailed(bad)
                if let next = origins.urls(of: pack.archivePath).first, next != bad {
                    originSwitched?(pack.id, TransferOriginSwitch(from: bad, to: next, reason: .integrity, keptBytes: 0))
                }
            }
            if error.code == .resourceUnavailable { throw Self.packMissing(pack, error, origins: origins?.origins.count ?? 1) }
            throw error
        }
    }

    /// `resource-unavailable` for a pack no origin has, naming the pack, its tags and the URL, and
    /// what usually causes it: the transfer's own message names only the status.
    static func packMissing(_ pack: PackRecord, _ error: ResourceError, origins: Int) -> ResourceError {
        let url = error.url?.absoluteString ?? pack.archivePath
        let tags = pack.tags.isEmpty ? "" : " (tags: \(pack.tags.joined(separator: ", ")))"
        let status = (error.cause as? HTTPStatusError).map { "HTTP \($0.status)" } ?? "missing"
        let everywhere = origins > 1 ? " on any of the \(origins) origins" : ""
        return ResourceError(.resourceUnavailable,
                             "Pack \(pack.id)\(tags) is not on the server\(everywhere): \(url) (\(status)). The catalog in use names a pack that was not published or was deleted since: publish packs with their catalog (odrpack publish uploads them first), and if a stale cache or CDN edge serves an old catalog.json after odrpack prune, wait for its max-age, or keep the packs of dropped versions published longer.",
                             url: error.url, cause: error.cause)
    }
}
