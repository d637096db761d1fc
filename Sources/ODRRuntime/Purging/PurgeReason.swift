/// Why a pack was chosen for deletion; logged with every purge.
///
/// An extensible set of stable strings: policies outside the runtime (such as `odrsim`'s) add their own.
public struct PurgeReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }

    public var description: String { rawValue }

    /// No current catalog version needs the pack.
    public static let superseded = PurgeReason(rawValue: "superseded")
    /// Its preservation priority is lower than that of packs that were kept.
    public static let lowPreservationPriority = PurgeReason(rawValue: "low-preservation-priority")
    /// It was used less recently than the packs that were kept.
    public static let leastRecentlyUsed = PurgeReason(rawValue: "least-recently-used")
    /// It was chosen over older packs of the same rank because it frees enough without freeing far
    /// more than needed.
    public static let closestFit = PurgeReason(rawValue: "closest-fit")
}
