/// An installed pack as the purge planner sees it: its size, how recently and how much it matters.
public struct PurgeCandidate: Sendable, Hashable {
    /// The caller's identifier for the pack, echoed in the plan: the store's row id in the runtime,
    /// the ``PackIndex`` raw value in `odrsim`.
    public var id: Int
    /// The bytes deleting the pack frees.
    public var bytes: Int64
    /// When a request last began or ended using the pack, in seconds on the caller's clock.
    public var lastUse: Double
    /// The highest preservation priority (0...1) among the pack's tags.
    public var preservationPriority: Double
    /// Whether no current catalog version needs the pack any more.
    public var isSuperseded: Bool
    /// Whether an in-use tag needs the pack; such a pack is never chosen.
    public var isInUse: Bool
    /// How many requests have begun using the pack (the store keeps counting across purges); the
    /// planner divides the pack's weighted idle time by it, rounded down to a power of two.
    public var useCount: Int

    /// Describes a pack; by default of middle priority, needed by the current version, not in
    /// use, and used once.
    public init(
        id: Int, bytes: Int64, lastUse: Double, preservationPriority: Double = 0.5,
        isSuperseded: Bool = false, isInUse: Bool = false, useCount: Int = 1
    ) {
        self.id = id
        self.bytes = bytes
        self.lastUse = lastUse
        self.preservationPriority = preservationPriority
        self.isSuperseded = isSuperseded
        self.isInUse = isInUse
        self.useCount = useCount
    }
}
