#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What to download: the URL plus everything that shapes the exchange.
///
/// ```swift
/// var request = TransferRequest(url: catalogURL.appending(path: "packs/\(pack.id).zip"))
/// request.expectedSize = pack.archiveBytes
/// request.expectedSHA256 = pack.id
/// request.headers = ["Authorization": "Bearer \(token)"]
/// ```
public struct TransferRequest: Sendable {
    /// An `http`, `https` or `file` URL.
    public var url: URL
    /// Where the transfer stands in the queue; can change later through ``TransferHandle/setPriority(_:)``.
    public var priority: TransferPriority
    /// Extra request headers (for example `Authorization` for content behind a login).
    public var headers: [String: String]
    /// The exact body size, when known; a different size fails with ``ResourceError/Code/integrity``.
    public var expectedSize: Int64?
    /// The body's SHA-256 as 64 hex digits, when known; a different digest fails with
    /// ``ResourceError/Code/integrity`` and the sink is told to drop its bytes.
    public var expectedSHA256: String?
    /// Validators of a copy the caller already has; when the server says it is unchanged (304) the
    /// result is ``TransferResult/Outcome/notModified`` and the sink receives nothing.
    public var conditional: TransferValidators?
    /// Whether a server that cannot be reached at all (connection refused, host not found) is tried
    /// again within the retry budget. `true` for pack transfers, where a moment's outage should not
    /// fail an install; the catalog client sets it `false`, since it falls back to its stored copy
    /// at once rather than after seconds of backoff.
    public var retriesUnreachableServer = true
    /// Only bytes `lowerBound..<upperBound` of the resource, fetched with a `Range` request (for
    /// `file://`, read from that offset).
    ///
    /// The range then is the body: the sink's offsets, the progress and ``TransferResult/bytes`` count
    /// from `lowerBound`, so set ``expectedSize`` to the range's length. A server that answers with
    /// anything but exactly this range (the whole file, another range, HTTP 416) fails the transfer
    /// with ``ResourceError/Code/rangeNotSupported`` before the sink sees a byte of it: splicing the
    /// wrong bytes into a caller's file would be worse than failing. An empty range, or one that
    /// starts before byte 0, fails with ``ResourceError/Code/invalidArgument`` before any request.
    ///
    /// ```swift
    /// var request = TransferRequest(url: packURL, byteRange: entry.offset..<entry.offset + entry.size)
    /// request.expectedSize = entry.size
    /// request.ifRange = validatorsOfTheIndexResponse
    /// ```
    public var byteRange: Range<Int64>?
    /// The validators the resource had when the caller planned ``byteRange`` (from an earlier response
    /// for the same URL). The first request sends them as `If-Range`, so a file that changed since is
    /// answered whole and fails with ``ResourceError/Code/rangeNotSupported`` instead of yielding
    /// bytes of another version. Retries within the transfer are guarded by the validators of the
    /// response the held bytes came from. Ignored without a ``byteRange``.
    public var ifRange: TransferValidators?
    /// The same resource on other origins (mirrors, a second CDN), tried in order when ``url``
    /// fails: no connection, a timeout, HTTP 5xx, a wrong `Content-Range`, or a 404 (a mirror that
    /// does not have the file yet). The transfer continues on the next origin where it stopped, with
    /// a `Range` request, keeping the bytes it holds.
    ///
    /// Only for content that is the same on every origin (content-addressed packs, pinned
    /// manifests): validators of one host mean nothing on another, so a range continued there is
    /// sent without `If-Range`, and ``expectedSHA256`` (or the caller's own per-entry hashes) is
    /// what guards it. Each origin is tried once per round; when all failed, the ``RetryPolicy``'s
    /// delay follows and the next round starts.
    public var alternateURLs: [URL] = []
    /// Another URL whose priority, pauses and hint likelihood this request follows in a
    /// ``ResourceManager`` (which sets those by URL), besides its own; `nil` (the default) for
    /// none. A peer's request for an entry of a pack follows the pack's archive URL: it runs at the
    /// priority of the pack's other transfers, and is not paused as a lesser transfer while the
    /// pack's own urgent range from an origin runs (docs/STORE.md, "Local network peers").
    public var priorityURL: URL?
    /// Called (from the task that feeds the sink, in order with its calls) each time the transfer
    /// moves to another origin: which one, why, and how many bytes it kept.
    public var originSwitched: (@Sendable (TransferOriginSwitch) -> Void)?
    /// Called once if the transfer fails, with the body bytes it had received over the network by
    /// then (every attempt and origin; from a `file://` source, the bytes read): a failed transfer
    /// returns no ``TransferResult`` to carry ``TransferResult/receivedBytes``, but its bytes moved.
    public var failedAfterReceiving: (@Sendable (Int64) -> Void)?
    /// Whether a redirect is followed (`true`, the default: a CDN may send a client to its edge).
    /// Requests to a peer set it `false`: a peer that redirects elsewhere is refused with
    /// `unexpected-response`, so a peer cannot point the installer at another host.
    public var followsRedirects = true
    /// At most this many attempts, fewer than the engine's ``RetryPolicy`` allows (`nil`: the
    /// policy's). Peers get one: a peer that fails is dropped and the origins serve the bytes.
    public var maximumAttempts: Int?
    /// Seconds without a byte after which the transfer counts as stalled, when shorter than the
    /// engine's `lowSpeedTime` (`nil`: the engine's). A peer that sends nothing is given up quickly.
    public var stallSeconds: Int?
    /// Seconds to connect, when shorter than the engine's `connectTimeout` (`nil`: the engine's).
    public var connectSeconds: Double?
    /// Seconds from the start of an attempt, connecting included, to the first byte of the
    /// response's body (`nil`: only the engine's ``TransferEngine/Configuration/connectTimeout``
    /// and ``TransferEngine/Configuration/firstByteTimeout`` apply). A missed deadline ends the
    /// attempt as `timed-out`, as the engine's first-byte timeout does.
    ///
    /// Unlike ``stallSeconds`` (curl's whole-second stall window) it takes fractions: the engine
    /// keeps this deadline itself and wakes for it. Response headers alone do not meet it, so a
    /// server that sends headers and then nothing misses it too; an empty body meets it when the
    /// response ends. It is not stretched on retries, and time paused does not count. Peers get
    /// ``PeerSet/firstByteSeconds``: a peer that accepts the connection and says nothing, or
    /// never completes it, costs this rather than the connect or stall timeout. Values that are
    /// not finite or not positive are ignored; longer than a day counts as a day.
    ///
    /// ```swift
    /// var request = TransferRequest(url: peerURL)
    /// request.firstByteSeconds = 0.1  // a LAN host answers within milliseconds
    /// ```
    public var firstByteSeconds: Double?
    /// The likelihood of the likeliest live anticipation hint naming the pack this transfer fetches
    /// (0: none): among queued transfers of equal priority the likelier starts first
    /// (``TransferOrder``). Set by the resource manager; changed later through
    /// ``HintOrderedTransfer/setHintLikelihood(_:)``.
    var hintLikelihood: Double = 0

    /// A request for `url`; every setting can also be changed afterwards.
    public init(
        url: URL,
        priority: TransferPriority = .normal,
        headers: [String: String] = [:],
        expectedSize: Int64? = nil,
        expectedSHA256: String? = nil,
        conditional: TransferValidators? = nil,
        byteRange: Range<Int64>? = nil,
        ifRange: TransferValidators? = nil
    ) {
        self.url = url
        self.priority = priority
        self.headers = headers
        self.expectedSize = expectedSize
        self.expectedSHA256 = expectedSHA256
        self.conditional = conditional
        self.byteRange = byteRange
        self.ifRange = ifRange
    }

    /// Why ``byteRange`` cannot be asked for at all, or `nil`: `Range: bytes=5-4` is not valid HTTP,
    /// and a server would answer it with the whole file.
    var byteRangeProblem: ResourceError? {
        guard let byteRange, byteRange.isEmpty || byteRange.lowerBound < 0 else { return nil }
        return ResourceError(.invalidArgument,
                             "The byte range \(byteRange.lowerBound)..<\(byteRange.upperBound) is empty or starts before byte 0; ask for at least one byte of the file.",
                             url: url)
    }
}

/// A transfer left one origin for another (see ``TransferRequest/alternateURLs``).
public struct TransferOriginSwitch: Sendable, Hashable {
    /// The URL that failed.
    public var from: URL
    /// The URL the transfer continues from.
    public var to: URL
    /// What the failed attempt would have reported: `network-unavailable`, `timed-out`,
    /// `server-error`, `resource-unavailable` (a stale mirror's 404), `range-not-supported` or
    /// `unexpected-response` (a wrong `Content-Range`), `integrity` (bytes that failed verification).
    public var reason: ResourceError.Code
    /// Body bytes kept: the next origin is asked only for what follows them.
    public var keptBytes: Int64

    /// Describes a switch.
    public init(from: URL, to: URL, reason: ResourceError.Code, keptBytes: Int64) {
        self.from = from
        self.to = to
        self.reason = reason
        self.keptBytes = keptBytes
    }
}

/// The validators an HTTP server attaches to a response: its `ETag` and `Last-Modified` values.
///
/// They make conditional requests (`If-None-Match`, `If-Modified-Since`) and guard resumed ones
/// (`If-Range`).
public struct TransferValidators: Sendable, Hashable, Codable {
    /// The `ETag` header value, quotes included (`"abc"` or `W/"abc"`).
    public var entityTag: String?
    /// The `Last-Modified` header value, verbatim.
    public var lastModified: String?

    /// Validators from a response's headers; both `nil` when the server sent neither.
    public init(entityTag: String? = nil, lastModified: String? = nil) {
        self.entityTag = entityTag
        self.lastModified = lastModified
    }

    /// Whether neither validator is present.
    public var isEmpty: Bool { entityTag == nil && lastModified == nil }

    /// The value for `If-Range`: a strong ETag, else the date. Weak ETags cannot guard a range, and
    /// a value that could not be sent as one header line (read back from a damaged file) guards nothing.
    var ifRangeValue: String? {
        if let entityTag, !entityTag.hasPrefix("W/"), Self.isFieldValue(entityTag) { return entityTag }
        return lastModified.flatMap { Self.isFieldValue($0) ? $0 : nil }
    }

    /// Whether both validators could be sent as header values.
    var isSendable: Bool { [entityTag, lastModified].allSatisfy { $0.map(Self.isFieldValue) ?? true } }

    /// A header field value: 1 to 1,024 visible ASCII characters, spaces or tabs (no CR or LF, which
    /// would start another header).
    static func isFieldValue(_ value: String) -> Bool {
        !value.isEmpty && value.utf8.count <= 1024 && value.utf8.allSatisfy { $0 == 0x09 || (0x20...0x7E).contains($0) }
    }
}
