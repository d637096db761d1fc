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
/// 2 per address by default), and that entry then goes to the origins. Without the gate, a
/// manager installing four packs asked one peer for up to eight entries at once, and an install
/// from a share with the default limits took a fifth to a half of its bytes from the CDN.
///
/// A task cancelled while it waits for a slot stops waiting at once (``acquire(_:)`` throws
/// `CancellationError`) and leaves the queue, so the slot it waited for goes to the next one.
///
/// ```swift
/// let gate = PeerRequestGate(limit: 2)
/// try await gate.acquire(peer)
/// defer { gate.release(peer) }
/// // one request to `peer`
/// ```
public final class PeerRequestGate: Sendable {
    /// Requests at once to one peer.
    public let limit: Int
    private let state = Locked(State())

    private struct State {
        var peers: [URL: Slots] = [:]
        /// Numbers the waiters, so a cancelled one can find its own continuation.
        var nextWaiter: UInt64 = 0
    }

    private struct Slots {
        var busy = 0
        var waiting: [(id: UInt64, continuation: CheckedContinuation<Void, any Error>)] = []
    }

    /// The default limit: what a share serves one address at once by default.
    public static let defaultLimit = 2

    public init(limit: Int = defaultLimit) {
        self.limit = max(1, limit)
    }

    /// Returns once a request to `peer` may start; pair it with ``release(_:)``.
    ///
    /// - Throws: `CancellationError` when the task is cancelled before a slot is free (at once,
    ///   while it waits); it then holds no slot, and must not release one.
    public func acquire(_ peer: URL) async throws(CancellationError) {
        let id = state.withLock { state in
            state.nextWaiter += 1
            return state.nextWaiter
        }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let granted = state.withLock { state -> Bool? in
                        // Checked under the lock: a cancellation whose handler ran before the
                        // waiter was queued has set the flag by then, and one that comes later
                        // finds the waiter in the queue.
                        guard !Task.isCancelled else { return nil }
                        var slots = state.peers[peer, default: Slots()]
                        defer { state.peers[peer] = slots }
                        guard slots.busy < limit else {
                            slots.waiting.append((id, continuation))
                            return false
                        }
                        slots.busy += 1
                        return true
                    }
                    switch granted {
                    case true?: continuation.resume()
                    case nil: continuation.resume(throwing: CancellationError())
                    case false?: break
                    }
                }
            } onCancel: {
                cancelWaiter(id, of: peer)?.resume(throwing: CancellationError())
            }
        } catch {
            throw CancellationError()
        }
    }

    /// Takes waiter `id` out of `peer`'s queue; `nil` when it is not there (it was granted a slot,
    /// or not queued yet).
    private func cancelWaiter(_ id: UInt64, of peer: URL) -> CheckedContinuation<Void, any Error>? {
        state.withLock { state in
            guard var slots = state.peers[peer], let index = slots.waiting.firstIndex(where: { $0.id == id }) else { return nil }
            let waiter = slots.waiting.remove(at: index)
            state.peers[peer] = slots.busy == 0 && slots.waiting.isEmpty ? nil : slots
            return waiter.continuation
        }
    }

    /// Requests waiting for a slot to `peer` now.
    func waiting(for peer: URL) -> Int {
        state.withLock { $0.peers[peer]?.waiting.count ?? 0 }
    }

    /// Ends a request to `peer`: the oldest waiting one starts.
    public func release(_ peer: URL) {
        let next = state.withLock { state -> CheckedContinuation<Void, any Error>? in
            guard var slots = state.peers[peer] else { return nil }
            defer { state.peers[peer] = slots.busy == 0 && slots.waiting.isEmpty ? nil : slots }
            // The slot passes to the oldest waiter, still counted busy.
            guard slots.waiting.isEmpty else { return slots.waiting.removeFirst().continuation }
            slots.busy -= 1
            return nil
        }
        next?.resume()
    }
}
