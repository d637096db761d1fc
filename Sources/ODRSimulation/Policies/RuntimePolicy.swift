import ODRRuntime

/// The runtime's ``PurgePlanner``, reading candidates lazily in purge order (merging the simulator's
/// recency list of each priority and use class) so that a purge costs what it deletes, not what is
/// installed.
public struct RuntimePolicy: EvictionPolicy {
    public var planner: PurgePlanner

    public init(_ planner: PurgePlanner = PurgePlanner()) { self.planner = planner }

    public var name: String { planner.name }

    public mutating func plan(_ candidates: PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
        var order = candidates.makePurgeOrderIterator(planner: planner)
        return planner.plan(bytesNeeded: bytesNeeded, topPriority: candidates.topPriority) { order.next() }
    }
}
