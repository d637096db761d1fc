/// How much of the disk a store takes, and how much is left.
public struct StoreUsage: Sendable, Hashable, Codable {
    /// The bytes of every installed pack's files.
    public var installedBytes: Int64
    /// The number of installed packs.
    public var installedPacks: Int
    /// The free space available to the store's file system, in bytes.
    public var freeBytes: Int64

    /// Creates a usage summary from its figures.
    public init(installedBytes: Int64, installedPacks: Int, freeBytes: Int64) {
        self.installedBytes = installedBytes
        self.installedPacks = installedPacks
        self.freeBytes = freeBytes
    }
}
