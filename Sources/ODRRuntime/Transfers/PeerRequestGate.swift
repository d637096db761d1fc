#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// At most ``limit`` requests at once to each peer, over every install that shares the gate (a
/// manager's: it installs several packs at once, each asking the peers for its entries).
///
/// A share answers the request past its per-address limit 503 at once (`ShareLimits` in ODRServe:
/// 2 per address by default), and an installer drops a peer that answers an error for the rest of
/// that install. Without the gate, a manager installing four packs asked one peer for up to eight
/// entries at once, and an install from a share with the default limits took a fifth to a half of
/// its bytes from the CDN.
///
/// ```swift
/// let gate = PeerRequestGate(limit: 2)
/// await gate.acquire(peer)
/// defer { gate.release(peer) }
/// // one request to `peer`
/// ```
public final class PeerRequestGate: Sendable {
    /// Requests at once to one peer.
    public let limit: Int
    private let state = Locked<[URL: Slots]>([:])

    private struct Slots {
        var busy = 0
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    /// The default limit: what a share serves one address at once by default.
    public static let defaultLimit = 2

    public init(limit: Int = defaultLimit) {
        self.limit = max(1, limit)
    }

    /// Returns once a request to `peer` may start; pair it with ``release(_:)``.
    public func acquire(_ peer: URL) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let granted = state.withLock { peers in
                var slots = peers[peer, default: Slots()]
                defer { peers[peer] = slots }
                guard slots.busy < limit else {
                    slots.waiting.append(continuation)
                    return false
                }
                slots.busy += 1
                return true
            }
            if granted { continuation.resume() }
        }
    }

    /// Ends a request to `peer`: the oldest waiting one starts.
    public func release(_ peer: URL) {
        let next = state.withLock { peers -> CheckedContinuation<Void, Never>? in
            guard var slots = peers[peer] else { return nil }
            defer { peers[peer] = slots.busy == 0 && slots.waiting.isEmpty ? nil : slots }
            // The slot passes to the oldest waiter, still counted busy.
            guard slots.waiting.isEmpty else { return slots.waiting.removeFirst() }
            slots.busy -= 1
            return nil
        }
        next?.resume()
    }
}
