/// How much bandwidth non-urgent transfers keep while a ``TransferPriority/urgent`` transfer runs.
///
/// Urgent transfers always run at full speed. By default (``paused``) the ``TransferEngine`` pauses
/// every running non-urgent transfer while an urgent one runs and starts no new one, so the urgent
/// one has the whole link; the paused ones keep their connections and continue where they stopped.
public enum NonUrgentBandwidth: Sendable, Hashable {
    /// Non-urgent transfers pause and none starts until no urgent transfer runs (the default).
    case paused
    /// Non-urgent transfers go on and may start, each held to at most this many bytes per second
    /// on average from the moment an urgent transfer runs: the engine pauses one that got ahead
    /// until the average is back at the limit, and lifts the limit when the last urgent transfer
    /// ends. Values are raised to twice the engine's stall limit
    /// (``TransferEngine/Configuration/lowSpeedLimit``, 2 KiB/s by default) so a polite transfer is
    /// never taken for a stalled one. Not applied to `file://` transfers, which are not queued.
    case limited(bytesPerSecond: Int64)
    /// Non-urgent transfers share the link with urgent ones as TCP splits it.
    case unlimited
}
