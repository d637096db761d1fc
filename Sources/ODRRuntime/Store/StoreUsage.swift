/// How much of the disk a store takes, and how much is left.
public struct StoreUsage: Sendable, Hashable, Codable {
    /// The bytes of every installed pack's files.
    public var installedBytes: Int64
    /// The number of installed packs.
    public var installedPacks: Int
    /// The bytes in `staging/`: downloads in progress or interrupted, and removals under way (see
    /// ``ResourceStore/stagedPacks()``). Counted by the cache budget; a purge may reclaim those of
    /// packs no download is working on.
    public var stagingBytes: Int64
    /// The free space available to the store's file system, in bytes.
    public var freeBytes: Int64

    /// Creates a usage summary from its figures.
    public init(installedBytes: Int64, installedPacks: Int, stagingBytes: Int64 = 0, freeBytes: Int64) {
        self.installedBytes = installedBytes
        self.installedPacks = installedPacks
        self.stagingBytes = stagingBytes
        self.freeBytes = freeBytes
    }
}
