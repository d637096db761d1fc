#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// An attempt of a transfer failed and the engine will try again: what failed, and when the next
/// attempt starts. The engine tells the sink (``TransferSink/retrying(_:)``) as soon as the attempt
/// fails, so a caller can show that the download is stalled instead of standing still in silence.
public struct TransferRetry: Sendable, Hashable {
    /// What the failed attempt would have reported (`network-unavailable`, `timed-out`, `server-error`, ...).
    public var code: ResourceError.Code
    /// The number of the attempt that failed (1 for the first).
    public var failedAttempt: Int
    /// When the next attempt starts.
    public var nextAttempt: Date

    /// Describes a retry.
    public init(code: ResourceError.Code, failedAttempt: Int, nextAttempt: Date) {
        self.code = code
        self.failedAttempt = failedAttempt
        self.nextAttempt = nextAttempt
    }
}
