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
/// With a ``ResourceStore``, failures are recorded in it: every process on the store, and the
/// next run, starts at a healthy origin instead of waiting for the dead one again. A recorded
/// failure is a time on the clock of the process that saw it; one that lies ahead of this
/// process's clock by more than ``clockSkewTolerance`` (the clock was set back, or the store
/// came from another machine) is ignored rather than trusted to keep an origin away for longer
/// than ``backOff``.
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
    /// Where failures are shared with other processes, if anywhere.
    private let store: ResourceStore?
    /// Per origin: when it last failed (seconds since 1970), `nil` when it did not recently; and
    /// when the store was last read.
    private let state: Locked<State>

    private struct State {
        var failedAt: [Double?]
        var readAt: ContinuousClock.Instant?
    }

    /// How far ahead of this process's clock a recorded failure may lie and still count (5 s).
    public static let clockSkewTolerance: Double = 5
    /// How often the store's record is read again, for failures other processes saw (1 s).
    static let storeRereadInterval: Duration = .seconds(1)

    /// Origins in the order given (the first is the primary); duplicates are dropped.
    ///
    /// - Parameters:
    ///   - origins: catalog base URLs (the folder of `catalog.json`, or `catalog.json` itself).
    ///   - backOff: how long a failed origin is avoided (default 60 s; negative counts as zero).
    ///   - clock: the time source; tests inject one they control.
    ///   - store: where failures are recorded and shared across processes (`nil`: this object only).
    public init(_ origins: [URL], backOff: Duration = OriginSet.defaultBackOff, clock: any ManagerClock = SystemClock(),
                store: ResourceStore? = nil) {
        var seen = Set<String>()
        self.origins = origins.map(CatalogLocation.base).filter { seen.insert($0.absoluteString).inserted }
        self.backOff = max(.zero, backOff)
        self.clock = clock
        self.store = store
        state = Locked(State(failedAt: Array(repeating: nil, count: self.origins.count)))
    }

    /// The default back-off: one minute.
    public static let defaultBackOff: Duration = .seconds(60)

    /// The primary origin.
    public var primary: URL? { origins.first }

    private var backOffSeconds: Double {
        Double(backOff.components.seconds) + Double(backOff.components.attoseconds) / 1e18
    }

    /// Per origin, until when it is avoided (seconds since 1970) at `now`, `nil` when it is not:
    /// failures from the store merged in (the later of two wins), those from the future ignored.
    private func avoidedUntil(now: Double) -> [Double?] {
        let failedAt = state.withLock { state -> [Double?] in
            if let store, state.readAt.map({ $0.duration(to: .now) >= Self.storeRereadInterval }) ?? true {
                state.readAt = .now
                // A store that cannot be read only loses the shared part of the record.
                if let recorded = try? store.originFailures() {
                    for index in origins.indices {
                        let stored = recorded[origins[index].absoluteString]
                        state.failedAt[index] = [state.failedAt[index], stored].compactMap { $0 }.max()
                    }
                }
            }
            return state.failedAt
        }
        let length = backOffSeconds
        return failedAt.map { failed in
            guard let failed, failed <= now + Self.clockSkewTolerance else { return nil }
            let until = min(failed, now) + length
            return until > now ? until : nil
        }
    }

    /// Origin indices in the order the next transfer should try them: those not avoided in the
    /// configured order, then the avoided ones, the one whose back-off ends first first.
    public func order() -> [Int] {
        let until = avoidedUntil(now: clock.now())
        let healthy = until.indices.filter { until[$0] == nil }
        let avoided = until.indices.filter { until[$0] != nil }
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

    /// Avoids the origin of `url` for ``backOff`` from now (in every process on the store).
    public func markFailed(_ url: URL) {
        guard let index = index(of: url) else { return }
        let now = clock.now()
        state.withLock { $0.failedAt[index] = now }
        // The record is shared bookkeeping, not a condition of the transfer: a failed write
        // (a read-only store) keeps the back-off in this process only.
        try? store?.recordOriginFailure(origins[index].absoluteString, at: now)
    }

    /// The origin of `url` served what was asked: it is no longer avoided.
    public func markSucceeded(_ url: URL) {
        guard let index = index(of: url) else { return }
        let wasFailed = state.withLock { state -> Bool in
            defer { state.failedAt[index] = nil }
            return state.failedAt[index] != nil
        }
        // Only a recorded failure costs a write: a success per pack would otherwise write each time.
        if wasFailed { try? store?.clearOriginFailure(origins[index].absoluteString) }
    }

    /// Whether the origin at `index` is being avoided now.
    public func isAvoided(_ index: Int) -> Bool {
        guard origins.indices.contains(index) else { return false }
        return avoidedUntil(now: clock.now())[index] != nil
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
