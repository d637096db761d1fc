import ODRRuntime

/// The policies `odrsim` compares, by the names the command line uses.
public enum PolicyChoice: String, CaseIterable, Sendable, Codable, CustomStringConvertible {
    /// The runtime's ``PurgePlanner``: superseded, then recency weighted by priority, avoiding over-purging.
    case `default`
    /// ``RuntimePolicy`` taking hints: the default purge order with the hints' likelihoods, and
    /// hinted packs prefetched in idle time.
    case hinted
    /// ``LRUPolicy``.
    case lru
    /// ``PriorityLRUPolicy``.
    case priorityLRU = "priority-lru"
    /// ``GreedyDualSizePolicy``.
    case gds
    /// ``BeladyPolicy``, the offline reference.
    case belady

    public var description: String { rawValue }

    /// Runs `simulator`'s script under this policy.
    public func run(on simulator: Simulator) -> SimulationResult {
        switch self {
        case .default: simulator.run(RuntimePolicy())
        case .hinted: simulator.run(RuntimePolicy(takesHints: true))
        case .lru: simulator.run(PlannerPolicy(LRUPolicy()))
        case .priorityLRU: simulator.run(PlannerPolicy(PriorityLRUPolicy()))
        case .gds: simulator.run(GreedyDualSizePolicy(catalog: simulator.script.catalog, device: simulator.device))
        case .belady: simulator.run(BeladyPolicy(script: simulator.script))
        }
    }
}
