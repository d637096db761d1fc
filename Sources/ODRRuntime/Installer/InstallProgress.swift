/// How far an install has come, in archive bytes (what is downloaded or read).
public struct InstallProgress: Sendable, Hashable {
    /// Archive bytes received or read so far, over all packs of the install.
    public var completedBytes: Int64
    /// Archive bytes of every pack the install needs to fetch.
    public var totalBytes: Int64
    /// Packs installed so far.
    public var completedPacks: Int
    /// Packs the install needs to fetch.
    public var totalPacks: Int

    /// Creates a progress snapshot from its counts.
    public init(completedBytes: Int64, totalBytes: Int64, completedPacks: Int, totalPacks: Int) {
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.completedPacks = completedPacks
        self.totalPacks = totalPacks
    }

    /// `completedBytes / totalBytes`, 1 when there is nothing to fetch.
    public var fraction: Double { totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : 1 }
}
