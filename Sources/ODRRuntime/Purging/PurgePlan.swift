import ODRFormat

/// What a purge policy decided: the packs to delete, why, and whether that frees enough.
public struct PurgePlan: Sendable, Equatable {
    /// One pack to delete.
    public struct Deletion: Sendable, Equatable {
        /// The candidate's ``PurgeCandidate/id``.
        public var id: Int
        /// The bytes it frees.
        public var bytes: Int64
        /// Why it goes.
        public var reason: PurgeReason

        /// Deletes candidate `id`, freeing `bytes`, for `reason`.
        public init(id: Int, bytes: Int64, reason: PurgeReason) {
            self.id = id
            self.bytes = bytes
            self.reason = reason
        }
    }

    /// The bytes the caller asked to free.
    public var bytesNeeded: Int64
    /// The packs to delete, in the order the policy chose them.
    public var deletions: [Deletion]

    /// A plan to free `bytesNeeded` bytes by deleting `deletions`, in that order.
    public init(bytesNeeded: Int64, deletions: [Deletion]) {
        self.bytesNeeded = bytesNeeded
        self.deletions = deletions
    }

    /// The bytes the deletions free (clamped to `Int64`'s range rather than overflowing).
    public var bytesFreed: Int64 { deletions.lazy.map(\.bytes).clampedSum() }

    /// The bytes still missing after every deletion: non-zero only when even deleting every pack not
    /// in use is not enough.
    public var shortfall: Int64 { max(0, bytesNeeded.clampedSubtracting(bytesFreed)) }

    /// The bytes freed beyond the need.
    public var overPurgedBytes: Int64 { max(0, bytesFreed.clampedSubtracting(bytesNeeded)) }

    /// The identifiers of the packs to delete, in order.
    public var ids: [Int] { deletions.map(\.id) }
}
