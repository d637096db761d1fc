import ODRFormat

/// Who writes each entry of one pack's peer round: the peers, or, once the round is hedged, the
/// origins (``PeerSet/hedgeSeconds``).
///
/// An entry is asked of a peer only through ``ask(_:)``, and handed to the origins only by
/// ``hedge(_:)``, both under one lock: an entry is never both, so a peer's sink and an origin's
/// range never write the same file in `staging/<id>.d/`. The hedge happens at most once, and only
/// while no peer has sent a byte of this round and the round has not ended (``close()``).
///
/// Its delay counts from the round's first request to a peer (``firstAsk``), not from the round's
/// start: a round that waits for a turn at a peer (``PeerRequestGate``, held by another pack's
/// round that the peer is serving) is not waiting for a silent peer. Counted from the round's
/// start, a real game's install (three SuperTuxKart tracks, 70 packs, two installing at once, from a
/// healthy `odr share` at its defaults) sent 11.4 to 37.6 MiB of its 114.8 MiB to the CDN in three
/// runs; from the first request, 2.8 to 7.1 MiB in six.
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
    private let firstAskSignal: AsyncStream<Void>.Continuation
    /// Ends once the round made its first request to a peer, or ended without one.
    let firstAsk: AsyncStream<Void>

    init() {
        (firstAsk, firstAskSignal) = AsyncStream<Void>.makeStream()
    }

    /// Claims `name` for a request to a peer; `false` when it was handed to the origins.
    func ask(_ name: String) -> Bool {
        state.withLock { state in
            guard state.handedOver?.contains(name) != true else { return false }
            state.asked.insert(name)
            firstAskSignal.finish()
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
        firstAskSignal.finish()
        return state.withLock { state in
            state.closed = true
            return state.handedOver != nil
        }
    }

    /// The entries handed to the origins (empty when the round was not hedged).
    var handedOver: Set<String> { state.withLock { $0.handedOver ?? [] } }
}
