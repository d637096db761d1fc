import ODRRuntime

/// A purge policy as the simulator drives it: told about every pack access, asked for a plan when
/// space must be freed.
///
/// Stateless runtime policies (``PurgePolicy``) take part through ``PlannerPolicy``; stateful and
/// offline policies (``GreedyDualSizePolicy``, ``BeladyPolicy``) conform directly, and the
/// runtime's own planner through ``RuntimePolicy``. Candidates are never in use, and their
/// ``PurgeCandidate/id`` is the pack's ``PackIndex`` raw value.
public protocol EvictionPolicy {
    /// The name in reports.
    var name: String { get }

    /// A request that began needs `pack`; `access` numbers the pack accesses of the script in the
    /// order of ``SimulationScript/forEachPackAccess(_:)``.
    mutating func didAccess(_ pack: PackIndex, access: Int, time: Double)

    /// Chooses packs to delete among `candidates` to free `bytesNeeded`.
    ///
    /// `candidates` is passed owned, so a policy that keeps it (in an iterator) takes it without
    /// copying its arrays: a purge per request makes that copy count.
    mutating func plan(_ candidates: __owned PurgeCandidates, bytesNeeded: Int64) -> PurgePlan

    /// Whether the policy reads the script's anticipation hints: candidates then carry their
    /// ``PurgeCandidate/hintLikelihood``, and the simulator prefetches hinted packs in the link's
    /// idle time. `false` unless a policy says otherwise: the hints are invisible to it.
    var takesHints: Bool { get }
}

extension EvictionPolicy {
    public var takesHints: Bool { false }

    public mutating func didAccess(_ pack: PackIndex, access: Int, time: Double) {}
}
