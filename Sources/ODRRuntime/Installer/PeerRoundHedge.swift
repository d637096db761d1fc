import ODRFormat

/// Who writes each entry of one pack's peer round: the peers, or, once the round is hedged, the
/// origins (``PeerSet/hedgeSeconds``).
///
/// An entry is asked of a peer only through ``ask(_:)``, and handed to the origins only by
/// ``hedge(_:)``, both under one lock: an entry is never both, so a peer's sink and an origin's
/// range never write the same file in `staging/<id>.d/`. The hedge happens at most once, and only
/// while no peer has sent a byte of this round and the round has not ended (``close()``).
final class PeerRoundHedge: Sendable {
    private struct State {
        /// Entries requested from a peer (sent, or about to be).
        var asked: Set<String> = []
        /// Entries handed to the origins; `nil` until the round is hedged.
        var handedOver: Set<String>?
        var peerByte = false
        var closed = false
    }
    private let state = Locked(State())

    /// Claims `name` for a request to a peer; `false` when it was handed to the origins.
    func ask(_ name: String) -> Bool {
        state.withLock { state in
            guard state.handedOver?.contains(name) != true else { return false }
            state.asked.insert(name)
            return true
        }
    }

    /// Whether `name` was handed to the origins.
    func isHandedOver(_ name: String) -> Bool {
        state.withLock { $0.handedOver?.contains(name) == true }
    }

    /// Notes that a peer sent a byte: the round is not hedged after that.
    func peerSent() {
        state.withLock { $0.peerByte = true }
    }

    /// Hands every entry of `missing` not asked of a peer to the origins and returns them; `nil`
    /// (nothing handed) when a peer has sent a byte, the round ended, or it was hedged already.
    func hedge(_ missing: [PackEntryExpectation]) -> [PackEntryExpectation]? {
        state.withLock { state in
            guard !state.peerByte, !state.closed, state.handedOver == nil else { return nil }
            let handed = missing.filter { !state.asked.contains($0.name) }
            state.handedOver = Set(handed.map(\.name))
            return handed
        }
    }

    /// Ends the round's chance to be hedged; returns whether it was.
    func close() -> Bool {
        state.withLock { state in
            state.closed = true
            return state.handedOver != nil
        }
    }

    /// The entries handed to the origins (empty when the round was not hedged).
    var handedOver: Set<String> { state.withLock { $0.handedOver ?? [] } }
}
