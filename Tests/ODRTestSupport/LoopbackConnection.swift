#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// One TCP connection to 127.0.0.1, with blocking POSIX calls: the raw client a test needs to
/// misbehave as no HTTP library does (send bytes as they are, read a few and then never again).
///
/// Its calls block: run them on a thread of their own (``onThread(_:)``), never on the
/// cooperative pool that an in-process server needs to answer.
///
/// ```swift
/// let connection = try LoopbackConnection(port: server.port, receiveBufferBytes: 4096)
/// try connection.send("GET /big.bin HTTP/1.1\r\nHost: x\r\n\r\n")
/// _ = try connection.receive(upTo: 100)  // then never read again: the server's writes fill up
/// ```
public final class LoopbackConnection: Sendable {
    private let descriptor: Int32

    /// Connects to 127.0.0.1:`port`.
    ///
    /// - Parameters:
    ///   - receiveBufferBytes: the socket's receive buffer (`SO_RCVBUF`, set before the
    ///     connection, which turns off the kernel's growing of it), so a client that stops reading
    ///     holds up the server's writes after few bytes; `nil` keeps the system's default.
    ///   - source: the last byte of the loopback address to connect from (127.0.0.`source`), to
    ///     look like another device to the server; `nil` lets the system choose (127.0.0.1).
    public init(port: Int, receiveBufferBytes: Int? = nil, source: UInt8? = nil) throws {
        #if canImport(Glibc)
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        #else
        let descriptor = socket(AF_INET, SOCK_STREAM, 0)
        #endif
        guard descriptor >= 0 else { throw SocketError(description: "socket: errno \(errno)") }
        if var bytes = receiveBufferBytes.map(Int32.init(clamping:)),
           setsockopt(descriptor, SOL_SOCKET, SO_RCVBUF, &bytes, socklen_t(MemoryLayout<Int32>.size)) != 0 {
            close(descriptor)
            throw SocketError(description: "setsockopt SO_RCVBUF: errno \(errno)")
        }
        if let source {
            var local = sockaddr_in()
            local.sin_family = sa_family_t(AF_INET)
            local.sin_addr.s_addr = in_addr_t((UInt32(0x7F00_0000) | UInt32(source)).bigEndian)
            let bound = withUnsafePointer(to: &local) {
                $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
            }
            guard bound == 0 else {
                let number = errno
                close(descriptor)
                throw SocketError(description: "bind to 127.0.0.\(source): errno \(number)", errorNumber: number)
            }
        }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = in_port_t(UInt16(clamping: port).bigEndian)
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        let connected = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard connected == 0 else {
            let number = errno
            close(descriptor)
            throw SocketError(description: "connect to 127.0.0.1:\(port): errno \(number)", errorNumber: number)
        }
        self.descriptor = descriptor
    }

    deinit { close(descriptor) }

    /// Whether 127.0.0.1:`port` accepts a connection now (which is closed at once).
    public static func canConnect(port: Int) -> Bool {
        (try? LoopbackConnection(port: port)) != nil
    }

    /// Sends all of `text` as UTF-8.
    public func send(_ text: String) throws {
        let bytes = Array(text.utf8)
        var written = 0
        while written < bytes.count {
            let result = bytes[written...].withUnsafeBytes { sendBytes(descriptor, $0.baseAddress, $0.count) }
            if result < 0, errno == EINTR { continue }
            guard result > 0 else { throw SocketError(description: "send: errno \(errno)", errorNumber: errno) }
            written += result
        }
    }

    /// Waits for bytes and returns what one `recv` gives, at most `count`; empty once the peer
    /// has closed the connection.
    public func receive(upTo count: Int) throws -> Data {
        var buffer = [UInt8](repeating: 0, count: max(1, count))
        while true {
            let result = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
            if result < 0, errno == EINTR { continue }
            guard result >= 0 else { throw SocketError(description: "recv: errno \(errno)", errorNumber: errno) }
            return Data(buffer[0..<result])
        }
    }

    /// Whether the server has closed (or reset) the connection, without waiting: nothing sent by
    /// it is read.
    public var isClosedByPeer: Bool {
        var byte: UInt8 = 0
        let result = recv(descriptor, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT))
        return result == 0 || (result < 0 && errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR)
    }

    /// Reads until the peer closes the connection (or resets it) and returns the bytes read.
    public func receiveUntilClosed() throws -> Data {
        var all = Data()
        while true {
            let chunk: Data
            do {
                chunk = try receive(upTo: 1 << 20)
            } catch let error as SocketError where error.errorNumber == ECONNRESET {
                return all
            }
            if chunk.isEmpty { return all }
            all += chunk
        }
    }

    /// Runs `work` (blocking socket calls) on a thread of its own and returns its result.
    public static func onThread<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try work() }) }.start()
        }
    }
}

/// `send(2)` without SIGPIPE; a free function, since ``LoopbackConnection/send(_:)`` hides the C one.
private func sendBytes(_ descriptor: Int32, _ bytes: UnsafeRawPointer?, _ count: Int) -> Int {
    send(descriptor, bytes, count, Int32(MSG_NOSIGNAL))
}

/// A socket call of a test's raw client failed.
public struct SocketError: Error, CustomStringConvertible {
    public var description: String
    /// `errno` of the failed call, when there is one.
    public var errorNumber: Int32?

    public init(description: String, errorNumber: Int32? = nil) {
        self.description = description
        self.errorNumber = errorNumber
    }
}
