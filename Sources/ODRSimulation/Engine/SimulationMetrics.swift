/// What one policy did over a script: the columns of `odrsim`'s table.
public struct SimulationMetrics: Sendable, Equatable, Codable {
    /// Requests that began (including those refused or failed).
    public var requests = 0
    /// Requests whose packs were all installed and complete when they began.
    public var hits = 0
    /// Requests that had to download or wait for a pack.
    public var misses = 0
    /// Bytes downloaded, hinted prefetches included.
    public var bytesDownloaded: Int64 = 0
    /// Of ``bytesDownloaded``, the bytes hinted prefetches moved (`hinted` only), whether or not a
    /// request used the pack afterwards.
    public var prefetchedBytes: Int64 = 0
    /// Hinted prefetches that completed (the pack installed before any request asked for it).
    public var prefetchedPacks = 0
    /// Of ``prefetchedBytes``, those no request used: prefetches cancelled when their hint ended,
    /// and prefetched packs purged (or still installed at the end) before any request began using
    /// them. The cost of wrong guesses.
    public var unusedPrefetchBytes: Int64 = 0
    /// The learning measure at the end (`hinted` only): the share of judged hinted bytes a request
    /// used (``ODRRuntime/PrefetchLearning/measure``).
    public var prefetchMeasure: Double?
    /// Seconds players waited for urgent requests' packs.
    public var stallSeconds = 0.0
    /// Packs deleted.
    public var purgedPacks = 0
    /// Bytes deleted.
    public var purgedBytes: Int64 = 0
    /// Bytes deleted beyond what each purge needed.
    public var overPurgedBytes: Int64 = 0
    /// The most bytes the store held at once.
    public var peakDiskBytes: Int64 = 0
    /// Requests refused because their packs would exceed the in-use limit.
    public var inUseLimitRefusals = 0
    /// Requests that failed because their packs did not fit even after purging.
    public var outOfSpaceFailures = 0

    public init() {}

    /// The share of requests that were hits.
    public var hitRate: Double { requests == 0 ? 0 : Double(hits) / Double(requests) }
}
