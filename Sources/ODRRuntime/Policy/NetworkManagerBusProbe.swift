#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

/// The default probe: asks NetworkManager over the system D-Bus whether the primary connection is
/// metered, without starting a process and without a D-Bus library.
///
/// It connects to the system bus socket, authenticates as the calling user (`EXTERNAL`), and makes
/// one call, `org.freedesktop.DBus.Properties.Get("org.freedesktop.NetworkManager", "Metered")` on
/// `/org/freedesktop/NetworkManager`, reading the answer with ``condition(ofMetered:)``. Anything
/// else (no bus, as in most containers; no NetworkManager; a timeout; an error or an answer it
/// cannot read) counts as ``NetworkCondition/unmetered``: a machine that cannot tell is never kept
/// from downloading. It never reports ``NetworkCondition/offline``. What the bus sends is read as
/// untrusted bytes: every length is checked against the 64 KiB a message may take here.
public struct NetworkManagerBusProbe: NetworkConditionProbe {
    /// The bus socket's path.
    public var socketPath: String
    /// The most seconds to wait for the bus at each step (connect, send, each read).
    public var timeout: Double

    /// A probe of the bus at `socketPath`; by default the `unix:path=` of `DBUS_SYSTEM_BUS_ADDRESS`,
    /// else `/run/dbus/system_bus_socket`.
    public init(socketPath: String? = nil, timeout: Double = 1) {
        self.socketPath = socketPath ?? BusConnection.systemBusPathFromEnvironment
        self.timeout = timeout
    }

    /// Asks NetworkManager; ``NetworkCondition/unmetered`` when that fails.
    public func currentCondition() -> NetworkCondition {
        guard let metered = askMetered() else { return .unmetered }
        return Self.condition(ofMetered: metered)
    }

    /// NetworkManager's `NMMetered`: 1 (yes) and 3 (guess-yes) are metered; 0 (unknown), 2 (no),
    /// 4 (guess-no) and values it may add later are not.
    public static func condition(ofMetered value: UInt32) -> NetworkCondition {
        value == 1 || value == 3 ? .metered : .unmetered
    }

    /// The path of the first `unix:path=` address in a D-Bus address list, else the default.
    static func systemBusPath(_ address: String?) -> String { BusConnection.systemBusPath(address) }

    // MARK: The conversation

    /// The `Metered` property, or `nil` when any step fails.
    func askMetered() -> UInt32? {
        guard let connection = BusConnection.systemBus(path: socketPath, timeout: timeout) else { return nil }
        defer { connection.close() }
        let get = DBusMessage.methodCall(serial: 2, path: "/org/freedesktop/NetworkManager",
                                         interface: "org.freedesktop.DBus.Properties", member: "Get",
                                         destination: "org.freedesktop.NetworkManager",
                                         arguments: [.string("org.freedesktop.NetworkManager"), .string("Metered")])
        guard connection.send(get) else { return nil }
        return Self.meteredValue(from: connection)
    }

    /// The `u` that answers the `Get` call (serial 2) among the bus's next messages: the Hello
    /// reply and the NameAcquired signal come first, and a few more are tolerated. `nil` for an
    /// error reply, another signature, or bytes that are not messages.
    static func meteredValue(from source: some BusByteSource) -> UInt32? {
        for _ in 0..<8 {
            guard let message = DBusMessage.read(from: source) else { return nil }
            guard message.replySerial == 2 else { continue }
            guard message.type == DBusMessage.methodReturn, message.signature == "v" else { return nil }
            return message.variantUInt32()
        }
        return nil
    }

    /// ``meteredValue(from:)`` of bytes in memory, as the bus would send them after `BEGIN`: the
    /// fuzz target `dbus-reply` and its replay in `make test` read them through the same parser.
    package static func meteredValue(inReplies bytes: [UInt8]) -> UInt32? {
        meteredValue(from: BusBytes(bytes))
    }
}
