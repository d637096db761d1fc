/// How the catalog server imitates a bad network: the knobs of `odrpack serve --latency --rate ...`.
///
/// Every random decision is drawn from a generator seeded with ``seed``, the request's method, path
/// and range, and how many times that same request was seen before, so a run with the same seed and
/// the same requests makes the same decisions even when requests interleave differently.
///
/// ```swift
/// let flaky = NetworkConditions(latency: .milliseconds(50), bytesPerSecond: 1 << 20, failRate: 0.1, seed: 7)
/// try await server.setConditions(flaky)
/// ```
public struct NetworkConditions: Sendable, Hashable, CustomStringConvertible {
    /// Delay before each response head is sent.
    public var latency: Duration
    /// Body bytes per second for each response (and so for each connection, whose responses are
    /// sent one after another); `nil` sends as fast as the connection accepts.
    public var bytesPerSecond: Int?
    /// Probability (0...1) that a request is answered with 503 Service Unavailable.
    public var failRate: Double
    /// Probability (0...1) that a response body stops part way and the connection is closed.
    public var truncateRate: Double
    /// Probability (0...1) that one byte of a response body is flipped.
    public var corruptRate: Double
    /// Whether the server refuses connections (nothing listens on the port).
    public var offline: Bool
    /// Seed of every random decision.
    public var seed: UInt64

    /// Conditions of a perfect network, unless arguments say otherwise.
    public init(
        latency: Duration = .zero,
        bytesPerSecond: Int? = nil,
        failRate: Double = 0,
        truncateRate: Double = 0,
        corruptRate: Double = 0,
        offline: Bool = false,
        seed: UInt64 = 0
    ) {
        self.latency = latency
        self.bytesPerSecond = bytesPerSecond
        self.failRate = failRate
        self.truncateRate = truncateRate
        self.corruptRate = corruptRate
        self.offline = offline
        self.seed = seed
    }

    /// A perfect network: no latency, no rate limit, no faults.
    public static let perfect = NetworkConditions()

    /// Whether any response needs per-chunk work (pacing, truncation or corruption).
    var shapesBodies: Bool {
        bytesPerSecond != nil || truncateRate > 0 || corruptRate > 0
    }

    /// Throws when a value is out of range (a rate outside 0...1, a negative latency or byte rate).
    public func validate() throws(ServeError) {
        for (name, rate) in [("fail rate", failRate), ("truncate rate", truncateRate), ("corrupt rate", corruptRate)]
        where !(0...1).contains(rate) {
            throw ServeError(.invalidConditions, "The \(name) \(rate) is not a probability: use a value from 0 to 1.")
        }
        if latency < .zero {
            throw ServeError(.invalidConditions, "The latency \(latency) is negative: use 0 or more milliseconds.")
        }
        if let bytesPerSecond, bytesPerSecond <= 0 {
            throw ServeError(
                .invalidConditions,
                "The rate \(bytesPerSecond) bytes per second is not positive: use 1 or more, or no limit."
            )
        }
    }

    public var description: String {
        var parts: [String] = []
        if latency > .zero { parts.append("latency \(latency)") }
        if let bytesPerSecond { parts.append("rate \(bytesPerSecond) B/s") }
        if failRate > 0 { parts.append("fail \(failRate)") }
        if truncateRate > 0 { parts.append("truncate \(truncateRate)") }
        if corruptRate > 0 { parts.append("corrupt \(corruptRate)") }
        if offline { parts.append("offline") }
        if parts.isEmpty { return "perfect network (seed \(seed))" }
        return parts.joined(separator: ", ") + " (seed \(seed))"
    }
}
