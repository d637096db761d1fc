import ODRRuntime

/// A runtime ``PurgePolicy`` (pure, stateless) in the simulator.
public struct PlannerPolicy<Planner: PurgePolicy>: EvictionPolicy {
    public var planner: Planner

    public init(_ planner: Planner) { self.planner = planner }

    public var name: String { planner.name }

    public mutating func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        planner.plan(candidates, bytesNeeded: bytesNeeded)
    }
}
