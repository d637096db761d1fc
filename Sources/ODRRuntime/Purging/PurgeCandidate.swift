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
    /// Whether the current version lists the pack only for a variant this device does not choose
    /// (a manager with other ``VariantPreferences`` installed it): purged first, with superseded packs.
    public var isUnchosenVariant: Bool
    /// Whether an in-use tag needs the pack; such a pack is never chosen.
    public var isInUse: Bool
    /// How many requests have begun using the pack (the store keeps counting across purges); the
    /// planner divides the pack's weighted idle time by it, rounded down to a power of two.
    public var useCount: Int
    /// The highest likelihood (0...1) among the live anticipation hints that name a tag needing the
    /// pack (``ResourceManager/anticipate(tags:likelihood:)``); 0 when no hint names it. Hinted packs
    /// go after every unhinted one that a current version needs, the least likely first.
    public var hintLikelihood: Double

    /// Describes a pack; by default of middle priority, needed by the current version (for a
    /// variant the device chose), not in use, and used once.
    public init(
        id: Int, bytes: Int64, lastUse: Double, preservationPriority: Double = 0.5,
        isSuperseded: Bool = false, isInUse: Bool = false, useCount: Int = 1, isUnchosenVariant: Bool = false,
        hintLikelihood: Double = 0
    ) {
        self.id = id
        self.bytes = bytes
        self.lastUse = lastUse
        self.preservationPriority = preservationPriority
        self.isSuperseded = isSuperseded
        self.isUnchosenVariant = isUnchosenVariant
        self.isInUse = isInUse
        self.useCount = useCount
        self.hintLikelihood = hintLikelihood
    }
}

extension PurgeCandidate {
    /// Whether the device has no use for the pack at all (superseded, or of a variant it does not
    /// choose): such packs go first, before any pack a request could need.
    public var isObsolete: Bool { isSuperseded || isUnchosenVariant }

    /// Whether a live hint names the pack (``hintLikelihood`` above 0; NaN counts as not hinted).
    public var isHinted: Bool { hintLikelihood > 0 }
}
