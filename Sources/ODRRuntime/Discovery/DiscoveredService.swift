#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif

/// One `_odr._tcp` service as Avahi resolved it: untrusted facts from the LAN, judged by
/// ``verdict(catalogID:)`` before it becomes a peer.
public struct DiscoveredService: Sendable, Equatable {
    /// The DNS-SD instance name.
    public var name: String
    /// The host name it announced.
    public var host: String
    /// The resolved address, as text.
    public var address: String
    public var port: UInt16
    /// The TXT record's `key=value` entries (keys lowercased; the first of a key wins).
    public var txt: [String: String]
    /// Avahi's lookup result flags (`AVAHI_LOOKUP_RESULT_*`).
    public var flags: UInt32

    public init(name: String, host: String, address: String, port: UInt16, txt: [String: String], flags: UInt32) {
        self.name = name
        self.host = host
        self.address = address
        self.port = port
        self.txt = txt
        self.flags = flags
    }

    /// The DNS-SD service type peers announce and browse.
    public static let serviceType = "_odr._tcp"
    /// The TXT key that carries the catalog id.
    public static let catalogKey = "catalog"

    /// Avahi's `AVAHI_LOOKUP_RESULT_LOCAL` (8) and `AVAHI_LOOKUP_RESULT_OUR_OWN` (16): the record
    /// comes from this machine.
    public var isFromThisMachine: Bool { flags & (8 | 16) != 0 }

    /// Why a record does not become a peer.
    public enum Rejection: String, Sendable, Equatable, CustomStringConvertible {
        /// The TXT record names another catalog: a peer of another game.
        case otherCatalog = "other-catalog"
        /// The TXT record names no catalog.
        case noCatalog = "no-catalog"
        /// A loopback address (127/8, ::1) in a record of another machine: it would point this
        /// device at itself, or be a probe of its local services.
        case loopbackOfAnotherMachine = "loopback-of-another-machine"
        /// Not an IPv4 or IPv6 address a peer can have (unspecified, multicast, IPv6 link-local
        /// without a scope), or no address at all.
        case unusableAddress = "unusable-address"
        /// Port 0.
        case unusablePort = "unusable-port"

        public var description: String { rawValue }
    }

    /// What to do with the record for a device that wants `catalogID`.
    public enum Verdict: Sendable, Equatable {
        case peer(URL)
        case ignored(Rejection)
    }

    /// A peer URL when the record names `catalogID` and a usable address and port.
    public func verdict(catalogID: String) -> Verdict {
        guard let announced = txt[Self.catalogKey] else { return .ignored(.noCatalog) }
        guard announced == catalogID else { return .ignored(.otherCatalog) }
        guard port != 0 else { return .ignored(.unusablePort) }
        switch Self.classify(address) {
        case .none, .unusable?: return .ignored(.unusableAddress)
        case .loopback? where !isFromThisMachine: return .ignored(.loopbackOfAnotherMachine)
        case .loopback?, .ipv4?:
            return URL(string: "http://\(address):\(port)/").map(Verdict.peer) ?? .ignored(.unusableAddress)
        case .ipv6?:
            return URL(string: "http://[\(address)]:\(port)/").map(Verdict.peer) ?? .ignored(.unusableAddress)
        }
    }

    enum AddressKind { case ipv4, ipv6, loopback, unusable }

    /// What kind of address `text` is; `nil` when it is not an IPv4 or IPv6 address.
    static func classify(_ text: String) -> AddressKind? {
        var v4 = in_addr()
        if inet_pton(AF_INET, text, &v4) == 1 {
            let bytes = withUnsafeBytes(of: &v4) { Array($0) }
            if bytes[0] == 127 { return .loopback }
            if bytes == [0, 0, 0, 0] || bytes[0] >= 224 { return .unusable }
            return .ipv4
        }
        var v6 = in6_addr()
        guard inet_pton(AF_INET6, text, &v6) == 1 else { return nil }
        let bytes = withUnsafeBytes(of: &v6) { Array($0) }
        if bytes == [UInt8](repeating: 0, count: 15) + [1] { return .loopback }
        // An IPv4-mapped address (::ffff:a.b.c.d) is judged as its IPv4 address.
        if bytes[0..<10].allSatisfy({ $0 == 0 }), bytes[10] == 0xFF, bytes[11] == 0xFF {
            return classify(bytes[12...].map(String.init).joined(separator: "."))
        }
        if bytes.allSatisfy({ $0 == 0 }) || bytes[0] == 0xFF || (bytes[0] == 0xFE && bytes[1] & 0xC0 == 0x80) { return .unusable }
        return .ipv6
    }

    /// A TXT record's entries as `key=value` (an entry without `=` is a key with an empty value;
    /// keys lowercased, the first of a key kept, entries that are not UTF-8 skipped).
    static func txtEntries(_ entries: [[UInt8]]) -> [String: String] {
        var result: [String: String] = [:]
        for entry in entries {
            guard let text = String(validating: entry, as: UTF8.self) else { continue }
            let rawKey = text.prefix { $0 != "=" }
            let key = rawKey.lowercased()
            guard !key.isEmpty, result[key] == nil else { continue }
            result[key] = rawKey.endIndex < text.endIndex ? String(text[text.index(after: rawKey.endIndex)...]) : ""
        }
        return result
    }
}
