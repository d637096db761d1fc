import ODRRuntime

/// Plain least recently used: ignores preservation priority and size.
public struct LRUPolicy: PurgePolicy {
    public init() {}

    public var name: String { "lru" }

    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan {
        var order = candidates.filter { !$0.isInUse }
        order.sort { ($0.lastUse, $0.id) < ($1.lastUse, $1.id) }
        return PurgePlan(takingInOrder: order, bytesNeeded: bytesNeeded, reason: .leastRecentlyUsed)
    }
}

extension PurgePlan {
    /// The plan that deletes `ordered` from the front until `bytesNeeded` is freed.
    init(takingInOrder ordered: some Sequence<PurgeCandidate>, bytesNeeded: Int64, reason: PurgeReason) {
        var deletions: [Deletion] = []
        var freed: Int64 = 0
        for candidate in ordered where freed < bytesNeeded {
            deletions.append(.init(id: candidate.id, bytes: candidate.bytes, reason: reason))
            freed += candidate.bytes
        }
        self.init(bytesNeeded: bytesNeeded, deletions: deletions)
    }
}
