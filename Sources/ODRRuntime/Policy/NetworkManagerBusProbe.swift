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
        self.socketPath = socketPath ?? Self.systemBusPath(ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"])
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
    static func systemBusPath(_ address: String?) -> String {
        for entry in (address ?? "").split(separator: ";") where entry.hasPrefix("unix:") {
            for key in entry.dropFirst(5).split(separator: ",") where key.hasPrefix("path=") {
                return String(key.dropFirst(5))
            }
        }
        return "/run/dbus/system_bus_socket"
    }

    // MARK: The conversation

    /// The `Metered` property, or `nil` when any step fails.
    func askMetered() -> UInt32? {
        guard let connection = BusConnection(path: socketPath, timeout: timeout) else { return nil }
        defer { connection.close() }
        // Authentication: a NUL byte, then AUTH EXTERNAL with the uid's decimal digits in hex.
        let uid = ContentHash.hex(String(getuid()).utf8)
        guard connection.send(Array("\u{0}AUTH EXTERNAL \(uid)\r\n".utf8)),
              let answer = connection.readLine(maximum: 512), answer.hasPrefix("OK "),
              connection.send(Array("BEGIN\r\n".utf8)) else { return nil }
        let hello = DBusMessage.methodCall(serial: 1, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                           member: "Hello", destination: "org.freedesktop.DBus", arguments: [])
        let get = DBusMessage.methodCall(serial: 2, path: "/org/freedesktop/NetworkManager",
                                         interface: "org.freedesktop.DBus.Properties", member: "Get",
                                         destination: "org.freedesktop.NetworkManager",
                                         arguments: ["org.freedesktop.NetworkManager", "Metered"])
        guard connection.send(hello + get) else { return nil }
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

/// Where the bus's bytes come from: the socket, or bytes in memory.
protocol BusByteSource: AnyObject {
    /// The next `count` bytes, or `nil` when there are not that many.
    func read(_ count: Int) -> [UInt8]?
}

/// Bytes in memory as a ``BusByteSource``.
final class BusBytes: BusByteSource {
    private let bytes: [UInt8]
    private var position = 0

    init(_ bytes: [UInt8]) { self.bytes = bytes }

    func read(_ count: Int) -> [UInt8]? {
        guard count >= 0, bytes.count - position >= count else { return nil }
        defer { position += count }
        return Array(bytes[position..<(position + count)])
    }
}

/// A blocking connection to a Unix socket with a timeout on every step.
final class BusConnection: BusByteSource {
    private var descriptor: Int32
    private var buffer: [UInt8] = []

    init?(path: String, timeout: Double) {
        var address = sockaddr_un()
        let bytes = Array(path.utf8)
        guard !bytes.isEmpty, bytes.count < MemoryLayout.size(ofValue: address.sun_path) else { return nil }
        descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue) | Int32(SOCK_CLOEXEC.rawValue), 0)
        guard descriptor >= 0 else { return nil }
        let seconds = max(0.001, min(timeout, 60))
        var time = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { path in
            path.copyBytes(from: bytes)
            path[bytes.count] = 0
        }
        let connected = withUnsafePointer(to: &address) { pointer in
            pointer.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size))
            }
        }
        guard connected == 0 else {
            Glibc.close(descriptor)
            return nil
        }
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Sends every byte; never raises SIGPIPE.
    func send(_ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let count = bytes[sent...].withUnsafeBytes { Glibc.send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard count > 0 else { return false }
            sent += count
        }
        return true
    }

    /// Reads until the buffer holds at least `count` bytes; false on end, error or timeout.
    private func fill(_ count: Int) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 4096)
        while buffer.count < count {
            let received = chunk.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            guard received > 0 else { return false }
            buffer += chunk[0..<received]
        }
        return true
    }

    /// The next `count` bytes.
    func read(_ count: Int) -> [UInt8]? {
        guard count >= 0, fill(count) else { return nil }
        defer { buffer.removeFirst(count) }
        return Array(buffer[0..<count])
    }

    /// A line ending in CR LF, without them, of at most `maximum` bytes.
    func readLine(maximum: Int) -> String? {
        while true {
            if let end = buffer.firstIndex(of: 0x0A) {
                guard end > 0, buffer[end - 1] == 0x0D else { return nil }
                let line = String(decoding: buffer[0..<(end - 1)], as: UTF8.self)
                buffer.removeFirst(end + 1)
                return line
            }
            guard buffer.count < maximum, fill(buffer.count + 1) else { return nil }
        }
    }
}

/// The few D-Bus messages the probe writes and reads (the D-Bus specification's wire format).
package struct DBusMessage {
    static let methodCallType: UInt8 = 1
    package static let methodReturn: UInt8 = 2
    package static let error: UInt8 = 3
    package static let signal: UInt8 = 4
    /// The most bytes a message's header fields or body may take here: NetworkManager's answers
    /// take well under 200.
    static let maximumPart = 64 << 10

    var type: UInt8
    var replySerial: UInt32?
    var signature = ""
    var body: [UInt8] = []
    var bigEndian = false

    /// A header field's or an argument's value.
    package enum Value {
        case string(String), objectPath(String), signature(String), uint32(UInt32)
        /// A variant holding a `u`.
        case variantUInt32(UInt32)
    }

    /// A method call with string arguments.
    static func methodCall(serial: UInt32, path: String, interface: String, member: String, destination: String,
                           arguments: [String]) -> [UInt8] {
        var fields: [(UInt8, Value)] = [(1, .objectPath(path)), (2, .string(interface)), (3, .string(member)), (6, .string(destination))]
        if !arguments.isEmpty { fields.append((8, .signature(String(repeating: "s", count: arguments.count)))) }
        return encode(type: methodCallType, flags: 0, serial: serial, fields: fields, body: arguments.map { .string($0) })
    }

    /// A little-endian message.
    package static func encode(type: UInt8, flags: UInt8, serial: UInt32, fields: [(UInt8, Value)], body: [Value]) -> [UInt8] {
        var bodyBytes = Writer()
        for value in body { bodyBytes.append(value) }
        // The fields start at offset 16, a multiple of 8, so aligning within them aligns in the message.
        var fieldBytes = Writer()
        for (code, value) in fields {
            fieldBytes.align(8)
            fieldBytes.bytes.append(code)
            fieldBytes.append(.signature(value.signature))
            fieldBytes.append(value)
        }
        var message = Writer()
        message.bytes += [UInt8(ascii: "l"), type, flags, 1]
        message.uint32(UInt32(bodyBytes.bytes.count))
        message.uint32(serial)
        message.uint32(UInt32(fieldBytes.bytes.count))
        message.bytes += fieldBytes.bytes
        message.align(8)
        return message.bytes + bodyBytes.bytes
    }

    /// Reads one message; `nil` when the connection ends or the bytes are not a message this
    /// reader accepts (an endianness flag other than `l`/`B`, a part over ``maximumPart``, a header
    /// field it cannot skip).
    static func read(from connection: some BusByteSource) -> DBusMessage? {
        guard let head = connection.read(16), head[0] == UInt8(ascii: "l") || head[0] == UInt8(ascii: "B") else { return nil }
        var header = Reader(bytes: head, bigEndian: head[0] == UInt8(ascii: "B"))
        header.position = 4
        guard let bodyLength = header.uint32(), header.uint32() != nil, let fieldsLength = header.uint32(),
              bodyLength <= maximumPart, fieldsLength <= maximumPart else { return nil }
        // Both at most 64 KiB, so the sum cannot overflow.
        let paddedFields = (Int(fieldsLength) + 7) / 8 * 8
        guard let rest = connection.read(paddedFields + Int(bodyLength)) else { return nil }
        var message = DBusMessage(type: head[1], bigEndian: header.bigEndian)
        var fields = Reader(bytes: Array(rest[0..<Int(fieldsLength)]), bigEndian: header.bigEndian)
        while !fields.atEnd {
            guard fields.align(8), let code = fields.byte(), let signature = fields.signature() else { return nil }
            switch signature {
            case "s", "o":
                guard fields.string() != nil else { return nil }
            case "g":
                guard let value = fields.signature() else { return nil }
                if code == 8 { message.signature = value }
            case "u":
                guard let value = fields.uint32() else { return nil }
                if code == 5 { message.replySerial = value }
            default:
                return nil
            }
        }
        message.body = Array(rest[paddedFields...])
        return message
    }

    /// The body's `v` when it holds a `u`.
    func variantUInt32() -> UInt32? {
        var reader = Reader(bytes: body, bigEndian: bigEndian)
        guard reader.signature() == "u" else { return nil }
        return reader.uint32()
    }

    /// Appends values with D-Bus alignment (little-endian).
    struct Writer {
        var bytes: [UInt8] = []

        mutating func align(_ boundary: Int) {
            while bytes.count % boundary != 0 { bytes.append(0) }
        }

        mutating func uint32(_ value: UInt32) {
            align(4)
            withUnsafeBytes(of: value.littleEndian) { bytes += $0 }
        }

        mutating func append(_ value: Value) {
            switch value {
            case .string(let text), .objectPath(let text):
                let utf8 = Array(text.utf8)
                uint32(UInt32(utf8.count))
                bytes += utf8 + [0]
            case .signature(let text):
                let utf8 = Array(text.utf8)
                bytes += [UInt8(utf8.count)] + utf8 + [0]
            case .uint32(let number):
                uint32(number)
            case .variantUInt32(let number):
                append(.signature("u"))
                uint32(number)
            }
        }
    }

    /// Reads values with D-Bus alignment; every read checks the bytes left.
    struct Reader {
        let bytes: [UInt8]
        let bigEndian: Bool
        var position = 0

        var atEnd: Bool { position >= bytes.count }

        mutating func align(_ boundary: Int) -> Bool {
            let aligned = (position + boundary - 1) / boundary * boundary
            guard aligned <= bytes.count else { return false }
            position = aligned
            return true
        }

        mutating func byte() -> UInt8? {
            guard position < bytes.count else { return nil }
            defer { position += 1 }
            return bytes[position]
        }

        mutating func uint32() -> UInt32? {
            guard align(4), bytes.count - position >= 4 else { return nil }
            let value = bytes[position..<(position + 4)].reversed().reduce(UInt32(0)) { $0 << 8 | UInt32($1) }
            position += 4
            return bigEndian ? value.byteSwapped : value
        }

        /// `count` bytes and the NUL after them, as text.
        private mutating func text(_ count: Int) -> String? {
            guard count >= 0, bytes.count - position > count, bytes[position + count] == 0 else { return nil }
            defer { position += count + 1 }
            return String(decoding: bytes[position..<(position + count)], as: UTF8.self)
        }

        mutating func string() -> String? {
            guard let length = uint32() else { return nil }
            return text(Int(length))
        }

        mutating func signature() -> String? {
            guard let length = byte() else { return nil }
            return text(Int(length))
        }
    }
}

extension DBusMessage.Value {
    /// Its D-Bus type signature.
    var signature: String {
        switch self {
        case .string: "s"
        case .objectPath: "o"
        case .signature: "g"
        case .uint32: "u"
        case .variantUInt32: "v"
        }
    }
}
