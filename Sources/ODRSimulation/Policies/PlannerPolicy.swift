import ODRRuntime

/// A ``PurgePolicy`` (pure, stateless) in the simulator, given all candidates at once.
public struct PlannerPolicy<Planner: PurgePolicy>: EvictionPolicy {
    public var planner: Planner

    public init(_ planner: Planner) { self.planner = planner }

    public var name: String { planner.name }

    public mutating func plan(_ candidates: PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
        planner.plan(candidates.all(), bytesNeeded: bytesNeeded)
    }
}
