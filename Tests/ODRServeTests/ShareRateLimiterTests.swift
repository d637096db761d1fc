import ODRRuntime
import Testing

@testable import ODRServe

/// `odr share`'s rate limit (``RateLimiter``), on a given clock: what it sends when, not how long
/// a test took.
struct ShareRateLimiterTests {
    /// The default share: 32 MiB/s in chunks of 256 KiB (8 ms each).
    let limiter = RateLimiter(bytesPerSecond: Double(32 << 20))
    let chunk = 256 << 10
    var chunkTime: Duration { .nanoseconds(Int64(Double(chunk) / limiter.bytesPerSecond * 1e9)) }
    let start = ContinuousClock.now

    /// A body sent at the full rate for `duration` from `start`, as the share sends it: each chunk
    /// is reserved, then written when it is earned, then the next is reserved. Returns when the
    /// last chunk is written and the moment the next one (already reserved) is earned.
    func runningBody(for duration: Duration) -> (now: ContinuousClock.Instant, nextEarned: ContinuousClock.Instant) {
        var now = start
        var earned = limiter.reserve(chunk, at: now)
        while now < start + duration {
            now = max(now, earned)
            earned = limiter.reserve(chunk, at: now)
        }
        return (now, earned)
    }

    /// While one body takes the whole rate, a new body's first chunk waits only for the chunk
    /// reserved before it: well inside the installer's hedge (25 ms without a peer byte), so a
    /// pack's round is not handed to the CDN because another pack's body is being sent. A schedule
    /// that let the running body reserve 50 ms ahead made the new one wait those 50 ms.
    @Test func aNewBodyWaitsOnlyForTheChunkBeforeIt() {
        let running = runningBody(for: .seconds(2))
        let asked = running.now + .milliseconds(1)
        let firstChunk = limiter.reserve(chunk, at: asked)
        #expect(firstChunk == running.nextEarned + chunkTime)
        let wait = firstChunk - asked
        #expect(wait < chunkTime * 2)
        #expect(wait < .seconds(PeerSet.defaultFirstByteSeconds * PeerSet.defaultHedgeFraction))
    }

    /// Over two seconds at the full rate, the bytes sent are the rate's, plus the first burst (50 ms
    /// of idle time credited at the start), to the nanosecond.
    @Test func keepsTheRate() {
        var now = start
        var chunks: Int64 = 0
        while now < start + .seconds(2) {
            now = max(now, limiter.reserve(chunk, at: now))
            chunks += 1
        }
        #expect(now - start == chunkTime * chunks - .milliseconds(RateLimiter.burstMilliseconds))
    }

    /// Idle time is credited up to 50 ms: after a second of nothing, 50 ms of bytes go at once and
    /// the next bytes wait for their time; many requests at one instant do not add credit.
    @Test func creditsIdleTimeUpToTheBurst() {
        let slow = RateLimiter(bytesPerSecond: 1_000_000)
        let idle = start + .seconds(1)
        #expect(slow.reserve(50_000, at: idle) <= idle)
        let next = slow.reserve(10_000, at: idle)
        #expect(next == idle + .milliseconds(10))
        // A thousand bodies asking at once share the same schedule: the last waits for them all.
        var last = idle
        for _ in 0..<1000 { last = slow.reserve(1_000, at: idle) }
        #expect(last == idle + .milliseconds(1010))
    }
}
