#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif

/// One line of the store's log: a pack installed, purged, or repaired after a crash, a hinted
/// prefetch started, cancelled or finished, and why.
public struct StoreEvent: Sendable, Hashable, Codable {
    /// What happened.
    public struct Kind: RawRepresentable, Hashable, Sendable, Codable, CustomStringConvertible {
        /// The stable string stored in the log, such as `purge`.
        public var rawValue: String
        /// Wraps a raw value; use the static members rather than spelling the string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw value, as logs show it.
        public var description: String { rawValue }

        /// A pack was verified and moved into `packs/`.
        public static let install = Kind(rawValue: "install")
        /// A pack's files were deleted to free space or on request.
        public static let purge = Kind(rawValue: "purge")
        /// Opening the store found a pack's files missing or incomplete and marked it not installed.
        public static let repair = Kind(rawValue: "repair")
        /// A download moved to another origin (a mirror or second CDN): `packID` names the pack (or
        /// `catalog.json`, a manifest), `bytes` what it kept, `reason` the origins and why.
        public static let origin = Kind(rawValue: "origin")
        /// A hinted prefetch (``ResourceManager/anticipate(tags:likelihood:)``) of the pack: `reason`
        /// starts with `prefetch started` (then the hint's likelihood and tags; `bytes` what it
        /// downloads), `prefetch cancelled` (every hint naming it ended; `bytes` what it had
        /// received), `prefetch failed` (then the error's code; `bytes` what it had received) or
        /// `prefetch installed` (`bytes` installed; then whether a request joined it first). The
        /// install itself has its own ``install`` line.
        public static let hint = Kind(rawValue: "hint")
        /// The followed catalog changed: `reason` says `version A -> B` (or `followed: version B`)
        /// with its serial, or `refused: error[CODE]` and why a `catalog.json` was refused
        /// (a rollback, an expired or untrusted signature, a damaged manifest); `packID` is
        /// `catalog.json`.
        public static let catalog = Kind(rawValue: "catalog")
        /// An install of the pack failed: `reason` is `install failed: error[CODE]` and the
        /// message's first sentence, `bytes` what it had received.
        public static let failure = Kind(rawValue: "failure")
        /// A DNS-SD discovery of peers (``ResourceManager/Configuration/discoversPeers``): `packID`
        /// is `_odr._tcp`, `bytes` 0, `reason` how many peers it found, each record it ignored and
        /// why (`other-catalog`, `loopback-of-another-machine`, ...), or `failed: CODE` and why.
        public static let discovery = Kind(rawValue: "discovery")
    }

    /// When, in seconds since 1970.
    public var time: Double
    /// Whether the pack was installed, purged or repaired, or a hinted prefetch's step.
    public var kind: Kind
    /// The pack concerned.
    public var packID: String
    /// The bytes installed or freed.
    public var bytes: Int64
    /// Why (a ``PurgeReason`` raw value for purges; the source for installs).
    public var reason: String

    /// Creates a log line.
    public init(time: Double, kind: Kind, packID: String, bytes: Int64, reason: String) {
        self.time = time
        self.kind = kind
        self.packID = packID
        self.bytes = bytes
        self.reason = reason
    }
}
