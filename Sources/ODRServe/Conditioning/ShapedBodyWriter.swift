import Hummingbird
import NIOCore

/// Sends a response body as a ``BodyShaping`` says: paced, cut short, or with bytes flipped.
///
/// A class, because the same writer is handed the chunks of several file ranges in turn (one per
/// range of a multipart response) and must keep counting across them. It is used by one task at a
/// time: the one writing the response.
final class ShapedBodyWriter: ResponseBodyWriter {
    /// Thrown to close the connection part way through a body, as truncation and stalls do.
    struct Interrupted: Error {}

    private var parent: any ResponseBodyWriter
    private let shaping: BodyShaping
    private let channel: any Channel
    /// Where the body is cut, if it is.
    private let cutAfter: Int?
    private var nextCorruption = 0
    private var paceStart: ContinuousClock.Instant?
    /// Called with the bytes sent when a stall begins, so the request log shows progress while it lasts.
    private let onStall: @Sendable (Int) -> Void

    /// Body bytes handed to the connection so far.
    private(set) var bytesSent = 0

    init(parent: any ResponseBodyWriter, shaping: BodyShaping, channel: any Channel, onStall: @escaping @Sendable (Int) -> Void) {
        self.parent = parent
        self.shaping = shaping
        self.channel = channel
        self.onStall = onStall
        cutAfter = shaping.truncateAfter ?? shaping.stall?.after
    }

    func write(_ buffer: ByteBuffer) async throws {
        if shaping.isPassThrough {
            bytesSent += buffer.readableBytes
            try await parent.write(buffer)
            return
        }
        var buffer = buffer
        if let cutAfter, buffer.readableBytes >= cutAfter - bytesSent {
            // The fault only applies to bodies longer than the cut, so bytes always remain after it.
            if let head = buffer.readSlice(length: cutAfter - bytesSent), head.readableBytes > 0 {
                try await send(head)
            }
            try await interrupt()
        }
        try await send(buffer)
    }

    /// Ignored: one body is made of several parts whose readers each finish; ``end()`` ends the body.
    func finish(_ trailingHeaders: HTTPFields?) async throws {}

    /// Ends the response body.
    func end() async throws {
        try await parent.finish(nil)
    }

    private func send(_ buffer: ByteBuffer) async throws {
        var buffer = buffer
        corrupt(&buffer)
        guard let rate = shaping.bytesPerSecond else {
            bytesSent += buffer.readableBytes
            try await parent.write(buffer)
            return
        }
        // Twenty slices a second: smooth enough to look like a slow link, few enough to stay cheap.
        let sliceLength = max(1, min(rate / 20, 256 * 1024))
        let start = paceStart ?? .now
        paceStart = start
        while let slice = buffer.readSlice(length: min(sliceLength, buffer.readableBytes)), slice.readableBytes > 0 {
            bytesSent += slice.readableBytes
            try await parent.write(slice)
            let due = start + .seconds(Double(bytesSent) / Double(rate))
            try await Task.sleep(until: due, clock: .continuous)
        }
    }

    /// Inverts the bytes at the planned offsets that fall inside `buffer`, which starts at `bytesSent`.
    private func corrupt(_ buffer: inout ByteBuffer) {
        let offsets = shaping.corruptOffsets
        let end = bytesSent + buffer.readableBytes
        while nextCorruption < offsets.count, offsets[nextCorruption] < end {
            let offset = offsets[nextCorruption]
            nextCorruption += 1
            guard offset >= bytesSent else { continue }
            let index = buffer.readerIndex + (offset - bytesSent)
            if let byte = buffer.getInteger(at: index, as: UInt8.self) {
                buffer.setInteger(~byte, at: index)
            }
        }
    }

    /// Stalls if asked, then closes the connection once the bytes already written have left,
    /// so the client receives exactly the bytes before the cut.
    private func interrupt() async throws -> Never {
        if let stall = shaping.stall {
            onStall(bytesSent)
            try? await Task.sleep(for: stall.duration)
        }
        // Closing output waits for pending writes to be flushed; a full close would discard them.
        try? await channel.close(mode: .output).get()
        throw Interrupted()
    }
}
