import Foundation
import ODRFormat

extension ResourceManager {
    /// Everything a manager needs to know; only the catalog URL and the store directory are required.
    ///
    /// ```swift
    /// var configuration = ResourceManager.Configuration(
    ///     catalogURL: URL(string: "https://cdn.example.com/game/")!,
    ///     storeDirectory: URL(filePath: "/var/lib/mygame/odr"))
    /// configuration.cacheBudget = 1 << 30           // keep at most 1 GiB of packs
    /// configuration.extraHeaders = ["Authorization": "Bearer \(token)"]
    /// let manager = try ResourceManager(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The catalog's base URL (the directory holding `catalog.json`); `https://`, `http://` or `file://`.
        public var catalogURL: URL
        /// The distribution to follow.
        public var distribution: String = "live"
        /// Where installed packs, partial downloads and the database live.
        public var storeDirectory: URL
        /// Headers sent with every request for this catalog (for example `Authorization`).
        public var extraHeaders: [String: String] = [:]
        /// A catalog directory shipped with the app: its packs install from disk, not the network.
        public var bundledCatalog: URL?
        /// The most bytes of packs in use at once (default 2 GiB). Beginning more fails with
        /// `exceeded-maximum-in-use-size`.
        public var inUseLimit: Int64 = Ledger.defaultInUseLimit
        /// The most bytes of installed packs the store may hold; `nil` for no budget. Before a
        /// download that would exceed it, packs not in use are purged.
        public var cacheBudget: Int64?
        /// Purge when the file system's free space would fall below this many bytes (default
        /// 256 MiB).
        ///
        /// A target, not a limit: before a download the manager purges packs no request uses until
        /// the free space left after the download is at least this much, or nothing more can go;
        /// it fails with `out-of-space` only when the download itself does not fit. So a watermark
        /// larger than the whole file system purges every pack not in use before each download,
        /// and posts ``ResourceManagerEvent/lowDiskSpace(freeBytes:)``, but still installs what fits.
        public var freeSpaceWatermark: Int64 = Self.defaultFreeSpaceWatermark
        /// How often the disk watcher checks free space while requests or downloads are active
        /// (see ``ResourceManager/checkDiskSpace()``); `nil` turns the timer off. Free space is also
        /// checked after every install. Default 30 seconds.
        public var diskCheckInterval: Duration? = .seconds(30)
        /// How many transfers run at once.
        public var maximumConcurrentTransfers: Int = 4
        /// The clock that stamps last use; injectable for tests.
        public var clock: any ManagerClock = SystemClock()
        /// The free-space probe; injectable for tests.
        public var diskSpace: any DiskSpaceProbe = FileSystemSpaceProbe()
        /// The transport; `nil` uses the libcurl ``TransferEngine``.
        public var transport: (any Transport)?
        /// The purge policy.
        public var purgePlanner = PurgePlanner()
        /// When an update or a resumed install fetches byte ranges of a pack instead of all of it.
        public var rangePolicy = RangePolicy()
        /// Whether installed files are flushed to stable storage before they are recorded (see
        /// ``ResourceStore/synchronousWrites``). On by default.
        public var synchronousWrites = true

        /// The default ``freeSpaceWatermark``: 256 MiB.
        public static let defaultFreeSpaceWatermark: Int64 = 256 << 20

        /// The defaults for everything but the catalog and where its packs are kept.
        public init(catalogURL: URL, storeDirectory: URL) {
            self.catalogURL = catalogURL
            self.storeDirectory = storeDirectory
        }
    }
}
