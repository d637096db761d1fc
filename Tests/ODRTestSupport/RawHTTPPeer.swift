import Foundation
import ODRFormat

/// A loopback TCP peer that answers every HTTP request with the same raw bytes, or with nothing:
/// the misbehaving servers a well-formed server cannot imitate (a response head of megabytes, a
/// server that accepts connections and then stays silent).
///
/// Each connection's request is read up to its blank line, then `response` is written and the
/// connection is held open (never closed by the peer) until ``stop()``, so a client sees exactly
/// what was sent and then silence.
///
/// ```swift
/// let peer = try RawHTTPPeer(response: Data())  // accepts, reads the request, says nothing
/// defer { peer.stop() }
/// _ = try await engine.download(TransferRequest(url: peer.url(for: "a.zip")), into: sink)
/// #expect(peer.requestCount == 1)
/// ```
///
/// A held peer (``init(heldAnswering:)``) is a slow but good one: it reads requests and answers
/// each with what its closure makes of the request head, but only once ``release()`` is called;
/// its connections then serve further requests at once.
public final class RawHTTPPeer: Sendable {
    public let port: Int
    private let listener: Int32
    /// A pipe whose write end wakes the serving thread to stop.
    private let wake: (read: Int32, write: Int32)
    private let state = Locked(State())
    private let stopped = DispatchSemaphore(value: 0)

    private struct State {
        var requests = 0
        var heads: [String] = []
    }

    /// Starts listening on a free loopback port.
    public convenience init(response: Data) throws {
        let bytes = [UInt8](response)
        try self.init(answer: { _ in bytes }, held: false)
    }

    /// Starts listening on a free loopback port; each request is answered with `answer(head)` (a
    /// whole response: status line, headers and body; the connection stays open for the next
    /// request) once ``release()`` was called.
    public convenience init(heldAnswering answer: @escaping @Sendable (_ head: String) -> Data) throws {
        try self.init(answer: { [UInt8](answer($0)) }, held: true)
    }

    private init(answer: @escaping @Sendable (String) -> [UInt8], held: Bool) throws {
        let descriptor = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard descriptor >= 0 else { throw ServerStartFailure(description: "socket() failed: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = 0
        address.sin_addr.s_addr = in_addr_t(UInt32(0x7F00_0001).bigEndian)
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { pointer in
                bind(descriptor, pointer, length) == 0 && listen(descriptor, 16) == 0
                    && getsockname(descriptor, pointer, &length) == 0
            }
        }
        var pipeEnds: [Int32] = [0, 0]
        guard bound, pipe(&pipeEnds) == 0 else {
            close(descriptor)
            throw ServerStartFailure(description: "could not listen on 127.0.0.1: errno \(errno)")
        }
        listener = descriptor
        port = Int(UInt16(bigEndian: address.sin_port))
        wake = (pipeEnds[0], pipeEnds[1])
        Thread { [self] in serve(answer, held: held) }.start()
    }

    /// Requests read so far (one per connection the client opened and sent a request on).
    public var requestCount: Int { state.withLock { $0.requests } }

    /// The request heads read so far (request line and headers, `\r\n`-separated), in order.
    public var requestHeads: [String] { state.withLock { $0.heads } }

    /// The URL of `path` on this peer.
    public func url(for path: String) -> URL {
        URL(string: "http://127.0.0.1:\(port)/\(path)") ?? URL(filePath: "/unreachable")
    }

    /// Closes every connection and the listener; waits for the serving thread to finish.
    public func stop() {
        var byte: UInt8 = 1
        _ = write(wake.write, &byte, 1)
        stopped.wait()
    }

    /// A held peer answers the requests it holds, and every later one at once.
    public func release() {
        var byte: UInt8 = 2
        _ = write(wake.write, &byte, 1)
    }

    private func serve(_ answer: @Sendable (String) -> [UInt8], held initiallyHeld: Bool) {
        // `waiting`: a held peer's request read and not answered yet.
        var connections: [(descriptor: Int32, request: [UInt8], answered: Bool, waiting: String?)] = []
        var held = initiallyHeld
        defer {
            for connection in connections { close(connection.descriptor) }
            close(listener)
            close(wake.read)
            close(wake.write)
            stopped.signal()
        }
        while true {
            var polled = [pollfd(fd: wake.read, events: Int16(POLLIN), revents: 0), pollfd(fd: listener, events: Int16(POLLIN), revents: 0)]
            polled += connections.map { pollfd(fd: $0.descriptor, events: Int16(POLLIN), revents: 0) }
            guard poll(&polled, nfds_t(polled.count), -1) >= 0 || errno == EINTR else { return }
            if polled[0].revents != 0 {
                var byte: UInt8 = 0
                guard read(wake.read, &byte, 1) == 1, byte == 2 else { return }
                held = false
                for index in connections.indices {
                    guard let head = connections[index].waiting else { continue }
                    connections[index].waiting = nil
                    writeAll(answer(head), to: connections[index].descriptor)
                }
                continue
            }
            var hungUp: Set<Int> = []
            for index in connections.indices where polled[index + 2].revents != 0 {
                var chunk = [UInt8](repeating: 0, count: 4096)
                let count = read(connections[index].descriptor, &chunk, chunk.count)
                guard count > 0 else {
                    hungUp.insert(index)
                    continue
                }
                guard !connections[index].answered else { continue }
                connections[index].request += chunk[..<count]
                let request = connections[index].request
                guard request.indices.contains(where: { request[$0...].starts(with: [13, 10, 13, 10]) }) else { continue }
                connections[index].answered = true
                let head = String(decoding: request, as: UTF8.self)
                state.withLock { state in
                    state.requests += 1
                    state.heads.append(head)
                }
                if initiallyHeld {
                    // Answered in turn: the connection takes the client's next request afterwards.
                    connections[index].answered = false
                    connections[index].request = []
                    if held {
                        connections[index].waiting = head
                        continue
                    }
                }
                writeAll(answer(head), to: connections[index].descriptor)
            }
            for index in hungUp.sorted(by: >) { close(connections.remove(at: index).descriptor) }
            if polled[1].revents & Int16(POLLIN) != 0 {
                let accepted = accept(listener, nil, nil)
                if accepted >= 0 { connections.append((accepted, [], false, nil)) }
            }
        }
    }

    /// Writes as much of `bytes` as the client takes; a client that hangs up ends it early.
    private func writeAll(_ bytes: [UInt8], to descriptor: Int32) {
        var offset = 0
        while offset < bytes.count {
            let count = bytes[offset...].withUnsafeBytes { send(descriptor, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            offset += count
        }
    }
}
