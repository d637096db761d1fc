#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// How a finished transfer ended, and what it saw.
public struct TransferResult: Sendable {
    /// Whether the sink now holds a body or the caller's copy is still current.
    public enum Outcome: Sendable, Hashable {
        /// The whole body went to the sink.
        case downloaded
        /// The server answered 304: the copy described by ``TransferRequest/conditional`` is current.
        case notModified
    }

    /// Whether the body was downloaded or the caller's copy is current.
    public var outcome: Outcome
    /// The final HTTP status (0 for `file://`).
    public var statusCode: Int
    /// Size of the complete body (bytes kept from earlier attempts included).
    public var bytes: Int64
    /// Bytes that were not downloaded again because a `Range` request continued an earlier attempt.
    public var resumedBytes: Int64
    /// Body bytes received over the network, counted across every attempt and origin: bytes of an
    /// attempt that was cut and then continued (``resumedBytes``) or started over count where they
    /// arrived, so after a failover this is what every origin sent, which can exceed ``bytes``.
    /// From a `file://` source, the bytes read.
    public var receivedBytes: Int64
    /// The URLs that sent body bytes, in the order they first did: after a failover mid-body, the
    /// origin that died and the one that finished (``servedBy``).
    public var receivedFrom: [URL]
    /// SHA-256 of the body as 64 hex digits, when ``TransferRequest/expectedSHA256`` asked for it.
    public var sha256: String?
    /// The response's validators, to store for a later conditional request.
    public var validators: TransferValidators
    /// How many requests it took (1 without retries).
    public var attempts: Int
    /// The most bytes ever held between curl and the sink; bounded by the engine's buffer limit.
    public var peakBufferedBytes: Int
    /// The URL that served the body: the request's, or one of its ``TransferRequest/alternateURLs``
    /// after a failover. `nil` from a transport that does not say.
    public var servedBy: URL?

    /// Creates a result, as the engine (or a stand-in transport in tests) does.
    ///
    /// Without `receivedBytes`, the bytes the last attempt received (`bytes - resumedBytes`); without
    /// `receivedFrom`, `servedBy` when bytes were received.
    public init(outcome: Outcome, statusCode: Int, bytes: Int64, resumedBytes: Int64 = 0, receivedBytes: Int64? = nil,
                receivedFrom: [URL]? = nil, sha256: String? = nil, validators: TransferValidators = .init(), attempts: Int = 1,
                peakBufferedBytes: Int = 0, servedBy: URL? = nil) {
        self.outcome = outcome
        self.statusCode = statusCode
        self.bytes = bytes
        self.resumedBytes = resumedBytes
        let received = receivedBytes ?? max(0, bytes - resumedBytes)
        self.receivedBytes = received
        self.receivedFrom = receivedFrom ?? (received > 0 ? servedBy.map { [$0] } ?? [] : [])
        self.sha256 = sha256
        self.validators = validators
        self.attempts = attempts
        self.peakBufferedBytes = peakBufferedBytes
        self.servedBy = servedBy
    }
}

/// A snapshot of a transfer's progress.
public struct TransferProgress: Sendable, Hashable {
    /// Body bytes the sink has received (bytes kept from an earlier attempt included).
    public var receivedBytes: Int64
    /// The full body size when known (from the request or the response).
    public var expectedBytes: Int64?

    /// Creates a progress snapshot.
    public init(receivedBytes: Int64 = 0, expectedBytes: Int64? = nil) {
        self.receivedBytes = receivedBytes
        self.expectedBytes = expectedBytes
    }
}
