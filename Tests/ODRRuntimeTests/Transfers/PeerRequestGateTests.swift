import Foundation
import ODRFormat
import ODRRuntime
import Testing

/// The gate that keeps a manager's installs within a share's per-address limit: at most `limit`
/// requests at once to each peer, the others waiting in order, other peers not held up.
struct PeerRequestGateTests {
    @Test func atMostTheLimitRunAtOnceForEachPeerAndEveryWaiterGetsItsTurn() async throws {
        let gate = PeerRequestGate(limit: 2)
        let peer = try #require(URL(string: "http://192.168.1.20:7420/")), other = try #require(URL(string: "http://192.168.1.21:7420/"))
        let running = Locked((now: 0, most: 0, done: 0))
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<12 {
                group.addTask {
                    await gate.acquire(peer)
                    running.withLock { $0.now += 1; $0.most = max($0.most, $0.now) }
                    // Long enough that the others pile up behind the gate.
                    try? await Task.sleep(for: .milliseconds(5))
                    running.withLock { $0.now -= 1; $0.done += 1 }
                    gate.release(peer)
                }
            }
            // The other peer's slots are its own: both are taken while the first peer's are busy.
            await gate.acquire(other)
            await gate.acquire(other)
            gate.release(other)
            gate.release(other)
        }
        let figures = running.withLock { $0 }
        #expect(figures.done == 12 && figures.now == 0)
        #expect(figures.most <= 2, "at most 2 requests to one peer at once")
        // Two slots: both are granted at once.
        await gate.acquire(peer)
        await gate.acquire(peer)
        gate.release(peer)
        gate.release(peer)
    }
}
