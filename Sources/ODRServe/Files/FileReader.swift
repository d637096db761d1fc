#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import NIOCore
import NIOPosix
import ODRFormat

/// Reads byte ranges of served files in chunks, on SwiftNIO's thread pool for blocking I/O, one
/// chunk ahead of the bytes being sent.
///
/// Hummingbird's `FileIO` does the same through swift-nio's `FileChunks`, which fills each chunk on
/// a pool thread and hands it to the task through a continuation. That hand-over is sound, but
/// ThreadSanitizer cannot see it when the pool resumes the continuation before the task has
/// reached its `await`: the Swift runtime's `swift_continuation_await` (Swift 6.3) then lets the
/// task run on without telling ThreadSanitizer. So `swift test --sanitize=thread` reported the
/// task's first look inside such a chunk (``ShapedBodyWriter`` flipping a byte) as a race with the
/// pool thread that created it, and would have reported any other thread the chunk reached through
/// the task. Here every chunk goes from the pool thread to the task through a ``Locked`` slot,
/// whose `pthread_mutex` ThreadSanitizer does see.
///
/// ```swift
/// let reader = FileReader(chunkLength: 256 * 1024)
/// try await reader.read(0...1023, ofFileAt: "/srv/catalog/packs/a.zip") { chunk in
///     try await writer.write(chunk)
/// }
/// ```
struct FileReader: Sendable {
    /// The file could not be opened or read.
    struct ReadError: Error, CustomStringConvertible {
        let path: String
        let operation: String
        let errorNumber: Int32

        var description: String {
            "\(operation) \(path): \(String(cString: strerror(errorNumber)))"
        }
    }

    /// Bytes read at a time, and so the most a chunk holds.
    let chunkLength: Int
    var threadPool: NIOThreadPool = .singleton

    /// Calls `body` with `range` of the file at `path`, in order, in chunks of at most
    /// ``chunkLength`` bytes; the next chunk is read while `body` handles the current one.
    ///
    /// Stops early, without an error, if the file ends before the range does (it shrank since it
    /// was measured): the caller sees fewer bytes than it asked for.
    func read(_ range: ClosedRange<Int>, ofFileAt path: String, into body: (ByteBuffer) async throws -> Void) async throws {
        let descriptor = try await threadPool.runIfActive { try Self.openForReading(path) }
        defer { close(descriptor) }
        let end = range.upperBound + 1
        // Filled on a pool thread, emptied by this task after the read is awaited: the lock
        // around it is what orders the two for ThreadSanitizer.
        let slot = Locked<ByteBuffer?>(nil)
        var offset = range.lowerBound
        var length = min(chunkLength, end - offset)
        try await readChunk(of: descriptor, path: path, at: offset, length: length, into: slot)
        while true {
            let chunk = slot.withLock { $0.take() } ?? ByteBuffer()
            offset += chunk.readableBytes
            guard chunk.readableBytes == length, offset < end else {
                // The last chunk, or a short one: the file ended early.
                if chunk.readableBytes > 0 { try await body(chunk) }
                return
            }
            let (nextOffset, nextLength) = (offset, min(chunkLength, end - offset))
            // Leaving this scope early (when `body` throws) waits for the read, so the descriptor
            // is not closed under it.
            async let nextRead: Void = readChunk(of: descriptor, path: path, at: nextOffset, length: nextLength, into: slot)
            try await body(chunk)
            try await nextRead
            length = nextLength
        }
    }

    /// Reads up to `length` bytes at `offset` on the thread pool and leaves them in `slot`
    /// (fewer at the end of the file).
    private func readChunk(
        of descriptor: CInt,
        path: String,
        at offset: Int,
        length: Int,
        into slot: Locked<ByteBuffer?>
    ) async throws {
        try await threadPool.runIfActive {
            var chunk = ByteBuffer()
            try chunk.writeWithUnsafeMutableBytes(minimumWritableBytes: length) { destination in
                var filled = 0
                while filled < length {
                    let count = pread(descriptor, destination.baseAddress! + filled, length - filled, off_t(offset + filled))
                    if count > 0 {
                        filled += count
                    } else if count == 0 {
                        break
                    } else if errno != EINTR {
                        throw ReadError(path: path, operation: "pread", errorNumber: errno)
                    }
                }
                return filled
            }
            slot.withLock { $0 = chunk }
        }
    }

    /// Opens `path` for reading; close-on-exec, so processes the server's host spawns do not keep it.
    private static func openForReading(_ path: String) throws -> CInt {
        while true {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 { return descriptor }
            if errno != EINTR { throw ReadError(path: path, operation: "open", errorNumber: errno) }
        }
    }
}
