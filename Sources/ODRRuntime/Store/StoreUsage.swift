/// How much of the disk a store takes, and how much is left.
public struct StoreUsage: Sendable, Hashable, Codable {
    /// The bytes of every installed pack's files, each physical file once: packs of two versions
    /// share their unchanged files by hard link, and those count once (see ``StoreDiskAccount``).
    public var installedBytes: Int64
    /// The part of ``installedBytes`` that more than one installed pack holds (counted once).
    public var sharedBytes: Int64
    /// The part of ``installedBytes`` linked from outside the installed packs (by the user, or a
    /// download in progress): no purge frees it.
    public var pinnedBytes: Int64
    /// The number of installed packs.
    public var installedPacks: Int
    /// The bytes in `staging/`: downloads in progress or interrupted, and removals under way (see
    /// ``ResourceStore/stagedPacks()``). Counted by the cache budget; a purge may reclaim those of
    /// packs no download is working on.
    public var stagingBytes: Int64
    /// The free space available to the store's file system, in bytes.
    public var freeBytes: Int64

    /// Creates a usage summary from its figures.
    public init(installedBytes: Int64, installedPacks: Int, stagingBytes: Int64 = 0, freeBytes: Int64,
                sharedBytes: Int64 = 0, pinnedBytes: Int64 = 0) {
        self.installedBytes = installedBytes
        self.sharedBytes = sharedBytes
        self.pinnedBytes = pinnedBytes
        self.installedPacks = installedPacks
        self.stagingBytes = stagingBytes
        self.freeBytes = freeBytes
    }
}
