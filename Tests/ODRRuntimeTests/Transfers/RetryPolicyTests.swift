import ODRRuntime
import ODRFormat  // SplitMix64, the seeded generator
import Testing

struct RetryPolicyTests {
    @Test func delaysGrowExponentiallyUpToTheCap() {
        let policy = RetryPolicy(maximumAttempts: 10, initialDelay: 0.5, multiplier: 2, maximumDelay: 3)
        #expect((1...5).map { policy.ceilingDelay(after: $0) } == [0.5, 1, 2, 3, 3])
    }

    @Test func jitterStaysBetweenHalfAndFullDelay() {
        let policy = RetryPolicy(maximumAttempts: 10, initialDelay: 1, multiplier: 2, maximumDelay: 60)
        // A seeded generator: repeatable, and ThreadSanitizer crashes on an inout
        // SystemRandomNumberGenerator on the stack (swiftlang/swift#66099).
        var generator = SplitMix64(seed: 7)
        for attempt in 1...6 {
            let ceiling = policy.ceilingDelay(after: attempt)
            let delays = (0..<50).map { _ in policy.delay(after: attempt, using: &generator) }
            #expect(delays.allSatisfy { $0 >= ceiling / 2 && $0 <= ceiling })
            // Jitter: fifty draws are not all the same.
            #expect(Set(delays).count > 1)
        }
    }

    @Test func attemptBudgetIsBounded() {
        let policy = RetryPolicy(maximumAttempts: 3)
        #expect(policy.allowsRetry(after: 1))
        #expect(policy.allowsRetry(after: 2))
        #expect(!policy.allowsRetry(after: 3))
        #expect(!RetryPolicy(maximumAttempts: 0).allowsRetry(after: 1))
    }
}

