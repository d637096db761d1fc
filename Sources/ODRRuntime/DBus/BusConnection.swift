#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

#if canImport(Glibc)
import Glibc
#endif

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
        setTimeout(timeout)
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

    /// A connection to the system bus at `path`, authenticated as the calling user (`EXTERNAL`),
    /// that has sent `Hello` as serial 1 (its reply is among the first messages read); `nil` when
    /// the bus cannot be reached or refuses.
    static func systemBus(path: String, timeout: Double) -> BusConnection? {
        guard let connection = BusConnection(path: path, timeout: timeout) else { return nil }
        // Authentication: a NUL byte, then AUTH EXTERNAL with the uid's decimal digits in hex.
        let uid = ContentHash.hex(String(getuid()).utf8)
        let hello = DBusMessage.methodCall(serial: 1, path: "/org/freedesktop/DBus", interface: "org.freedesktop.DBus",
                                           member: "Hello", destination: "org.freedesktop.DBus", arguments: [])
        guard connection.send(Array("\u{0}AUTH EXTERNAL \(uid)\r\n".utf8)),
              let answer = connection.readLine(maximum: 512), answer.hasPrefix("OK "),
              connection.send(Array("BEGIN\r\n".utf8)), connection.send(hello) else {
            connection.close()
            return nil
        }
        return connection
    }

    /// The path of the first `unix:path=` address in a D-Bus address list (such as
    /// `DBUS_SYSTEM_BUS_ADDRESS`), else the system bus's usual `/run/dbus/system_bus_socket`.
    static func systemBusPath(_ address: String?) -> String {
        for entry in (address ?? "").split(separator: ";") where entry.hasPrefix("unix:") {
            for key in entry.dropFirst(5).split(separator: ",") where key.hasPrefix("path=") {
                return String(key.dropFirst(5))
            }
        }
        return "/run/dbus/system_bus_socket"
    }

    /// The system bus's socket path from this process's `DBUS_SYSTEM_BUS_ADDRESS`.
    static var systemBusPathFromEnvironment: String {
        systemBusPath(ProcessInfo.processInfo.environment["DBUS_SYSTEM_BUS_ADDRESS"])
    }

    /// Sets the most seconds each later send and read may wait (clamped to 1 ms ... 60 s).
    func setTimeout(_ timeout: Double) {
        let seconds = max(0.001, min(timeout.isFinite ? timeout : 60, 60))
        var time = timeval(tv_sec: Int(seconds), tv_usec: Int((seconds - seconds.rounded(.down)) * 1_000_000))
        setsockopt(descriptor, SOL_SOCKET, SO_RCVTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
        setsockopt(descriptor, SOL_SOCKET, SO_SNDTIMEO, &time, socklen_t(MemoryLayout<timeval>.size))
    }

    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
    }

    /// Ends the connection both ways without closing the descriptor: a thread blocked reading it
    /// wakes (and reads the end), and the bus sees the client leave. Safe from another thread
    /// while the descriptor is open.
    func shutdown() {
        if descriptor >= 0 { _ = Glibc.shutdown(descriptor, Int32(SHUT_RDWR)) }
    }

    /// Whether bytes can be read now: some are buffered, or the socket has some (or has ended)
    /// within `milliseconds`.
    func waitUntilReadable(milliseconds: Int32) -> Bool {
        guard buffer.isEmpty else { return true }
        var entry = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
        return poll(&entry, 1, milliseconds) > 0
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
