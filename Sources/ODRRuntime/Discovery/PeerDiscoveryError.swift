/// Why DNS-SD discovery of peers (``PeerDiscovery``) or an announcement (``PeerAnnouncement``) did
/// not happen. Discovery is an extra: an install with a discovery error goes on with the explicit
/// peers and the origins.
public struct PeerDiscoveryError: Error, Sendable, Equatable, CustomStringConvertible {
    /// What went wrong; new codes may be added.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// No system bus at the socket (`DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`),
        /// or it refused this user.
        public static let busUnavailable = Code(rawValue: "bus-unavailable")
        /// The bus answered, but no Avahi daemon is on it (`org.freedesktop.Avahi` has no owner).
        public static let avahiUnavailable = Code(rawValue: "avahi-unavailable")
        /// Avahi refused a call (its D-Bus error name is in the message).
        public static let avahiRefused = Code(rawValue: "avahi-refused")
        /// Nothing answered in time.
        public static let timedOut = Code(rawValue: "timed-out")
        /// The bus sent bytes that are not the answer expected.
        public static let malformedReply = Code(rawValue: "malformed-reply")
        /// What was to be announced cannot go into a DNS-SD record (a catalog id over 247 bytes, a
        /// name over 63).
        public static let invalidRecord = Code(rawValue: "invalid-record")
        /// Every name an announcement tried was taken on the local network
        /// (``PeerAnnouncement/maximumRenames`` in a row): give it a name of its own.
        public static let nameCollision = Code(rawValue: "name-collision")
        /// Avahi could not publish an announcement it had taken (its entry group's state FAILURE).
        public static let announcementFailed = Code(rawValue: "announcement-failed")
    }

    public var code: Code
    /// What happened and what to do, for a person.
    public var message: String

    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code): \(message)" }

    /// The error for a D-Bus error reply from Avahi.
    static func refused(_ name: String?, doing what: String) -> PeerDiscoveryError {
        switch name {
        case "org.freedesktop.DBus.Error.ServiceUnknown", "org.freedesktop.DBus.Error.NameHasNoOwner":
            PeerDiscoveryError(.avahiUnavailable, "No Avahi daemon is on the system bus, so peers cannot be \(what); start avahi-daemon, or name peers explicitly.")
        default:
            PeerDiscoveryError(.avahiRefused, "Avahi refused to \(what == "found" ? "browse" : "announce"): \(name ?? "an error without a name").")
        }
    }
}
