internal import CZlib

/// One raw-DEFLATE `z_stream`, for compressing or decompressing; freed in `deinit`.
///
/// zlib keeps a pointer back to the stream it was initialized with, so the `z_stream` lives in
/// memory of its own that never moves.
final class ZlibStream {
    enum Direction { case deflate, inflate }

    let direction: Direction
    private let stream: UnsafeMutablePointer<z_stream>

    init(_ direction: Direction, level: Int32 = 6) throws {
        self.direction = direction
        stream = .allocate(capacity: 1)
        stream.initialize(to: z_stream())
        let status = switch direction {
        case .deflate: czlib_deflate_init_raw(stream, level)
        case .inflate: czlib_inflate_init_raw(stream)
        }
        guard status == Z_OK else {
            stream.deinitialize(count: 1)
            stream.deallocate()
            throw FormatError(.io, "zlib could not start (\(Self.describe(status, nil))).")
        }
    }

    /// Whether the compressed stream has ended (inflate) or been finished (deflate).
    private(set) var ended = false

    /// Runs zlib over `input`, calling `output` with each piece produced.
    ///
    /// - Parameters:
    ///   - finish: for deflate, whether this is the last input (flushes the stream's end).
    ///   - fullFlush: for deflate, ends the output at a byte boundary after `input` with an empty
    ///     dictionary (`Z_FULL_FLUSH`), so the bytes that follow inflate on their own: the cut
    ///     between two chunks of a chunked entry. Ignored when `finish` is set.
    /// - Returns: the number of input bytes consumed (all of them, unless inflate reached the end).
    @discardableResult
    func process(
        _ input: UnsafeRawBufferPointer, finish: Bool = false, fullFlush: Bool = false, scratch: inout [UInt8],
        output: (UnsafeRawBufferPointer) throws -> Void
    ) throws -> Int {
        let flush = finish ? Z_FINISH : fullFlush ? Z_FULL_FLUSH : Z_NO_FLUSH
        stream.pointee.next_in = UnsafeMutablePointer(mutating: input.baseAddress?.assumingMemoryBound(to: Bytef.self))
        stream.pointee.avail_in = uInt(input.count)
        let scratchCount = scratch.count
        while true {
            var status: Int32 = Z_OK
            var produced = 0
            scratch.withUnsafeMutableBytes { out in
                stream.pointee.next_out = out.baseAddress!.assumingMemoryBound(to: Bytef.self)
                stream.pointee.avail_out = uInt(scratchCount)
                switch direction {
                case .deflate: status = deflate(stream, flush)
                case .inflate: status = inflate(stream, Z_NO_FLUSH)
                }
                produced = scratchCount - Int(stream.pointee.avail_out)
            }
            if produced > 0 {
                try scratch.withUnsafeBytes { out in try output(UnsafeRawBufferPointer(rebasing: out[..<produced])) }
            }
            switch status {
            case Z_STREAM_END:
                ended = true
                return input.count - Int(stream.pointee.avail_in)
            case Z_OK:
                if stream.pointee.avail_in == 0 && produced < scratchCount && !finish { return input.count }
            case Z_BUF_ERROR:
                // No progress possible: all input consumed and no pending output.
                return input.count - Int(stream.pointee.avail_in)
            default:
                let message = Self.describe(status, stream.pointee.msg)
                throw FormatError(.corruptData, "The compressed data is corrupt (\(message)). Download the pack again.")
            }
        }
    }

    /// Prepares the stream for another entry without freeing and reallocating its state.
    func reset() {
        ended = false
        switch direction {
        case .deflate: deflateReset(stream)
        case .inflate: inflateReset(stream)
        }
    }

    private static func describe(_ status: Int32, _ message: UnsafeMutablePointer<CChar>?) -> String {
        if let message { return String(cString: message) }
        return "zlib status \(status)"
    }

    deinit {
        switch direction {
        case .deflate: deflateEnd(stream)
        case .inflate: inflateEnd(stream)
        }
        stream.deinitialize(count: 1)
        stream.deallocate()
    }
}
