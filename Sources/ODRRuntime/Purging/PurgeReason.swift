/// Why a pack was chosen for deletion; logged with every purge.
///
/// An extensible set of stable strings: policies outside the runtime (such as `odrsim`'s) add their own.
public struct PurgeReason: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
    /// The stable string written to the store's log, such as `least-recently-used`.
    public var rawValue: String

    /// Wraps a raw value; policies outside the runtime define their own reasons with it.
    public init(rawValue: String) { self.rawValue = rawValue }

    /// The raw value, as logs and reports show it.
    public var description: String { rawValue }

    /// No current catalog version needs the pack.
    public static let superseded = PurgeReason(rawValue: "superseded")
    /// No current catalog version needs it, and it belongs to a version older than the previous
    /// ones the store keeps (``ResourceManager/Configuration/keptPreviousVersions``): reclaimed as
    /// soon as no request holds it, whatever the free space.
    public static let olderVersion = PurgeReason(rawValue: "older-version")
    /// The current version lists it only for a variant this device does not choose (see
    /// ``VariantPreferences``): a manager with another choice installed it on the same store.
    public static let variantNotChosen = PurgeReason(rawValue: "variant-not-chosen")
    /// Its preservation priority is lower than that of packs that were kept.
    public static let lowPreservationPriority = PurgeReason(rawValue: "low-preservation-priority")
    /// It was used less recently than the packs that were kept.
    public static let leastRecentlyUsed = PurgeReason(rawValue: "least-recently-used")
    /// A live anticipation hint names it, but every pack not hinted was already gone and the
    /// hints naming the packs that were kept are likelier.
    public static let leastLikelyHint = PurgeReason(rawValue: "least-likely-hint")
    /// It was chosen over older packs of the same rank because it frees enough without freeing far
    /// more than needed.
    public static let closestFit = PurgeReason(rawValue: "closest-fit")
    /// Not an installed pack: what an interrupted download left in `staging/`, reclaimed (oldest
    /// first, before any installed pack) while no download of that pack is in progress.
    public static let staleStaging = PurgeReason(rawValue: "stale-staging")
}
