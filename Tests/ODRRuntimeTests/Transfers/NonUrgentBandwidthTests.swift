import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// What a non-urgent transfer keeps of the bandwidth while an urgent one runs, per
/// ``TransferEngine/Configuration/nonUrgentBandwidthWhileUrgent``: observed through the engine's
/// counters (the pause, or the rate limit applied and enforced) and whether the non-urgent
/// transfer went on meanwhile.
struct NonUrgentBandwidthTests {
    /// Starts a slow non-urgent transfer, then an urgent one beside it; returns the engine's
    /// counters once the urgent one is done, the non-urgent bytes received while it ran, and how
    /// long it ran.
    private func runBeside(_ share: NonUrgentBandwidth) async throws -> (TransferEngine, stats: TransferStatistics, during: Int64, seconds: Double) {
        let background = deterministicBytes(count: 6 << 20, seed: 40)
        let urgent = deterministicBytes(count: 600_000, seed: 41)
        // Each response is paced at 200 KB/s, so both transfers run for a while.
        return try await withTestServer(files: ["background.bin": background, "urgent.bin": urgent],
                                        conditions: NetworkConditions(bytesPerSecond: 200_000)) { server, _ in
            var configuration = TransferEngine.Configuration()
            configuration.nonUrgentBandwidthWhileUrgent = share
            let engine = try TransferEngine(configuration: configuration)
            let slow = engine.transfer(TransferRequest(url: server.url(for: "background.bin"), priority: .loading(0.2)),
                                       into: RecordingSink(name: "background"))
            try await waitUntil("the background transfer's first bytes") { slow.progress.receivedBytes > 0 }
            let before = slow.progress.receivedBytes
            let start = ContinuousClock.now
            _ = try await engine.download(TransferRequest(url: server.url(for: "urgent.bin"), priority: .urgent),
                                          into: RecordingSink(name: "urgent"))
            let elapsed = start.duration(to: .now)
            let during = slow.progress.receivedBytes - before
            let stats = engine.statistics
            if share != .paused {
                // The limit comes off once no urgent transfer runs.
                try await waitUntil("the limit to be lifted") { engine.statistics.rateLimitsLifted >= engine.statistics.rateLimitedForUrgent }
            }
            slow.cancel()
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            return (engine, stats, during, seconds)
        }
    }

    @Test func byDefaultNonUrgentTransfersPauseWhileAnUrgentOneRuns() async throws {
        let (_, stats, _, _) = try await runBeside(.paused)
        #expect(stats.pausedForUrgent >= 1)
        #expect(stats.rateLimitedForUrgent == 0)
    }

    @Test func aLimitedShareHoldsTheNonUrgentTransferToItsRateAndLiftsTheLimitAfter() async throws {
        let (engine, stats, _, _) = try await runBeside(.limited(bytesPerSecond: 20_000))
        #expect(stats.pausedForUrgent == 0, "a limited share does not pause for the whole urgent transfer")
        #expect(stats.rateLimitedForUrgent >= 1)
        // The background response arrives at 200 KB/s, ten times the limit: it gets ahead and is held.
        #expect(stats.pausedForRate >= 1)
        #expect(engine.statistics.rateLimitsLifted >= 1)
        // No bound on the bytes received meanwhile: what the kernel buffered while the transfer was
        // held arrives at once when it continues (see docs/RUNTIME.md), so that count is noise.
    }

    @Test func anUnlimitedShareNeitherPausesNorLimits() async throws {
        let (_, stats, during, _) = try await runBeside(.unlimited)
        #expect(stats == TransferStatistics())
        #expect(during > 0, "the background transfer went on beside the urgent one")
    }

    @Test func withAShareNonUrgentTransfersMayStartWhileAnUrgentOneRuns() {
        #expect(!transferMayStart(priority: .normal, running: 1, runningUrgent: 1, limit: 4, yieldToUrgent: true))
        #expect(transferMayStart(priority: .normal, running: 1, runningUrgent: 1, limit: 4, yieldToUrgent: false))
        #expect(!transferMayStart(priority: .normal, running: 4, runningUrgent: 1, limit: 4, yieldToUrgent: false))
    }
}
