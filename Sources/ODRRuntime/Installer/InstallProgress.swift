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
    /// Archive bytes of entries the install did not need to fetch, over the packs planned so far:
    /// kept in staging by an earlier attempt, or reused from installed packs. Part of neither
    /// ``completedBytes`` nor ``totalBytes``; a request's progress counts them as done.
    public var heldBytes: Int64
    /// The latest failed attempt of a transfer that waits to try again; `nil` while bytes flow (or
    /// nothing failed). The install goes on by itself when the next attempt succeeds.
    public var retry: TransferRetry?
    /// Bytes received from peers on the local network so far (see ``PackInstaller/peers``), over
    /// all packs; included in ``completedBytes`` while a pack's peer round runs, and in
    /// ``heldBytes`` once its plan for the origins is made.
    public var fromPeersBytes: Int64 = 0

    /// Creates a progress snapshot from its counts.
    public init(completedBytes: Int64, totalBytes: Int64, completedPacks: Int, totalPacks: Int,
                heldBytes: Int64 = 0, retry: TransferRetry? = nil, fromPeersBytes: Int64 = 0) {
        self.fromPeersBytes = fromPeersBytes
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.completedPacks = completedPacks
        self.totalPacks = totalPacks
        self.heldBytes = heldBytes
        self.retry = retry
    }

    /// `completedBytes / totalBytes`, 1 when there is nothing to fetch.
    public var fraction: Double { totalBytes > 0 ? min(1, Double(completedBytes) / Double(totalBytes)) : 1 }

    /// Whether a transfer waits to try again after a failed attempt (``retry`` is set).
    public var isStalled: Bool { retry != nil }
}
