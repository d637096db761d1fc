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
        /// Purge when the file system's free space would fall below this many bytes.
        public var freeSpaceWatermark: Int64 = 256 << 20
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

        /// A catalog location as a person or a config file gives it: an `http://`, `https://` or
        /// `file://` URL as is, anything else as a local catalog folder.
        ///
        /// ```swift
        /// Configuration.catalogURL(parsing: "build/catalog")   // file:///home/me/game/build/catalog/
        /// ```
        public static func catalogURL(parsing text: String) -> URL {
            if let url = URL(string: text), let scheme = url.scheme, ["http", "https", "file"].contains(scheme) { return url }
            return URL(filePath: text, directoryHint: .isDirectory).standardizedFileURL
        }

        /// The defaults for everything but the catalog and where its packs are kept.
        public init(catalogURL: URL, storeDirectory: URL) {
            self.catalogURL = catalogURL
            self.storeDirectory = storeDirectory
        }
    }
}
