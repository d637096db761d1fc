#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// When and how often a failed transfer is tried again.
///
/// Connection failures, resets, truncated bodies, stalls, timeouts and HTTP 5xx/408/429 are retried;
/// other 4xx are not. The delay before retry `n` (1-based) is drawn uniformly from
/// `[d/2, d]` where `d = min(maximumDelay, initialDelay * multiplier^(n-1))` ("equal jitter"), so
/// many clients that failed together do not come back together.
public struct RetryPolicy: Sendable, Hashable {
    /// Total attempts, the first one included (1 disables retries).
    public var maximumAttempts: Int
    /// Base delay before the first retry, in seconds.
    public var initialDelay: Double
    /// Growth factor of the delay per retry.
    public var multiplier: Double
    /// Upper bound of the delay, in seconds.
    public var maximumDelay: Double

    /// Creates a policy; values out of range are clamped (at least one attempt, a multiplier of at least 1).
    public init(maximumAttempts: Int = 5, initialDelay: Double = 0.5, multiplier: Double = 2, maximumDelay: Double = 30) {
        self.maximumAttempts = max(1, maximumAttempts)
        self.initialDelay = max(0, initialDelay)
        self.multiplier = max(1, multiplier)
        self.maximumDelay = max(0, maximumDelay)
    }

    /// The default: 5 attempts, 0.5 s doubling up to 30 s.
    public static let standard = RetryPolicy()

    /// Whether another attempt may follow attempt number `attempt` (1-based).
    public func allowsRetry(after attempt: Int) -> Bool {
        attempt < maximumAttempts
    }

    /// The delay in seconds before the retry that follows attempt `attempt` (1-based), with jitter
    /// drawn from `generator`.
    public func delay(after attempt: Int, using generator: inout some RandomNumberGenerator) -> Double {
        let ceiling = ceilingDelay(after: attempt)
        guard ceiling > 0 else { return 0 }
        return Double.random(in: (ceiling / 2)...ceiling, using: &generator)
    }

    /// The delay without jitter: `initialDelay * multiplier^(attempt-1)`, capped.
    public func ceilingDelay(after attempt: Int) -> Double {
        let exponent = Double(max(0, attempt - 1))
        let raw = initialDelay * pow(multiplier, exponent)
        return raw.isFinite ? min(raw, maximumDelay) : maximumDelay
    }
}
