/// What a ``TransferEngine`` has done to non-urgent transfers so that urgent ones run at full
/// speed (see ``TransferEngine/Configuration/nonUrgentBandwidthWhileUrgent``): a diagnostic, and
/// what tests observe.
public struct TransferStatistics: Sendable, Equatable {
    /// Times a running non-urgent transfer was paused because an urgent one ran (``NonUrgentBandwidth/paused``).
    public var pausedForUrgent = 0
    /// Times a running non-urgent transfer was given a receive rate limit because an urgent one ran
    /// (``NonUrgentBandwidth/limited(bytesPerSecond:)``).
    public var rateLimitedForUrgent = 0
    /// Times such a limit was lifted again, once no urgent transfer ran.
    public var rateLimitsLifted = 0
    /// Times a rate-limited transfer was paused because it had got ahead of its limit.
    public var pausedForRate = 0

    /// No counts yet.
    public init() {}
}
