extension TransferEngine {
    /// How the engine queues, connects, retries and buffers.
    public struct Configuration: Sendable {
        /// Transfers that may run at once (urgent ones may run beside paused non-urgent ones).
        public var maximumConcurrentTransfers: Int
        /// Retries of transient failures.
        public var retryPolicy: RetryPolicy
        /// Seconds to wait for a connection before the attempt fails with a timeout.
        public var connectTimeout: Double
        /// A transfer slower than this many bytes per second for ``lowSpeedTime`` seconds has stalled:
        /// the attempt fails and is retried (continuing where it stopped). Paused transfers are exempt.
        public var lowSpeedLimit: Int
        /// Seconds below ``lowSpeedLimit`` that count as a stall.
        public var lowSpeedTime: Int
        /// Redirects followed per request.
        public var maximumRedirects: Int
        /// Body bytes held between the network and a slow sink before the transfer pauses.
        public var bufferLimit: Int
        /// Headers sent with every request; a request's own headers win.
        public var headers: [String: String]
        /// The `User-Agent` header.
        public var userAgent: String
        /// How much bandwidth non-urgent transfers keep while an urgent one runs (default
        /// ``NonUrgentBandwidth/paused``: they pause until no urgent transfer runs).
        public var nonUrgentBandwidthWhileUrgent: NonUrgentBandwidth = .paused

        /// The engine's defaults: 4 transfers, standard retries, 15 s to connect, a stall below 1 KiB/s for 30 s.
        public init(
            maximumConcurrentTransfers: Int = 4,
            retryPolicy: RetryPolicy = .standard,
            connectTimeout: Double = 15,
            lowSpeedLimit: Int = 1024,
            lowSpeedTime: Int = 30,
            maximumRedirects: Int = 10,
            bufferLimit: Int = 1 << 20,
            headers: [String: String] = [:],
            userAgent: String = "swift-odr/1"
        ) {
            self.maximumConcurrentTransfers = max(1, maximumConcurrentTransfers)
            self.retryPolicy = retryPolicy
            self.connectTimeout = connectTimeout
            self.lowSpeedLimit = max(0, lowSpeedLimit)
            self.lowSpeedTime = max(0, lowSpeedTime)
            self.maximumRedirects = max(0, maximumRedirects)
            self.bufferLimit = max(64 * 1024, bufferLimit)
            self.headers = headers
            self.userAgent = userAgent
        }
    }
}
