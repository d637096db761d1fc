#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The hosts that serve one catalog, primary first, and which of them to try next.
///
/// Packs are content-addressed and every byte installed is checked against the manifest, so any
/// origin may serve them; what the runtime installs is decided by the hashes, never by the host.
/// An origin that failed (no connection, a timeout, HTTP 5xx, a wrong `Content-Range`, bytes that
/// failed verification) is avoided for ``backOff``: the next transfers start at the next origin.
/// When every origin failed recently they are all tried anyway, the one whose back-off ends first
/// first, so a client never gives up only because of its own bookkeeping.
///
/// ```swift
/// let origins = OriginSet([URL(string: "https://cdn-a.example.com/game/")!,
///                          URL(string: "https://cdn-b.example.com/game/")!], backOff: .seconds(60))
/// let urls = origins.urls(of: "packs/\(id).zip")     // cdn-a first, unless it failed lately
/// origins.markFailed(urls[0])                         // cdn-b first for the next minute
/// ```
public final class OriginSet: Sendable {
    /// The base URLs (each ending in `/`), primary first.
    public let origins: [URL]
    /// How long an origin that failed is tried only after the others.
    public let backOff: Duration
    private let clock: any ManagerClock
    /// Per origin: until when it is avoided (seconds since 1970), `nil` when it is not.
    private let avoidedUntil: Locked<[Double?]>

    /// Origins in the order given (the first is the primary); duplicates are dropped.
    ///
    /// - Parameters:
    ///   - origins: catalog base URLs (the folder of `catalog.json`, or `catalog.json` itself).
    ///   - backOff: how long a failed origin is avoided (default 60 s; negative counts as zero).
    ///   - clock: the time source; tests inject one they control.
    public init(_ origins: [URL], backOff: Duration = OriginSet.defaultBackOff, clock: any ManagerClock = SystemClock()) {
        var seen = Set<String>()
        self.origins = origins.map(CatalogLocation.base).filter { seen.insert($0.absoluteString).inserted }
        self.backOff = max(.zero, backOff)
        self.clock = clock
        avoidedUntil = Locked(Array(repeating: nil, count: self.origins.count))
    }

    /// The default back-off: one minute.
    public static let defaultBackOff: Duration = .seconds(60)

    /// The primary origin.
    public var primary: URL? { origins.first }

    /// Origin indices in the order the next transfer should try them: those not avoided in the
    /// configured order, then the avoided ones, the one whose back-off ends first first.
    public func order() -> [Int] {
        let now = clock.now()
        let until = avoidedUntil.withLock { $0 }
        let healthy = until.indices.filter { (until[$0] ?? -.infinity) <= now }
        let avoided = until.indices.filter { (until[$0] ?? -.infinity) > now }
            .sorted { (until[$0] ?? 0, $0) < (until[$1] ?? 0, $1) }
        return healthy + avoided
    }

    /// The URLs of `relative` (`packs/<id>.zip`, `versions/3.json`) on every origin, in ``order()``;
    /// with `primaryFirst`, the primary leads whatever its back-off (for what only it may serve).
    public func urls(of relative: String, primaryFirst: Bool = false) -> [URL] {
        var order = order()
        if primaryFirst, let index = order.firstIndex(of: 0) { order.insert(order.remove(at: index), at: 0) }
        return order.map { CatalogLocation.url(of: relative, in: origins[$0]) }
    }

    /// The index of the origin `url` belongs to (the longest base it starts with), or `nil`.
    public func index(of url: URL) -> Int? {
        let text = url.absoluteString
        return origins.indices.filter { text.hasPrefix(origins[$0].absoluteString) }
            .max { origins[$0].absoluteString.count < origins[$1].absoluteString.count }
    }

    /// The origin `url` belongs to, as its base URL.
    public func origin(of url: URL) -> URL? { index(of: url).map { origins[$0] } }

    /// Avoids the origin of `url` for ``backOff`` from now.
    public func markFailed(_ url: URL) {
        guard let index = index(of: url) else { return }
        let until = clock.now() + Double(backOff.components.seconds) + Double(backOff.components.attoseconds) / 1e18
        avoidedUntil.withLock { $0[index] = until }
    }

    /// The origin of `url` served what was asked: it is no longer avoided.
    public func markSucceeded(_ url: URL) {
        guard let index = index(of: url) else { return }
        avoidedUntil.withLock { $0[index] = nil }
    }

    /// Whether the origin at `index` is being avoided now.
    public func isAvoided(_ index: Int) -> Bool {
        guard origins.indices.contains(index) else { return false }
        let until = avoidedUntil.withLock { $0[index] }
        return (until ?? -.infinity) > clock.now()
    }

    /// A transfer request for `relative` that starts at the first origin in ``order()`` and fails
    /// over to the others (``TransferRequest/alternateURLs``).
    /// `nil` when the set holds no origin.
    func request(for relative: String, priority: TransferPriority, primaryFirst: Bool = false) -> TransferRequest? {
        let urls = urls(of: relative, primaryFirst: primaryFirst)
        guard let first = urls.first else { return nil }
        var request = TransferRequest(url: first, priority: priority)
        request.alternateURLs = Array(urls.dropFirst())
        return request
    }
}
