/// What an install did.
public struct InstallSummary: Sendable, Hashable, Codable {
    /// Packs that were fetched, verified and installed now.
    public var installed: [String] = []
    /// Packs that were installed already (by an earlier run or another process): nothing fetched.
    public var alreadyInstalled: [String] = []
    /// Packs installed from the bundled catalog on disk instead of the network.
    public var fromBundle: [String] = []
    /// Archive bytes received over the network by this install, counted where they arrived: from
    /// every origin, attempt and retry, so after a failover mid-pack the bytes the origin that died
    /// sent count as well as the rest from the next one. Bytes an earlier run received are not
    /// counted again (they are in ``resumedBytes``), nor bytes reused from the store.
    public var downloadedBytes: Int64 = 0
    /// Archive bytes not fetched again because they were held: kept by an earlier, interrupted run
    /// and verified (complete entries in staging, the held part of a cut entry), or received by
    /// this install before a transfer was cut and continued with a range request, on the same
    /// origin or another. The latter are in ``downloadedBytes`` too: they travelled once.
    public var resumedBytes: Int64 = 0
    /// Archive bytes not fetched because an installed file had the same content (a delta update).
    public var reusedBytes: Int64 = 0
    /// Entries taken from installed files instead of the network.
    public var reusedFiles: Int = 0
    /// Entries whose bytes were fetched.
    public var fetchedFiles: Int = 0
    /// HTTP requests made for pack bytes (byte ranges or whole archives; retries not counted).
    public var requests: Int = 0
    /// Bytes received from peers on the local network (see ``PackInstaller/peers``), bytes a
    /// peer sent that were refused or cut included; not part of ``downloadedBytes``, which counts
    /// the origins' bytes only.
    public var peerBytes: Int64 = 0
    /// ``peerBytes`` by peer base URL.
    public var bytesByPeer: [String: Int64] = [:]

    /// How each installed pack was assembled, in the order they finished.
    public var packs: [PackReport] = []

    /// An empty summary, which an install fills in as packs finish.
    public init() {}

    /// Adds what another install did (of other packs) to this summary.
    public mutating func add(_ other: InstallSummary) {
        installed += other.installed
        alreadyInstalled += other.alreadyInstalled
        fromBundle += other.fromBundle
        downloadedBytes += other.downloadedBytes
        resumedBytes += other.resumedBytes
        reusedBytes += other.reusedBytes
        reusedFiles += other.reusedFiles
        fetchedFiles += other.fetchedFiles
        requests += other.requests
        peerBytes = peerBytes.clampedAdding(other.peerBytes)
        bytesByPeer.merge(other.bytesByPeer) { $0.clampedAdding($1) }
        packs += other.packs
    }

    /// How one pack was assembled: what travelled and what did not.
    public struct PackReport: Sendable, Hashable, Codable {
        /// The pack id.
        public var id: String
        /// The archive's size: what a download of the whole pack would have cost.
        public var archiveBytes: Int64
        /// Archive bytes received over the network now, from every origin (see ``InstallSummary/downloadedBytes``).
        public var downloadedBytes: Int64
        /// The pack's distinct entries (files with the same content count once).
        public var entries: Int
        /// Entries whose bytes were fetched now.
        public var fetchedEntries: Int
        /// Entries linked from installed files with the same content.
        public var reusedEntries: Int

        /// Records how one pack was assembled.
        public init(id: String, archiveBytes: Int64, downloadedBytes: Int64, entries: Int, fetchedEntries: Int, reusedEntries: Int) {
            self.id = id
            self.archiveBytes = archiveBytes
            self.downloadedBytes = downloadedBytes
            self.entries = entries
            self.fetchedEntries = fetchedEntries
            self.reusedEntries = reusedEntries
        }
    }
}
