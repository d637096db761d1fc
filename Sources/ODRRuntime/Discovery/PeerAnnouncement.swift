#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import ODRFormat

/// A DNS-SD announcement of a shared store (`_odr._tcp`, one service per catalog id, the id in the
/// TXT record as `catalog=<id>`), registered with Avahi over the system D-Bus. It lasts as long as
/// this object's bus connection: ``stop()`` (or the end of the process) withdraws it, since Avahi
/// removes what a client registered when the client leaves the bus.
///
/// What the LAN learns from it: that this machine shares odr content of these catalogs on this
/// port (docs/SECURITY.md, "Discovery").
public final class PeerAnnouncement: Sendable {
    private let connection: Locked<BusConnection?>
    /// The DNS-SD instance names registered, one per catalog id.
    public let names: [String]

    /// Announces `catalogIDs` shared on `port`.
    ///
    /// - Parameters:
    ///   - socketPath: the system bus's socket; by default from `DBUS_SYSTEM_BUS_ADDRESS`.
    ///   - timeout: the most seconds to wait for each answer (default 2).
    /// - Throws: ``PeerDiscoveryError``: no bus, no Avahi, a refusal (such as a name collision),
    ///   no answer, or a catalog id too long for a TXT record (247 bytes).
    public init(catalogIDs: [String], port: Int, socketPath: String? = nil, timeout: Double = 2) throws(PeerDiscoveryError) {
        guard let port = UInt16(exactly: port), port != 0 else {
            throw PeerDiscoveryError(.invalidRecord, "Port \(port) cannot be announced; give the port the share server listens on.")
        }
        let ids = catalogIDs.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        guard !ids.isEmpty else { throw PeerDiscoveryError(.invalidRecord, "There is no catalog to announce: the store holds none yet.") }
        for id in ids where id.utf8.count + DiscoveredService.catalogKey.utf8.count + 1 > 255 || id.isEmpty {
            throw PeerDiscoveryError(.invalidRecord, "The catalog id '\(id.prefix(40))…' does not fit in a DNS-SD TXT entry (255 bytes).")
        }
        let path = socketPath ?? BusConnection.systemBusPathFromEnvironment
        guard let connection = BusConnection.systemBus(path: path, timeout: timeout) else {
            throw PeerDiscoveryError(.busUnavailable, "No system D-Bus at '\(path)' (or it refused this user), so the store cannot be announced; start dbus and avahi-daemon, or give peers the URL.")
        }
        let base = Self.instanceName(port: port)
        names = ids.indices.map { ids.count == 1 ? base : "\(base) \($0 + 1)" }
        do throws(PeerDiscoveryError) {
            let group = try Self.call(connection, serial: 2, path: "/", interface: "org.freedesktop.Avahi.Server",
                                      member: "EntryGroupNew", arguments: [], expecting: "o")
            var groupArguments = group.arguments
            guard let groupPath = groupArguments.string() else {
                throw PeerDiscoveryError(.malformedReply, "Avahi's answer to EntryGroupNew is not an object path.")
            }
            var serial: UInt32 = 3
            for (id, name) in zip(ids, names) {
                let txt: [[UInt8]] = [Array("\(DiscoveredService.catalogKey)=\(id)".utf8)]
                _ = try Self.call(connection, serial: serial, path: groupPath, interface: "org.freedesktop.Avahi.EntryGroup", member: "AddService",
                                  arguments: [.int32(-1), .int32(-1), .uint32(0), .string(name), .string(DiscoveredService.serviceType),
                                              .string(""), .string(""), .uint16(port), .byteArrays(txt)], expecting: "")
                serial += 1
            }
            _ = try Self.call(connection, serial: serial, path: groupPath, interface: "org.freedesktop.Avahi.EntryGroup",
                              member: "Commit", arguments: [], expecting: "")
        } catch {
            connection.close()
            throw error
        }
        self.connection = Locked(connection)
    }

    deinit { stop() }

    /// Withdraws the announcement (closes the bus connection); calling it again does nothing.
    public func stop() {
        connection.withLock { connection in
            connection?.close()
            connection = nil
        }
    }

    /// `odr on <host>:<port>`, at most 63 bytes (a DNS label).
    static func instanceName(port: UInt16) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return String(decoding: Array("odr on \(host):\(port)".utf8.prefix(60)), as: UTF8.self)
    }

    /// Sends one call and reads until its answer; throws for an error reply or another signature.
    private static func call(_ connection: BusConnection, serial: UInt32, path: String, interface: String, member: String,
                             arguments: [DBusMessage.Value], expecting signature: String) throws(PeerDiscoveryError) -> DBusMessage {
        let call = DBusMessage.methodCall(serial: serial, path: path, interface: interface, member: member,
                                          destination: "org.freedesktop.Avahi", arguments: arguments)
        guard connection.send(call) else { throw PeerDiscoveryError(.busUnavailable, "The system D-Bus closed the connection.") }
        // The Hello reply, NameAcquired and other signals may come first; a few dozen are tolerated.
        for _ in 0..<64 {
            guard let message = DBusMessage.read(from: connection) else {
                throw PeerDiscoveryError(.timedOut, "Avahi did not answer \(member) in time.")
            }
            guard message.replySerial == serial else { continue }
            if message.type == DBusMessage.error { throw PeerDiscoveryError.refused(message.errorName, doing: "announced") }
            guard message.type == DBusMessage.methodReturn, message.signature == signature else {
                throw PeerDiscoveryError(.malformedReply, "Avahi's answer to \(member) has signature '\(message.signature)', not '\(signature)'.")
            }
            return message
        }
        throw PeerDiscoveryError(.malformedReply, "Avahi's answer to \(member) did not come among the next 64 messages.")
    }
}
