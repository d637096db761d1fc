/// What an install did.
public struct InstallSummary: Sendable, Hashable, Codable {
    /// Packs that were fetched, verified and installed now.
    public var installed: [String] = []
    /// Packs that were installed already (by an earlier run or another process): nothing fetched.
    public var alreadyInstalled: [String] = []
    /// Packs installed from the bundled catalog on disk instead of the network.
    public var fromBundle: [String] = []
    /// Archive bytes fetched over the network (bytes resumed from a partial download excluded).
    public var downloadedBytes: Int64 = 0
    /// Archive bytes that a resumed download did not fetch again.
    public var resumedBytes: Int64 = 0

    public init() {}
}
