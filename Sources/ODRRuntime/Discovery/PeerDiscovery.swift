#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Finds peers of a catalog on the local network: browses the DNS-SD service `_odr._tcp` through
/// Avahi on the system D-Bus and keeps the services whose TXT record names the catalog's id
/// (``DiscoveredService/verdict(catalogID:)``). Opt-in (``ResourceManager/Configuration/discoversPeers``,
/// `odr fetch --discover`).
///
/// It speaks to the bus itself (``BusConnection``, ``DBusMessage``: the same code that asks
/// NetworkManager whether the network is metered), blocking the calling thread for at most
/// ``timeout`` in all: a machine without a bus or without Avahi answers at once with a typed
/// ``PeerDiscoveryError``, and one that answers slowly costs the timeout, never more.
///
/// When it ends: as soon as Avahi has reported the services it already knew (`CacheExhausted`)
/// and every record seen so far is resolved, if one of them is a peer of the catalog (the common
/// case on a LAN where the peer has been announcing: a few milliseconds); else when Avahi says it
/// has heard from the network too (`AllForNow`, which a live Avahi sends about a second after the
/// browse starts) and the records are resolved; else at the timeout. A record announced for the
/// first time and resolved over the network takes a few hundred milliseconds after that first
/// second, hence the default timeout of 2 s: a bound, rarely the cost.
///
/// ```swift
/// let report = try PeerDiscovery().discover(catalogID: "com.example.game")
/// configuration.peers += report.peers
/// ```
public struct PeerDiscovery: Sendable {
    /// The bus socket's path.
    public var socketPath: String
    /// The most seconds a discovery takes (default 2).
    public var timeout: Double
    /// The most peers kept (default 8); the most records resolved is four times that.
    public var maximumPeers: Int

    /// Discovery over the bus at `socketPath`; by default the `unix:path=` of
    /// `DBUS_SYSTEM_BUS_ADDRESS`, else `/run/dbus/system_bus_socket`.
    public init(socketPath: String? = nil, timeout: Double = 2, maximumPeers: Int = 8) {
        self.socketPath = socketPath ?? BusConnection.systemBusPathFromEnvironment
        self.timeout = timeout.isFinite ? max(0.01, min(timeout, 60)) : 2
        self.maximumPeers = max(1, min(maximumPeers, 64))
    }

    /// What one discovery found.
    public struct Report: Sendable, Equatable {
        /// The peers of the catalog, in the order found, without duplicates.
        public var peers: [URL] = []
        /// The records that were not taken, with the reason for each.
        public var ignored: [(service: DiscoveredService, reason: DiscoveredService.Rejection)] = []
        /// Whether Avahi said it had reported every service it knew (`AllForNow`) before the timeout.
        public var complete = false

        public static func == (a: Report, b: Report) -> Bool {
            a.peers == b.peers && a.complete == b.complete
                && a.ignored.map(\.service) == b.ignored.map(\.service) && a.ignored.map(\.reason) == b.ignored.map(\.reason)
        }
    }

    private static let avahi = "org.freedesktop.Avahi"
    private static let browserInterface = "org.freedesktop.Avahi.ServiceBrowser"

    /// Browses for `catalogID`'s peers until Avahi has reported what it knows and each record is
    /// resolved (sooner once a peer is found among what Avahi knew already), or ``timeout`` seconds pass.
    /// - Throws: ``PeerDiscoveryError``: no bus, no Avahi, a refusal, no answer in time, bytes
    ///   that are not an answer.
    public func discover(catalogID: String) throws(PeerDiscoveryError) -> Report {
        let deadline = ContinuousClock.now + .milliseconds(Int64(timeout * 1000))
        guard let connection = BusConnection.systemBus(path: socketPath, timeout: timeout) else {
            throw PeerDiscoveryError(.busUnavailable, "No system D-Bus at '\(socketPath)' (or it refused this user), so peers cannot be found; name peers explicitly, or start dbus and avahi-daemon.")
        }
        defer { connection.close() }
        let match = "type='signal',sender='\(Self.avahi)',interface='\(Self.browserInterface)'"
        let addMatch = DBusMessage.methodCall(serial: 2, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                              member: "AddMatch", destination: "org.freedesktop.DBus", arguments: [.string(match)])
        let browse = DBusMessage.methodCall(serial: 3, path: "/", interface: "\(Self.avahi).Server", member: "ServiceBrowserNew",
                                            destination: Self.avahi,
                                            arguments: [.int32(-1), .int32(-1), .string(DiscoveredService.serviceType), .string(""), .uint32(0)])
        guard connection.send(addMatch + browse) else {
            throw PeerDiscoveryError(.busUnavailable, "The system D-Bus closed the connection; peers cannot be found.")
        }
        var conversation = Conversation(catalogID: catalogID, maximumPeers: maximumPeers)
        while !conversation.isDone {
            let left = ContinuousClock.now.duration(to: deadline)
            guard left > .zero else { break }
            connection.setTimeout(Double(left.components.seconds) + Double(left.components.attoseconds) / 1e18)
            guard let message = DBusMessage.read(from: connection) else { break }
            for call in try conversation.take(message) {
                guard connection.send(call) else { break }
            }
        }
        guard conversation.browser != nil else {
            throw PeerDiscoveryError(.timedOut, "Avahi did not answer within \(timeout) s; peers cannot be found.")
        }
        return conversation.report
    }

    /// The browse as a state machine over the bus's messages: pure, so it can be fed bytes in tests.
    struct Conversation {
        let catalogID: String
        let maximumPeers: Int
        var browser: String?
        var report = Report()
        /// Whether Avahi has reported every service already in its cache (`CacheExhausted`).
        var cacheExhausted = false
        /// `ItemNew` signals that came before the browser's path was known (Avahi may report
        /// cached services at once).
        var early: [DBusMessage] = []
        var resolving: [UInt32: Void] = [:]
        var asked: Set<String> = []
        var nextSerial: UInt32 = 4

        init(catalogID: String, maximumPeers: Int) {
            self.catalogID = catalogID
            self.maximumPeers = maximumPeers
        }

        /// Whether to stop: enough peers; or nothing left to resolve and Avahi has heard from the
        /// network (`AllForNow`), or has reported its cache and a peer is among it.
        var isDone: Bool {
            browser != nil && (report.peers.count >= maximumPeers
                || (resolving.isEmpty && (report.complete || (cacheExhausted && !report.peers.isEmpty))))
        }

        /// Takes one message; returns the calls to send.
        mutating func take(_ message: DBusMessage) throws(PeerDiscoveryError) -> [[UInt8]] {
            switch (message.type, message.replySerial) {
            case (DBusMessage.error, 2?):
                throw PeerDiscoveryError(.busUnavailable, "The system D-Bus refused to deliver Avahi's signals (\(message.errorName ?? "no error name")).")
            case (DBusMessage.error, 3?):
                throw PeerDiscoveryError.refused(message.errorName, doing: "found")
            case (DBusMessage.methodReturn, 3?):
                var arguments = message.arguments
                guard message.signature == "o", let path = arguments.string() else {
                    throw PeerDiscoveryError(.malformedReply, "Avahi's answer to ServiceBrowserNew is not an object path.")
                }
                browser = path
                let waiting = early
                early = []
                var calls: [[UInt8]] = []
                for signal in waiting { calls += try take(signal) }
                return calls
            case (DBusMessage.signal, _) where message.interface == PeerDiscovery.browserInterface:
                guard let browser else {
                    if early.count < 4 * maximumPeers { early.append(message) }
                    return []
                }
                guard message.path == browser else { return [] }
                switch message.member {
                case "AllForNow":
                    report.complete = true
                case "CacheExhausted":
                    cacheExhausted = true
                case "ItemNew":
                    return resolve(message).map { [$0] } ?? []
                case "Failure":
                    var arguments = message.arguments
                    throw PeerDiscoveryError(.avahiRefused, "Avahi's browse failed: \(arguments.string() ?? "no reason given").")
                default:
                    break
                }
            case (DBusMessage.methodReturn, let serial?) where resolving[serial] != nil:
                resolving[serial] = nil
                if let service = Self.service(fromResolved: message) { judge(service) }
            case (DBusMessage.error, let serial?) where resolving[serial] != nil:
                // A service that went away or did not answer its resolve: nothing to judge.
                resolving[serial] = nil
            default:
                break
            }
            return []
        }

        /// The `ResolveService` call for an `ItemNew`, unless the service was asked already or
        /// enough are being resolved.
        mutating func resolve(_ signal: DBusMessage) -> [UInt8]? {
            var arguments = signal.arguments
            guard signal.signature == "iisssu", let interface = arguments.int32(), let proto = arguments.int32(),
                  let name = arguments.string(), let type = arguments.string(), let domain = arguments.string(),
                  asked.count < 4 * maximumPeers, asked.insert("\(interface)/\(proto)/\(name)/\(type)/\(domain)").inserted else { return nil }
            defer { nextSerial += 1 }
            resolving[nextSerial] = ()
            return DBusMessage.methodCall(serial: nextSerial, path: "/", interface: "\(PeerDiscovery.avahi).Server", member: "ResolveService",
                                          destination: PeerDiscovery.avahi,
                                          arguments: [.int32(interface), .int32(proto), .string(name), .string(type), .string(domain),
                                                      .int32(-1), .uint32(0)])
        }

        /// A `ResolveService` answer (`iissssisqaayu`) as a service; `nil` for any other shape.
        static func service(fromResolved message: DBusMessage) -> DiscoveredService? {
            var arguments = message.arguments
            guard message.signature == "iissssisqaayu", arguments.int32() != nil, arguments.int32() != nil,
                  let name = arguments.string(), arguments.string() != nil, arguments.string() != nil,
                  let host = arguments.string(), arguments.int32() != nil, let address = arguments.string(),
                  let port = arguments.uint16(), let txt = arguments.byteArrays(), let flags = arguments.uint32() else { return nil }
            return DiscoveredService(name: name, host: host, address: address, port: port,
                                     txt: DiscoveredService.txtEntries(txt), flags: flags)
        }

        mutating func judge(_ service: DiscoveredService) {
            switch service.verdict(catalogID: catalogID) {
            case .peer(let url):
                if !report.peers.contains(url), report.peers.count < maximumPeers { report.peers.append(url) }
            case .ignored(let reason):
                if report.ignored.count < 4 * maximumPeers { report.ignored.append((service, reason)) }
            }
        }
    }
}

extension PeerDiscovery {
    /// Avahi's answer to `ResolveService` read from its wire form and judged for `catalogID`, as a
    /// browse does; `nil` when the bytes hold no such answer. For the `dbus-reply` fuzz target,
    /// which feeds it untrusted bytes.
    package static func verdict(inResolveReply bytes: [UInt8], catalogID: String) -> DiscoveredService.Verdict? {
        guard let message = DBusMessage.read(from: BusBytes(bytes)),
              let service = Conversation.service(fromResolved: message) else { return nil }
        return service.verdict(catalogID: catalogID)
    }
}
