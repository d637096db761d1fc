#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif

/// A socket bound to the server's address but not listening: it keeps the port while the server is
/// offline, and a client connecting to it is refused (the kernel answers with a reset), exactly
/// as when no server runs at all.
///
/// Both this socket and the server's listener set `SO_REUSEADDR`, which lets the listener bind
/// again while the reservation still holds the port, so coming back online never loses it.
final class PortReservation: Sendable {
    private let descriptor: Int32
    /// The bound port (the one the kernel chose when asked for port 0).
    let port: Int

    /// Binds a non-listening socket to `host` and `port` (0 picks a free port).
    init(host: String, port: Int) throws(ServeError) {
        var hints = addrinfo()
        hints.ai_flags = AI_PASSIVE | AI_NUMERICSERV
        hints.ai_family = AF_UNSPEC
        #if canImport(Glibc)
        hints.ai_socktype = Int32(SOCK_STREAM.rawValue)
        #else
        hints.ai_socktype = SOCK_STREAM
        #endif
        var list: UnsafeMutablePointer<addrinfo>?
        let status = getaddrinfo(host, String(port), &hints, &list)
        guard status == 0, let first = list else {
            throw ServeError(.bindFailed, "Cannot resolve the host \(host): use an IP address such as 127.0.0.1.")
        }
        defer { freeaddrinfo(list) }
        let address = first.pointee
        let descriptor = socket(address.ai_family, address.ai_socktype, address.ai_protocol)
        guard descriptor >= 0 else {
            throw ServeError(.bindFailed, "Cannot create a socket: \(String(cString: strerror(errno))).")
        }
        var one: Int32 = 1
        _ = setsockopt(descriptor, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        guard bind(descriptor, address.ai_addr, address.ai_addrlen) == 0 else {
            let reason = String(cString: strerror(errno))
            close(descriptor)
            throw ServeError(.bindFailed, "Cannot reserve \(host):\(port) (\(reason)): choose another port.")
        }
        var storage = sockaddr_storage()
        var length = socklen_t(MemoryLayout<sockaddr_storage>.size)
        let named = withUnsafeMutablePointer(to: &storage) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(descriptor, $0, &length) }
        }
        guard named == 0 else {
            close(descriptor)
            throw ServeError(.bindFailed, "Cannot read the reserved port: \(String(cString: strerror(errno))).")
        }
        self.descriptor = descriptor
        let family = Int32(storage.ss_family)
        self.port = withUnsafePointer(to: &storage) { pointer in
            if family == AF_INET6 {
                pointer.withMemoryRebound(to: sockaddr_in6.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin6_port)) }
            } else {
                pointer.withMemoryRebound(to: sockaddr_in.self, capacity: 1) { Int(UInt16(bigEndian: $0.pointee.sin_port)) }
            }
        }
    }

    deinit {
        close(descriptor)
    }
}
