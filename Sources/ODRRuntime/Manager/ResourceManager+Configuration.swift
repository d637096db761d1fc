#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
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
    /// configuration.trustedKeys = [try PublicSigningKey.load(from: releaseKeyURL)]   // accept only signed catalogs
    /// let manager = try ResourceManager(configuration: configuration)
    /// ```
    public struct Configuration: Sendable {
        /// The catalog's base URL (the directory holding `catalog.json`); `https://`, `http://` or
        /// `file://`. The primary origin: the store keys the catalog by it.
        public var catalogURL: URL
        /// Other origins that serve the same catalog (a second CDN, the bucket behind the CDN), tried
        /// in this order after ``catalogURL``. Empty by default.
        ///
        /// `catalog.json` and manifests come from the first origin that answers; packs and their
        /// ranges from any origin. A download that fails on one origin (no connection, a timeout,
        /// HTTP 5xx, a wrong `Content-Range`, bytes that fail verification, or a 404 from a mirror
        /// that has not received the file yet) continues on the next one where it stopped, keeping
        /// the verified bytes; the failing origin is avoided for ``mirrorBackOff``. What is installed
        /// is decided by the hashes the catalog pins, never by the host. A signed catalog is
        /// accepted from any origin (with the same signature and serial checks); an unsigned one only
        /// from the primary, unless ``allowsUnsignedCatalogFromMirrors``.
        public var mirrors: [URL] = []
        /// Other devices' stores on the local network that share their content (`odr share`,
        /// `startSharing` in ODRServe), asked first for each entry an install needs; every byte is
        /// verified against the catalog's digests, and a peer that fails or lies is dropped for the
        /// rest of the install (see ``PeerSet``). Empty (the default): no peer is asked.
        public var peers: [URL] = []
        /// Whether installs also ask peers found on the local network: the DNS-SD service
        /// `_odr._tcp` browsed through Avahi on the system D-Bus, keeping the services whose TXT
        /// record names this catalog's id (``PeerDiscovery``). Off by default. At most
        /// ``PeerDiscovery/maximumPeers`` peers are added after ``peers``; a discovery waits at
        /// most ``peerDiscoveryTimeout`` and is reused for a minute. Without a bus or Avahi the
        /// install goes on with ``peers`` and the origins, and the store's log says why
        /// (``StoreEvent/Kind/discovery``).
        public var discoversPeers = false
        /// The most seconds a discovery of peers waits for Avahi (default
        /// ``defaultPeerDiscoveryTimeout``, 2; it usually ends sooner, see ``PeerDiscovery``).
        public var peerDiscoveryTimeout: Double = Configuration.defaultPeerDiscoveryTimeout
        /// The default of ``peerDiscoveryTimeout``: 2 seconds.
        public static let defaultPeerDiscoveryTimeout: Double = 2
        /// Seconds a peer gets from a request's start, connecting included, to the first byte of
        /// the body; a peer that misses it is dropped for the rest of the install and the origins
        /// serve its part (default ``PeerSet/defaultFirstByteSeconds``, 0.1: a peer on a wired LAN
        /// answers in milliseconds). Raise it for peers behind Wi-Fi power saving, which can hold
        /// a packet for 100 ms or more; not finite or not positive: no such deadline.
        public var peerFirstByteTimeout: Double = PeerSet.defaultFirstByteSeconds
        /// How long an origin that failed is avoided: transfers start at the next one meanwhile
        /// (default 60 seconds). The failure is recorded in the store, so other processes on it
        /// and the next launch avoid the origin too (``OriginSet``).
        public var mirrorBackOff: Duration = OriginSet.defaultBackOff
        /// Seconds to wait for a connection to an origin (default 5; doubled on each retry of the
        /// same origin without an answer). See ``TransferEngine/Configuration/connectTimeout``.
        public var connectTimeout: Double = TransferEngine.Configuration().connectTimeout
        /// Seconds to wait, once connected, for an origin's first response byte (default 5;
        /// doubled on each retry of the same origin without an answer): a host that accepts and
        /// never answers costs this before the next origin is asked. Raise it for links with
        /// multi-second latency. See ``TransferEngine/Configuration/firstByteTimeout``.
        public var firstByteTimeout: Double = TransferEngine.Configuration().firstByteTimeout
        /// Seconds a download's body may go without a byte before it continues on another origin,
        /// when there is one (default 5). Silence, not speed: a slow but steady origin is kept.
        /// See ``TransferEngine/Configuration/failoverStallTimeout``.
        public var failoverStallTimeout: Double = TransferEngine.Configuration().failoverStallTimeout
        /// Whether an unsigned `catalog.json` is accepted from a mirror (default `false`).
        ///
        /// Without ``trustedKeys`` nothing proves where a catalog came from: a mirror's operator (or
        /// anyone who can change what it serves) could then decide which packs and files the game
        /// installs, since the catalog pins them. Turn this on only for mirrors you control as
        /// tightly as the primary; better, sign the catalog (`odrpack sign`) and set ``trustedKeys``,
        /// which makes every origin equally safe.
        public var allowsUnsignedCatalogFromMirrors = false
        /// The id of the catalog the game means (`nil`, the default: the one its URLs serve).
        ///
        /// Online, a `catalog.json` of another id is refused (`invalid-catalog`, naming both ids).
        /// Offline, a store opened with URLs it has not seen serving a catalog (after the game moved
        /// to a new CDN) uses the stored catalog of this id; without it, the catalog a mirror
        /// served, or the only one the store holds (docs/STORE.md, "Catalogs and their origins").
        public var catalogID: String?
        /// Every origin, primary (``catalogURL``) first, then ``mirrors``.
        public var origins: [URL] { [catalogURL] + mirrors }
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
        /// How many earlier catalog versions keep their superseded packs (default 1): those of the
        /// newest earlier version, which a process still using it or a rollback would need. Older
        /// versions' packs are deleted as soon as no request holds them (``PurgeReason/olderVersion``);
        /// 0 deletes every superseded pack not in use. The kept packs still go first under pressure.
        public var keptPreviousVersions: Int = Configuration.defaultKeptPreviousVersions
        /// The default of ``keptPreviousVersions``: 1.
        public static let defaultKeptPreviousVersions = 1
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
        /// When hinted prefetches stop making room, or stop, because hinted bytes went unused
        /// (``PrefetchLearning``; ``ResourceManager/prefetchMeasure``). ``PrefetchLearning/Rule/never``
        /// keeps every prefetch making room.
        public var prefetchLearning = PrefetchLearning.Rule.standard
        /// When an update or a resumed install fetches byte ranges of a pack instead of all of it.
        public var rangePolicy = RangePolicy()
        /// Whether installed files are flushed to stable storage before they are recorded (see
        /// ``ResourceStore/synchronousWrites``). On by default.
        public var synchronousWrites = true

        // MARK: Download policy

        /// Which downloads may use a metered network, the daily metered byte budget, and how much
        /// bandwidth non-urgent transfers keep while an urgent one runs (see ``DownloadPolicy``).
        /// By default urgent downloads may use metered networks and prefetch may not.
        public var downloadPolicy = DownloadPolicy()
        /// Tells whether the network is metered. The default, ``NetworkManagerBusProbe``, asks
        /// NetworkManager over the system D-Bus (no process; unmetered when there is no bus);
        /// ``FixedNetworkProbe`` turns probing off, and an app may set a probe of its own.
        public var networkProbe: any NetworkConditionProbe = NetworkManagerBusProbe()

        /// The default ``freeSpaceWatermark``: 256 MiB.
        public static let defaultFreeSpaceWatermark: Int64 = 256 << 20
        /// The public keys `catalog.json` must be signed by (`odrpack key generate` writes them as
        /// `NAME.pub`). Empty (the default) accepts any well-formed catalog, as before signing
        /// existed; docs/SECURITY.md says what that leaves open. With keys, a catalog that is not
        /// signed by ``signatureThreshold`` of them is `untrusted-catalog`, an expired one
        /// `catalog-expired`, and a manifest that differs from its pin `integrity`.
        public var trustedKeys: [PublicSigningKey] = []
        /// How many distinct ``trustedKeys`` must sign `catalog.json` (default 1).
        public var signatureThreshold: Int = 1
        /// Which key set ``trustedKeys`` is: 1 (the default) for the keys the catalog started with;
        /// an app release that ships the keys of a later rotation (after a compromise, say) gives
        /// that rotation's number, so it is not overridden by an older set its store followed.
        public var trustedKeySetVersion: Int = 1
        /// The largest `catalog.json` accepted; a longer response is cut off (default 16 MiB).
        public var maximumCatalogBytes: Int = CatalogTrust.defaultMaximumCatalogBytes
        /// The largest version manifest accepted; a longer response is cut off (default 32 MiB: see ``CatalogTrust/defaultMaximumManifestBytes``).
        public var maximumManifestBytes: Int = CatalogTrust.defaultMaximumManifestBytes

        /// This device's choice of variants (see ``VariantPreferences``): for each axis the catalog
        /// declares, the values it accepts, best first. Requests download only the packs of the
        /// chosen variants plus the common ones, and `url(forResource:)` finds the chosen variant of
        /// a logical path. Empty (the default) takes every axis in the catalog's declared order.
        /// Installed packs of variants no longer chosen (another manager chose them on the same
        /// store) are purged first, as ``PurgeReason/variantNotChosen``.
        ///
        /// ```swift
        /// configuration.variants = VariantPreferences(["resolution": ["2x", "1x"], "texture": ["astc"]])
        /// ```
        public var variants = VariantPreferences()

        /// The trust settings above, as the catalog client takes them.
        public var trust: CatalogTrust {
            CatalogTrust(keys: trustedKeys, threshold: signatureThreshold, keySetVersion: trustedKeySetVersion,
                         maximumCatalogBytes: maximumCatalogBytes, maximumManifestBytes: maximumManifestBytes)
        }

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

        /// The defaults for a catalog served by several origins: `primary` first, then `mirrors`.
        ///
        /// ```swift
        /// var configuration = ResourceManager.Configuration(
        ///     primary: URL(string: "https://cdn-a.example.com/game/")!,
        ///     mirrors: [URL(string: "https://cdn-b.example.com/game/")!],
        ///     storeDirectory: URL(filePath: "/var/lib/mygame/odr"))
        /// configuration.mirrorBackOff = .seconds(300)
        /// ```
        public init(primary: URL, mirrors: [URL], storeDirectory: URL) {
            self.init(catalogURL: primary, storeDirectory: storeDirectory)
            self.mirrors = mirrors
        }
    }
}
