#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Other devices' stores that share their verified content over the local network (`odr share`,
/// `startSharing` in ODRServe), asked for an entry's bytes before the origins are.
///
/// A peer needs no trust: it serves files by their SHA-256 (`GET <peer>/odr/v1/sha256/<digest>`),
/// and every byte the installer takes from it is checked against the digest the signed catalog
/// pins, exactly as bytes from an origin are. What a peer can do is waste time, so one that fails
/// in any way (no connection, a stall, a redirect, a wrong size or digest, an error status other
/// than 404 and 503) is dropped for the rest of the install (``markFailed(_:)``) and the origins serve
/// what it did not. A 404 only means the peer does not hold that file, and a 503 (or 429) that it
/// is busy now: that file goes to the next peer or the origins, and the peer stays.
///
/// Peer requests are made with one attempt, no redirects, and short timeouts: the body's first
/// byte within ``firstByteSeconds`` of the request's start (connecting included), then at most
/// ``stallSeconds`` without a byte. A peer that accepts the connection and says nothing, or whose
/// host never completes it, so costs an install ``firstByteSeconds`` for the entries it was asked;
/// the others go to the origins once no peer has sent a byte for ``hedgeSeconds``.
///
/// ```swift
/// var installer = PackInstaller(store: store, transport: engine)
/// installer.peers = PeerSet([URL(string: "http://192.168.1.20:7420/")!])
/// let summary = try await installer.install(packs, from: snapshot)
/// print(summary.peerBytes, summary.bytesByPeer)
/// ```
public final class PeerSet: Sendable {
    /// The peers' base URLs (each ending in `/`), in the order they are asked.
    public let peers: [URL]
    /// Seconds a peer gets to accept the connection (default 2).
    public let connectSeconds: Double
    /// Seconds without a byte after which a peer counts as stalled (default 3).
    public let stallSeconds: Int
    /// Seconds from the start of a request to a peer, connecting included, to the first byte of
    /// its body (default ``defaultFirstByteSeconds``, 0.1 s); `.infinity` when turned off, and
    /// then ``connectSeconds`` and ``stallSeconds`` alone bound a silent peer
    /// (``TransferRequest/firstByteSeconds``).
    public let firstByteSeconds: Double
    /// Seconds from the start of a pack's peer round after which, if no peer has sent a byte of
    /// any entry yet, the origins are asked for every entry not yet requested from a peer
    /// (default a quarter of ``firstByteSeconds``: 25 ms; `.infinity` when turned off).
    ///
    /// The requests already sent stay with their peers: a slow peer that answers after this delay
    /// delivers what it was asked and is not dropped, and a silent one is dropped by
    /// ``firstByteSeconds`` as before; what they did not deliver goes to the origins afterwards.
    /// A silent peer so costs an install this delay, not the first-byte deadline, for all but the
    /// entries it was asked (docs/STORE.md, "Local network peers").
    public let hedgeSeconds: Double
    private let state: Locked<State>

    private struct State {
        var failed: Set<URL> = []
        var reasons: [URL: String] = [:]
        /// Body bytes received from each peer, checked or not.
        var received: [URL: Int64] = [:]
    }

    /// The path under a peer's base URL that serves content by SHA-256.
    public static let contentPath = "odr/v1/sha256/"

    /// How long a peer gets, by default, from the start of a request to the first byte of the body:
    /// 0.1 s. A peer on the same network serving from its own store answers within a connect and a
    /// request round trip plus a lookup, a few milliseconds on Ethernet and tens on a busy Wi-Fi; a
    /// late answer costs only that peer's savings for the rest of the install (the origins serve
    /// everything, with the right bytes), while an install with a silent peer waits out the whole
    /// deadline for the entries it asked that peer (the rest go to the origins after
    /// ``hedgeSeconds``). Issue 43's target is that a silent peer at most doubles an install's
    /// time, and a 32 MiB tag installs from a CDN over loopback in 0.10 to 0.21 s (`odrbench peers`,
    /// 2 cores): before the hedge, at 0.15 s a silent peer made that 1.54x to 2.06x, at 0.1 s 1.72x
    /// to 2.36x; with the hedge 1.39x to 1.55x (docs/STORE.md). A peer whose radio sleeps (Wi-Fi
    /// power saving can hold a packet for a beacon interval of 102 ms or more) may miss it; raise
    /// it for such peers.
    public static let defaultFirstByteSeconds = 0.1

    /// The share of ``firstByteSeconds`` after which, by default, the origins are asked for what no
    /// peer was asked yet (``hedgeSeconds``): a quarter.
    public static let defaultHedgeFraction = 0.25

    /// Peers in the order given; duplicates and URLs that are not `http` or `https` are dropped.
    /// A `firstByteSeconds` that is not finite or not positive turns that deadline off.
    ///
    /// - Parameter hedgeSeconds: ``hedgeSeconds``; `nil` (the default) for a quarter of
    ///   `firstByteSeconds` (so a deadline raised for sleepy peers raises it too), a value that is
    ///   not finite or is negative to turn it off. At most `firstByteSeconds`.
    public init(_ peers: [URL], connectSeconds: Double = 2, stallSeconds: Int = 3,
                firstByteSeconds: Double = defaultFirstByteSeconds, hedgeSeconds: Double? = nil) {
        var seen = Set<String>()
        self.peers = peers.filter { ["http", "https"].contains($0.scheme?.lowercased() ?? "") }
            .map(Self.base).filter { seen.insert($0.absoluteString).inserted }
        self.connectSeconds = connectSeconds
        self.stallSeconds = max(1, stallSeconds)
        let deadline = firstByteSeconds.isFinite && firstByteSeconds > 0 ? firstByteSeconds : .infinity
        self.firstByteSeconds = deadline
        let hedge = hedgeSeconds ?? deadline * Self.defaultHedgeFraction
        self.hedgeSeconds = hedge.isFinite && hedge >= 0 ? min(hedge, deadline) : .infinity
        state = Locked(State())
    }

    /// `url` as a base URL: with a trailing `/`, without query or fragment.
    static func base(_ url: URL) -> URL {
        var text = url.absoluteString
        if let cut = text.firstIndex(where: { $0 == "?" || $0 == "#" }) { text = String(text[..<cut]) }
        if !text.hasSuffix("/") { text += "/" }
        return URL(string: text) ?? url
    }

    /// The peers not dropped yet, in order.
    public var live: [URL] { state.withLock { state in peers.filter { !state.failed.contains($0) } } }

    /// Whether any peer is still asked.
    public var hasLivePeers: Bool { !live.isEmpty }

    /// Whether `peer` is one of these peers and not dropped.
    public func isLive(_ peer: URL) -> Bool {
        state.withLock { !$0.failed.contains(peer) } && peers.contains(peer)
    }

    /// Drops `peer` for the rest of the install.
    public func markFailed(_ peer: URL, reason: String) {
        state.withLock {
            $0.failed.insert(peer)
            if $0.reasons[peer] == nil { $0.reasons[peer] = reason }
        }
    }

    /// Drops `peer` for the rest of the install because a request to it failed with `error`; the
    /// reason keeps the transport's own words (which deadline was missed, curl's message).
    func markFailed(_ peer: URL, after error: ResourceError) {
        var reason = "\(error.code.rawValue): \(error.message)"
        if let cause = error.cause { reason += " (\(cause))" }
        markFailed(peer, reason: reason)
    }

    /// Why each dropped peer was dropped.
    public var dropped: [URL: String] { state.withLock { $0.reasons } }

    /// Adds `bytes` received from `peer`.
    func addReceived(_ bytes: Int64, from peer: URL) {
        guard bytes > 0 else { return }
        state.withLock { $0.received[peer] = $0.received[peer, default: 0].clampedAdding(bytes) }
    }

    /// Body bytes received from each peer so far (bytes later refused included).
    public var receivedBytes: [URL: Int64] { state.withLock { $0.received } }

    /// The URL of the content with SHA-256 `digest` on `peer`.
    public static func contentURL(peer: URL, sha256 digest: String) -> URL {
        base(peer).appending(path: contentPath + digest)
    }

    /// A request for the content `digest` of `size` bytes on `peer`: checked for size and digest by
    /// the transport, one attempt, no redirects, short timeouts; it follows the priority of
    /// `packURL` (``TransferRequest/priorityURL``), the archive of the pack it is for.
    func request(peer: URL, sha256 digest: String, size: Int64, priority: TransferPriority, following packURL: URL? = nil) -> TransferRequest {
        var request = TransferRequest(url: Self.contentURL(peer: peer, sha256: digest), priority: priority,
                                      expectedSize: size, expectedSHA256: digest)
        request.priorityURL = packURL
        request.followsRedirects = false
        request.maximumAttempts = 1
        request.retriesUnreachableServer = false
        request.stallSeconds = stallSeconds
        request.connectSeconds = connectSeconds
        request.firstByteSeconds = firstByteSeconds.isFinite ? firstByteSeconds : nil
        return request
    }
}
