import ODRRuntime

/// Lowest preservation priority first, then least recently used; no attention to size or to
/// superseded packs.
public struct PriorityLRUPolicy: PurgePolicy {
    public init() {}

    public var name: String { "priority-lru" }

    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        var order = candidates.filter { !$0.isInUse }
        order.sort { ($0.preservationPriority, $0.lastUse, $0.id) < ($1.preservationPriority, $1.lastUse, $1.id) }
        let top = order.last?.preservationPriority ?? 0
        var plan = PurgePlan(takingInOrder: order, bytesNeeded: bytesNeeded, reason: .leastRecentlyUsed)
        for i in plan.deletions.indices where order[i].preservationPriority < top {
            plan.deletions[i].reason = .lowPreservationPriority
        }
        return plan
    }
}
