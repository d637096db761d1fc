#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// Sends one raw HTTP/1.1 request to 127.0.0.1:`port` and returns every chunk `read` returned
/// until the server closed the connection, so a test can see how the bytes arrived.
///
/// Runs on its own thread: blocking reads must not hold a thread of the cooperative pool that the
/// in-process server needs to answer.
///
/// With `readingResponse` false, closes the connection right after sending, as a client that
/// gives up does, and returns no chunks.
func rawExchange(port: Int, request: String, readingResponse: Bool = true) async throws -> [Data] {
    try await withCheckedThrowingContinuation { continuation in
        let thread = Thread {
            continuation.resume(with: Result {
                try blockingExchange(port: port, request: request, readingResponse: readingResponse)
            })
        }
        thread.start()
    }
}

struct SocketError: Error, CustomStringConvertible {
    var description: String
}

private func blockingExchange(port: Int, request: String, readingResponse: Bool) throws -> [Data] {
    #if canImport(Glibc)
    let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
    #else
    let descriptor = socket(AF_INET, SOCK_STREAM, 0)
    #endif
    guard descriptor >= 0 else { throw SocketError(description: "socket: \(errno)") }
    defer { close(descriptor) }
    var address = sockaddr_in()
    address.sin_family = sa_family_t(AF_INET)
    address.sin_port = in_port_t(UInt16(port).bigEndian)
    address.sin_addr.s_addr = inet_addr("127.0.0.1")
    let connected = withUnsafePointer(to: &address) {
        $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
            connect(descriptor, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
        }
    }
    guard connected == 0 else { throw SocketError(description: "connect: \(errno)") }
    let bytes = Array(request.utf8)
    var written = 0
    while written < bytes.count {
        let result = bytes[written...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, 0) }
        guard result > 0 else { throw SocketError(description: "send: \(errno)") }
        written += result
    }
    guard readingResponse else { return [] }
    var chunks: [Data] = []
    var buffer = [UInt8](repeating: 0, count: 1 << 20)
    while true {
        let count = buffer.withUnsafeMutableBytes { recv(descriptor, $0.baseAddress, $0.count, 0) }
        if count < 0 { throw SocketError(description: "recv: \(errno)") }
        if count == 0 { return chunks }
        chunks.append(Data(buffer[0..<count]))
    }
}
