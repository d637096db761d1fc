/// A rule for choosing which installed packs to delete to free a number of bytes.
///
/// Policies are pure: the same candidates and need give the same plan, with no clock and no I/O.
/// The runtime uses ``PurgePlanner``; `odrsim` compares it with other policies through this protocol.
public protocol PurgePolicy: Sendable {
    /// A short, stable name for reports (`default`, `lru`, ...).
    var name: String { get }

    /// Chooses packs among `candidates` that free at least `bytesNeeded` bytes.
    ///
    /// A conforming policy never chooses a candidate that ``PurgeCandidate/isInUse``, and chooses
    /// nothing when `bytesNeeded` is zero or less. When every other candidate together is not enough,
    /// it chooses them all and the plan reports the ``PurgePlan/shortfall``.
    func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64) -> PurgePlan
}
