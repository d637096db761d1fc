/// Raw-inflates the compressed bytes of one chunk of a deflated entry on its own.
///
/// A chunked deflated entry is compressed with a full flush at every chunk boundary (see
/// docs/FORMAT.md), so each chunk's bytes start a fresh deflate state and inflate without what
/// came before. A chunk that does not end at such a flush point (its bytes cut mid-block, or a
/// builder that did not flush) is refused rather than misread: a chunk other than the last must end
/// with the empty stored block a full flush writes (`00 00 ff ff`) and leave the stream open, and the
/// last one must end the stream exactly. Either way it must produce exactly its size.
///
/// ```swift
/// let inflater = try ChunkInflater()
/// try compressed.withUnsafeBytes { bytes in
///     try inflater.inflate(bytes, size: chunk.size, isLast: false) { output in hasher.update(output) }
/// }
/// ```
public final class ChunkInflater {
    private let stream: ZlibStream
    private var scratch = [UInt8](repeating: 0, count: 256 << 10)

    /// The marker a full flush ends with: an empty stored block's length and its complement.
    private static let flushMarker: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    public init() throws(FormatError) {
        do {
            stream = try ZlibStream(.inflate)
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError(.io, "zlib could not start (\(error)).")
        }
    }

    /// Inflates one chunk's compressed bytes, handing each piece of output to `output`.
    ///
    /// - Parameters:
    ///   - compressed: the chunk's bytes in the entry, all of them.
    ///   - size: the chunk's uncompressed size.
    ///   - isLast: whether it is the entry's last chunk (which ends the deflate stream).
    /// - Throws: ``FormatError`` with code `corruptData` when the bytes are not valid deflate data,
    ///   do not end at a flush point (or, for the last chunk, at the stream's end), or produce another
    ///   size; whatever `output` throws.
    public func inflate(
        _ compressed: UnsafeRawBufferPointer, size: Int64, isLast: Bool, output: (UnsafeRawBufferPointer) throws -> Void
    ) throws {
        stream.reset()
        var produced: Int64 = 0
        let consumed = try stream.process(compressed, scratch: &scratch) { piece in
            produced += Int64(piece.count)
            guard produced <= size else {
                throw FormatError(.corruptData, "A chunk inflates to more than its \(size) bytes. Download the pack again.")
            }
            try output(piece)
        }
        guard consumed == compressed.count else {
            throw FormatError(.corruptData, "A chunk's deflate stream ends \(compressed.count - consumed) bytes before the chunk does. Download the pack again, or rebuild the catalog with a current odrpack.")
        }
        if isLast {
            guard stream.ended else {
                throw FormatError(.corruptData, "The last chunk of an entry does not end its deflate stream. Download the pack again, or rebuild the catalog with a current odrpack.")
            }
        } else {
            guard !stream.ended, compressed.count >= Self.flushMarker.count,
                  Array(compressed[(compressed.count - Self.flushMarker.count)...]) == Self.flushMarker else {
                throw FormatError(.corruptData, "A chunk does not end at a flush point, so it cannot be inflated on its own. Download the pack again, or rebuild the catalog with a current odrpack.")
            }
        }
        guard produced == size else {
            throw FormatError(.corruptData, "A chunk inflates to \(produced) bytes, not its \(size). Download the pack again.")
        }
    }
}
