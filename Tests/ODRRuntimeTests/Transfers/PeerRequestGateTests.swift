import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// The gate that keeps a manager's installs within a share's per-address limit: at most `limit`
/// requests at once to each peer, the others waiting in order, other peers not held up, and a
/// waiter whose task is cancelled gone from the queue at once.
struct PeerRequestGateTests {
    @Test func atMostTheLimitRunAtOnceForEachPeerAndEveryWaiterGetsItsTurn() async throws {
        let gate = PeerRequestGate(limit: 2)
        let peer = try #require(URL(string: "http://192.168.1.20:7420/")), other = try #require(URL(string: "http://192.168.1.21:7420/"))
        let running = Locked((now: 0, most: 0, done: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    try? await gate.acquire(peer)
                    running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                    // Long enough that the others pile up behind the gate.
                    try? await Task.sleep(for: .milliseconds(5))
                    running.withLock { $0.now -= 1; $0.done += 1 }
                    gate.release(peer)
                }
            }
            // The other peer's slots are its own: both are taken while the first peer's are busy.
            try? await gate.acquire(other)
            try? await gate.acquire(other)
            gate.release(other)
            gate.release(other)
        }
        let figures = running.withLock { $0 }
        #expect(figures.done == 12 && figures.now == 0)
        #expect(figures.most <= 2, "at most 2 requests to one peer at once")
        // Two slots: both are granted at once.
        try await gate.acquire(peer)
        try await gate.acquire(peer)
        gate.release(peer)
        gate.release(peer)
    }

    /// A task cancelled while it waits for a slot stops waiting at once with `CancellationError`
    /// and leaves the queue: the next release frees the slot (it is not handed to the cancelled
    /// waiter), so a later request gets it, and the one after that waits for its turn again. A
    /// task cancelled before it asks gets no slot. The time limit guards against a waiter that
    /// never wakes.
    @Test(.timeLimit(.minutes(1)))
    func aCancelledWaiterStopsWaitingAndLeavesTheQueue() async throws {
        let gate = PeerRequestGate(limit: 1)
        let peer = try #require(URL(string: "http://192.168.1.20:7420/"))
        try await gate.acquire(peer)
        let waiter = Task { try await gate.acquire(peer) }
        try await waitUntil("the waiter to queue", timeout: .seconds(30)) { gate.waiting(for: peer) == 1 }
        waiter.cancel()
        await #expect(throws: CancellationError.self) { try await waiter.value }
        #expect(gate.waiting(for: peer) == 0)

        // The slot is free after the release: a new request takes it at once.
        gate.release(peer)
        try await gate.acquire(peer)
        // Now full again: the next request waits until the release.
        let next = Task { try await gate.acquire(peer) }
        try await waitUntil("the next request to queue", timeout: .seconds(30)) { gate.waiting(for: peer) == 1 }
        gate.release(peer)
        try await next.value
        gate.release(peer)
        #expect(gate.waiting(for: peer) == 0)

        // Cancelled before it asks: no slot, and none is taken.
        let early = Task {
            withUnsafeCurrentTask { $0?.cancel() }
            try await gate.acquire(peer)
        }
        await #expect(throws: CancellationError.self) { try await early.value }
        try await gate.acquire(peer)
        gate.release(peer)
    }
}
