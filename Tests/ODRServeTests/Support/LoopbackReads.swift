import Foundation
import ODRTestSupport

/// Sends one raw HTTP/1.1 request to 127.0.0.1:`port` and returns every chunk `read` returned
/// until the server closed the connection, so a test can see how the bytes arrived.
///
/// Runs on its own thread: blocking reads must not hold a thread of the cooperative pool that the
/// in-process server needs to answer.
///
/// With `readingResponse` false, closes the connection right after sending, as a client that
/// gives up does, and returns no chunks.
func rawExchange(port: Int, request: String, readingResponse: Bool = true) async throws -> [Data] {
    try await LoopbackConnection.onThread {
        let connection = try LoopbackConnection(port: port)
        try connection.send(request)
        guard readingResponse else { return [] }
        var chunks: [Data] = []
        while true {
            let chunk = try connection.receive(upTo: 1 << 20)
            if chunk.isEmpty { return chunks }
            chunks.append(chunk)
        }
    }
}
