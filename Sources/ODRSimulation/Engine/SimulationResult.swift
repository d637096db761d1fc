import ODRRuntime

/// One policy's run over a script: its metrics, a timeline for charts, and optionally every purge.
public struct SimulationResult: Sendable, Codable {
    /// The state at one moment of the run.
    public struct Sample: Sendable, Equatable, Codable {
        /// Seconds since the start.
        public var time: Double
        /// Bytes the store held.
        public var diskBytes: Int64
        /// Bytes downloaded so far.
        public var downloadedBytes: Int64
    }

    /// One pack deleted.
    public struct Purge: Sendable, Equatable, Codable {
        public var time: Double
        public var pack: String
        public var bytes: Int64
        public var reason: String
    }

    /// The policy's name.
    public var policy: String
    public var metrics: SimulationMetrics
    /// The timeline, at regular intervals.
    public var samples: [Sample]
    /// Every purge, when the run was asked to log them.
    public var purges: [Purge]
    /// Bytes downloaded as a multiple of what Belady's MIN downloaded on the same script, when a
    /// report ran it too.
    public var downloadRatioToBelady: Double?
}
