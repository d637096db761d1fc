import ODRRuntime

/// The runtime's ``PurgePlanner``, reading candidates lazily in purge order (merging the simulator's
/// recency list of each priority and use class) so that a purge costs what it deletes, not what is
/// installed.
///
/// With ``takesHints`` it is `hinted`: the same planner, given the hints' likelihoods, with the
/// simulator prefetching hinted packs in the link's idle time, as a ``ODRRuntime/ResourceManager``
/// does for ``ODRRuntime/ResourceManager/anticipate(tags:likelihood:)``.
public struct RuntimePolicy: EvictionPolicy {
    public var planner: PurgePlanner
    public let takesHints: Bool

    public init(_ planner: PurgePlanner = PurgePlanner(), takesHints: Bool = false) {
        self.planner = planner
        self.takesHints = takesHints
    }

    public var name: String { takesHints ? "hinted" : planner.name }

    public mutating func plan(_ candidates: __owned PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
        let topPriority = candidates.topPriority
        // The candidates move into the iterator (no copy of their arrays, retained one by one).
        var order = candidates.makePurgeOrderIterator(planner: planner)
        return planner.plan(bytesNeeded: bytesNeeded, topPriority: topPriority) { order.next() }
    }
}
