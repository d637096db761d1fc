#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one error type of the on-demand resource runtime.
///
/// Every error carries a stable ``code`` that programs switch on, a ``message`` that says what went
/// wrong and what to do about it, the ``url`` of the resource it concerns when there is one, and the
/// lower-level ``cause`` (for transfers, curl's own error text) when another layer failed first.
///
/// ```swift
/// do {
///     let result = try await engine.download(request, into: sink)
/// } catch let error as ResourceError where error.code == .networkUnavailable {
///     showOfflineBanner(error.message)
/// }
/// ```
public struct ResourceError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier for a kind of runtime error; the raw values never change between releases.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable string, such as `network-unavailable`.
        public var rawValue: String
        /// Wraps a raw value; use the static members rather than spelling the string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw value, as messages and logs show it.
        public var description: String { rawValue }

        // MARK: Network and server

        /// No connection could be made: no network, DNS failure, connection refused, host unreachable.
        /// Retried with backoff before it is reported; try again when the device is back online.
        public static let networkUnavailable = Code(rawValue: "network-unavailable")
        /// The server says the resource does not exist (HTTP 404 or 410, or a missing `file://` path).
        /// Not retried: the catalog and the server disagree, so refresh the catalog or fix the upload.
        public static let resourceUnavailable = Code(rawValue: "resource-unavailable")
        /// The server refused access (HTTP 401 or 403). Not retried: check the credentials or the
        /// extra request headers (for example `Authorization`) configured for the catalog.
        public static let accessDenied = Code(rawValue: "access-denied")
        /// The server kept failing (HTTP 5xx or 429) after every retry of the retry budget.
        public static let serverError = Code(rawValue: "server-error")
        /// The server answered something the runtime cannot use: an unexpected HTTP status (other 4xx,
        /// too many redirects), a malformed `Content-Range`, or an unsupported URL scheme.
        public static let unexpectedResponse = Code(rawValue: "unexpected-response")
        /// Connecting took too long or the transfer stalled below the low-speed limit, after retries.
        public static let timedOut = Code(rawValue: "timed-out")
        /// The server's TLS certificate could not be verified. Verification is never turned off: fix
        /// the server's certificate chain or the system's trust store.
        public static let untrustedServer = Code(rawValue: "untrusted-server")
        /// A byte-range transfer (``TransferRequest/byteRange``) could not get exactly the bytes it asked
        /// for: the server ignores `Range` (HTTP 200), the file changed since the range was planned
        /// (`If-Range` did not match), the server answered another range, or the range lies outside the
        /// file (HTTP 416). Not retried, and the sink receives none of the answer: download the whole
        /// file instead, or refresh the catalog that planned the range.
        public static let rangeNotSupported = Code(rawValue: "range-not-supported")

        // MARK: Content

        /// The downloaded bytes do not have the size or SHA-256 the catalog promises. The partial
        /// bytes are discarded; the catalog and the files on the server disagree, or the content was
        /// corrupted in transit.
        public static let integrity = Code(rawValue: "integrity")
        /// A catalog or version manifest could not be decoded or failed validation.
        public static let invalidCatalog = Code(rawValue: "invalid-catalog")
        /// A tag that the catalog does not define was requested.
        public static let invalidTag = Code(rawValue: "invalid-tag")
        /// A value outside what the call accepts (a preservation priority outside 0...1, say); the
        /// message names the value and the range. Nothing changed.
        public static let invalidArgument = Code(rawValue: "invalid-argument")

        // MARK: Local storage

        /// Not enough free disk space for the download or install, even after purging.
        public static let outOfSpace = Code(rawValue: "out-of-space")
        /// The install would put more bytes of packs in the store than the manager's cache budget
        /// allows, even after purging every pack not in use; the disk may have room. End requests
        /// you no longer need, or raise the cache budget.
        public static let cacheBudgetExceeded = Code(rawValue: "cache-budget-exceeded")
        /// Satisfying the request would put more than the manager's maximum in-use size in use.
        /// End requests you no longer need, or raise the limit.
        public static let exceededMaximumInUseSize = Code(rawValue: "exceeded-maximum-in-use-size")
        /// A local file or the database could not be read or written (permissions, I/O error).
        public static let storageFailure = Code(rawValue: "storage-failure")

        // MARK: Requests and control

        /// The operation was cancelled by the caller (a cancelled transfer, task or request).
        public static let cancelled = Code(rawValue: "cancelled")
        /// `begin` was called on a request that has already begun.
        public static let beginTwice = Code(rawValue: "begin-twice")
        /// `begin` was called on a request that has already ended; create a new request instead.
        public static let beginAfterEnd = Code(rawValue: "begin-after-end")
        /// `end` was called on a request that never began.
        public static let endBeforeBegin = Code(rawValue: "end-before-begin")
    }

    /// What kind of error this is; stable across releases.
    public var code: Code
    /// What went wrong and what to do about it.
    public var message: String
    /// The resource the error concerns, when there is one.
    public var url: URL?
    /// The lower-level error that caused this one (for transfers, curl's message), if any.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, url: URL? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.url = url
        self.cause = cause
    }

    /// `[code] message`, followed by the URL and the cause when there are any.
    public var description: String {
        var text = "[\(code)] \(message)"
        if let url { text += " (\(url.absoluteString))" }
        if let cause { text += " (cause: \(cause))" }
        return text
    }
}
