import ODRFormat

extension TransferEngine {
    /// How the engine queues, connects, retries and buffers.
    public struct Configuration: Sendable {
        /// Transfers that may run at once (urgent ones may run beside paused non-urgent ones).
        public var maximumConcurrentTransfers: Int
        /// Retries of transient failures.
        public var retryPolicy: RetryPolicy
        /// Seconds to wait for a connection (name lookup, TCP and TLS handshakes) before the attempt
        /// fails with a timeout (`CURLOPT_CONNECTTIMEOUT`). Default 5 s: a game would rather try
        /// the next origin, or retry, than wait. Each retry of a transfer that has not received a
        /// byte since doubles it (5, 10, 20 s), so a network slower than this still connects.
        public var connectTimeout: Double
        /// Seconds an attempt waits, once connected, for the first byte of the response before it
        /// fails with `timed-out` (default 5 s). A host that accepts connections and never answers
        /// (a decommissioned server that still resolves, a hung proxy) costs this, not the stall
        /// window, before the next origin is asked; like ``connectTimeout`` it doubles on each
        /// retry without progress. A static server answers in one round trip; raise it for an
        /// origin that computes its responses or a link with multi-second latency.
        public var firstByteTimeout: Double
        /// Seconds a response's body may go without a byte before the attempt moves to another
        /// origin, when the request has one (``TransferRequest/alternateURLs``; default 5 s). It
        /// measures silence, not speed: an origin that sends slowly but steadily is not left.
        /// Without another origin, the stall rule of ``lowSpeedLimit`` and ``lowSpeedTime`` alone
        /// applies, since waiting is then the only way to get the bytes.
        public var failoverStallTimeout: Double
        /// An exchange slower than this many bytes per second for ``lowSpeedTime`` seconds has stalled:
        /// the attempt fails and is retried (continuing where it stopped). Paused transfers are exempt.
        /// `CURLOPT_LOW_SPEED_LIMIT`; the default, 1 KiB/s, lets a slow mobile link go on (a retry
        /// continues where a dip below it stopped) and bounds a server that trickles bytes to hold
        /// the client (slow retrieval) to the retry budget.
        public var lowSpeedLimit: Int
        /// Seconds below ``lowSpeedLimit`` that count as a stall (`CURLOPT_LOW_SPEED_TIME`).
        public var lowSpeedTime: Int
        /// Seconds a transfer may go without receiving a byte, over all its attempts and the waits
        /// between them: past it the transfer fails with `timed-out` rather than retry again. Each
        /// attempt's connect and stall timeouts are shortened to what is left of it, so a server that
        /// accepts connections and then sends nothing fails the transfer within this time. Time
        /// spent paused (by the caller, a full buffer or an urgent transfer) does not count.
        public var progressTimeout: Double
        /// The most bytes of one response's headers (status line included); a server that sends
        /// more fails the attempt with `unexpected-response`, unretried. At least 4 KiB.
        public var maximumHeaderBytes: Int
        /// Redirects followed per request.
        public var maximumRedirects: Int
        /// Body bytes held between the network and a slow sink before the transfer pauses; also
        /// what a killed process loses beyond the socket buffers. Default 256 KiB, at least 64 KiB.
        public var bufferLimit: Int
        /// Headers sent with every request; a request's own headers win.
        public var headers: [String: String]
        /// The `User-Agent` header.
        public var userAgent: String
        /// How much bandwidth non-urgent transfers keep while an urgent one runs (default
        /// ``NonUrgentBandwidth/paused``: they pause until no urgent transfer runs).
        public var nonUrgentBandwidthWhileUrgent: NonUrgentBandwidth = .paused

        /// The engine's defaults: 4 transfers, standard retries, 5 s to connect and 5 s more for the
        /// first byte (doubling on each retry without progress), 5 s of silence before a body moves
        /// to another origin, a stall below 1 KiB/s for 30 s, at most 45 s without a byte over all
        /// attempts, 64 KiB of response headers, 256 KiB buffered.
        public init(
            maximumConcurrentTransfers: Int = 4,
            retryPolicy: RetryPolicy = .standard,
            connectTimeout: Double = 5,
            firstByteTimeout: Double = 5,
            failoverStallTimeout: Double = 5,
            lowSpeedLimit: Int = 1024,
            lowSpeedTime: Int = 30,
            progressTimeout: Double = 45,
            maximumHeaderBytes: Int = 64 << 10,
            maximumRedirects: Int = 10,
            bufferLimit: Int = 256 << 10,
            headers: [String: String] = [:],
            userAgent: String = ODRVersion.userAgent()
        ) {
            self.maximumConcurrentTransfers = max(1, maximumConcurrentTransfers)
            self.retryPolicy = retryPolicy
            self.connectTimeout = connectTimeout
            // Not finite or not positive: the stall rules alone apply (no separate limit).
            self.firstByteTimeout = firstByteTimeout.isFinite && firstByteTimeout > 0 ? firstByteTimeout : .infinity
            self.failoverStallTimeout = failoverStallTimeout.isFinite && failoverStallTimeout > 0 ? failoverStallTimeout : .infinity
            self.lowSpeedLimit = max(0, lowSpeedLimit)
            self.lowSpeedTime = max(0, lowSpeedTime)
            self.progressTimeout = progressTimeout.isFinite ? max(1, progressTimeout) : 45
            self.maximumHeaderBytes = max(4 << 10, maximumHeaderBytes)
            self.maximumRedirects = max(0, maximumRedirects)
            self.bufferLimit = max(64 * 1024, bufferLimit)
            self.headers = headers
            self.userAgent = userAgent
        }
    }
}
