import ODRFormat

/// Which packs hold which physical files: what deleting packs frees when packs share files.
///
/// An update installs a changed pack whose unchanged files are hard links to the previous pack's,
/// so two packs of one tag may share nearly every byte. Deleting one of them then frees only the
/// files no other installed pack holds (its *own* bytes); deleting both frees the shared files too.
/// This type answers both questions from one table of files, and is the one account the purge
/// planner, the store's figures and `odrsim` read: the runtime builds it from the inodes of the
/// installed files (``ResourceStore/diskAccount()``), `odrsim` from its model of the packs.
///
/// A file marked ``File/isPinned`` (linked from outside the installed packs, say by a copy the user
/// made with `ln`, or by a download in progress) is never counted as freed.
///
/// ```swift
/// import ODRRuntime
///
/// // Pack 0 (superseded) and pack 1 (current) share a 19 MiB file; each has 1 MiB of its own.
/// var account = PackFileAccount(files: [
///     .init(bytes: 19 << 20, packs: [0, 1]), .init(bytes: 1 << 20, packs: [0]), .init(bytes: 1 << 20, packs: [1]),
/// ])
/// print(account.ownBytes(of: 0))               // 1 MiB
/// print(account.bytesFreed(removing: [0, 1]))  // 21 MiB
/// ```
public struct PackFileAccount: Sendable, Equatable {
    /// One physical file (an inode) and the packs that hold it.
    public struct File: Sendable, Hashable {
        /// Its size in bytes (0...2^62; larger values are clamped).
        public var bytes: Int64
        /// The packs holding a link to it, by the caller's pack number.
        public var packs: [Int]
        /// Whether something other than these packs holds it too, so that deleting every one of
        /// them would not free it.
        public var isPinned: Bool

        /// A file of `bytes` held by `packs`, pinned or not.
        public init(bytes: Int64, packs: [Int], isPinned: Bool = false) {
            self.bytes = min(max(bytes, 0), StoreRow.maximumBytes)
            self.packs = packs
            self.isPinned = isPinned
        }
    }

    /// Every file, each once.
    public private(set) var files: [File]
    /// The files each pack holds, by index into ``files``.
    private var filesOfPack: [Int: [Int]] = [:]
    /// How many packs not removed yet hold each file.
    private var holders: [Int]

    /// An account of `files`; a pack listed twice for one file counts once.
    public init(files: [File]) {
        self.files = files.map { File(bytes: $0.bytes, packs: Array(Set($0.packs)).sorted(), isPinned: $0.isPinned) }
        holders = self.files.map(\.packs.count)
        for (index, file) in self.files.enumerated() {
            for pack in file.packs { filesOfPack[pack, default: []].append(index) }
        }
    }

    /// The packs the account knows, in ascending order.
    public var packs: [Int] { filesOfPack.keys.sorted() }

    /// The bytes of every file still held by some pack, each file once.
    public var installedBytes: Int64 {
        files.indices.lazy.filter { holders[$0] > 0 }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes of files held by more than one pack (each once).
    public var sharedBytes: Int64 {
        files.indices.lazy.filter { holders[$0] > 1 }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes of pinned files still held by some pack: never freed by a purge.
    public var pinnedBytes: Int64 {
        files.indices.lazy.filter { holders[$0] > 0 && files[$0].isPinned }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes deleting `pack` alone would free now: its files no other remaining pack holds and
    /// nothing pins.
    public func ownBytes(of pack: Int) -> Int64 {
        (filesOfPack[pack] ?? []).lazy.filter { holders[$0] == 1 && !files[$0].isPinned }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes of `pack`'s files that another remaining pack holds too.
    public func sharedBytes(of pack: Int) -> Int64 {
        (filesOfPack[pack] ?? []).lazy.filter { holders[$0] > 1 }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes of `pack`'s files held from outside the packs (``File/isPinned``).
    public func pinnedBytes(of pack: Int) -> Int64 {
        (filesOfPack[pack] ?? []).lazy.filter { files[$0].isPinned }.map { files[$0].bytes }.clampedSum()
    }

    /// The bytes of every file `pack` holds, each once: what it takes when nothing else holds them.
    public func totalBytes(of pack: Int) -> Int64 {
        (filesOfPack[pack] ?? []).lazy.map { files[$0].bytes }.clampedSum()
    }

    /// Takes `pack` out of the account, as deleting it does.
    ///
    /// - Returns: the bytes that frees (0 when the pack was removed already or is unknown).
    @discardableResult
    public mutating func remove(_ pack: Int) -> Int64 {
        guard let indices = filesOfPack.removeValue(forKey: pack) else { return 0 }
        var freed: Int64 = 0
        for index in indices {
            holders[index] -= 1
            if holders[index] == 0, !files[index].isPinned { freed = freed.clampedAdding(files[index].bytes) }
        }
        return freed
    }

    /// The bytes deleting all of `packs` would free, together.
    public func bytesFreed(removing packs: some Sequence<Int>) -> Int64 {
        var copy = self
        return packs.reduce(Int64(0)) { $0.clampedAdding(copy.remove($1)) }
    }
}

extension PurgePlanner {
    /// Chooses packs as ``plan(_:bytesNeeded:now:)`` does, counting each by the bytes deleting it
    /// really frees when packs share files.
    ///
    /// Each candidate is weighed by its own bytes in `account` (its ``PurgeCandidate/id`` is its
    /// pack number there), whatever its ``PurgeCandidate/bytes`` said; each deletion carries what it
    /// frees given the deletions before it, so the plan's ``PurgePlan/bytesFreed`` is what deleting
    /// its packs in order frees. Deleting a pack can make another's shared files its own: when a
    /// round of the plan leaves a need, the planner plans again over the remaining packs with their
    /// new own bytes. A round stops at the first deletion that meets the need.
    public func plan(_ candidates: [PurgeCandidate], bytesNeeded: Int64, now: Double, account: PackFileAccount) -> PurgePlan {
        var account = account
        var remaining = candidates.filter { !$0.isInUse }
        var deletions: [PurgePlan.Deletion] = []
        var freed: Int64 = 0
        while freed < bytesNeeded, !remaining.isEmpty {
            let weighed = remaining.map { candidate -> PurgeCandidate in
                var candidate = candidate
                candidate.bytes = account.ownBytes(of: candidate.id)
                return candidate
            }
            let round = plan(weighed, bytesNeeded: bytesNeeded.clampedSubtracting(freed), now: now)
            guard !round.deletions.isEmpty else { break }
            for deletion in round.deletions where freed < bytesNeeded {
                let bytes = account.remove(deletion.id)
                freed = freed.clampedAdding(bytes)
                deletions.append(.init(id: deletion.id, bytes: bytes, reason: deletion.reason))
            }
            let taken = Set(deletions.map(\.id))
            remaining.removeAll { taken.contains($0.id) }
        }
        return PurgePlan(bytesNeeded: bytesNeeded, deletions: deletions)
    }
}
