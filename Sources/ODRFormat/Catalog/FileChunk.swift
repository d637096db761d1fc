/// One content-defined chunk of a large file; a file's chunks tile it in order, so offsets are running sums.
///
/// A file of at least `limits.chunkThreshold` bytes is cut into chunks by ``FastCDC``. A stored
/// entry's chunks are plain byte ranges of its data; a deflated entry is compressed with a full
/// flush at every chunk boundary, so each chunk's ``storedSize`` bytes inflate on their own (raw
/// inflate from that offset, with an empty dictionary). An update takes every chunk whose hash a
/// device already holds from disk and fetches only the others.
public struct FileChunk: Sendable, Hashable, Codable {
    /// The chunk's uncompressed length; never zero.
    public var size: Int64
    /// The length of its bytes in the entry (equal to ``size`` in a stored entry).
    public var storedSize: Int64
    /// The lowercase hexadecimal SHA-256 of the uncompressed bytes.
    public var sha256: String

    public init(size: Int64, storedSize: Int64, sha256: String) {
        self.size = size
        self.storedSize = storedSize
        self.sha256 = sha256
    }

    /// The largest uncompressed chunk a manifest may list: 16 MiB, far above the builder's 1 MiB
    /// (``FastCDC/Parameters/standard``), so a reader's buffer for one chunk stays bounded.
    public static let maximumSize: Int64 = 16 << 20
    /// The largest stored (compressed) chunk: deflate may grow incompressible bytes by 5 bytes per
    /// 64 KiB block plus the flush marker, far less than this 1/64 margin.
    public static let maximumStoredSize: Int64 = maximumSize + maximumSize / 64
    /// The most chunks one file may have: 2^20, enough for a 256 GiB file at the default 256 KiB average.
    public static let maximumCount = 1 << 20

    /// Checks a file's chunk table against its sizes and method: the rules every reader applies,
    /// whatever form (JSON, compact, per-pack table) the table came in. An empty table (a file
    /// that is not chunked) is always valid.
    ///
    /// - Throws: ``FormatError`` `invalid-value` naming `field.chunks[i]` when a chunk is empty or
    ///   over ``maximumSize``, a stored entry's chunk has a different stored size, a digest is not
    ///   64 lowercase hex digits, there are more than ``maximumCount`` chunks, or the sizes do not
    ///   add up exactly to `size` and `storedSize`.
    public static func validate(
        _ chunks: [FileChunk], size: Int64, storedSize: Int64, method: CompressionMethod, path: String, field: String
    ) throws(FormatError) {
        guard !chunks.isEmpty else { return }
        guard chunks.count <= maximumCount else {
            throw FormatError(.invalidValue, "'\(path)' has \(chunks.count) chunks; a file may have at most \(maximumCount). Rebuild with a larger chunk size.", field: "\(field).chunks")
        }
        var total: Int64 = 0, storedTotal: Int64 = 0
        for (i, chunk) in chunks.enumerated() {
            let here = "\(field).chunks[\(i)]"
            guard chunk.size > 0, chunk.storedSize > 0 else {
                throw FormatError(.invalidValue, "Chunk \(i) of '\(path)' is empty (size \(chunk.size), stored size \(chunk.storedSize)); every chunk holds at least one byte.", field: here)
            }
            guard chunk.size <= maximumSize, chunk.storedSize <= maximumStoredSize else {
                throw FormatError(.invalidValue, "Chunk \(i) of '\(path)' is \(chunk.size) bytes (\(chunk.storedSize) stored); a chunk may be at most \(maximumSize).", field: here)
            }
            guard method == .deflate || chunk.storedSize == chunk.size else {
                throw FormatError(.invalidValue, "Chunk \(i) of '\(path)' is in a stored entry, so its stored size must equal its size; found \(chunk.storedSize) and \(chunk.size).", field: "\(here).storedSize")
            }
            guard HexDigest.isSHA256(chunk.sha256) else {
                throw FormatError(.invalidValue, "Chunk \(i) of '\(path)' has a sha256 that is not 64 lowercase hex digits.", field: "\(here).sha256")
            }
            let (sum, overflow) = total.addingReportingOverflow(chunk.size)
            let (storedSum, storedOverflow) = storedTotal.addingReportingOverflow(chunk.storedSize)
            guard !overflow, !storedOverflow else {
                throw FormatError(.invalidValue, "The chunks of '\(path)' add up to more than \(Int64.max) bytes.", field: here)
            }
            total = sum
            storedTotal = storedSum
        }
        guard total == size else {
            throw FormatError(.invalidValue, "The chunks of '\(path)' add up to \(total) bytes, but the file has \(size); a chunk table must tile its file exactly.", field: "\(field).chunks")
        }
        guard storedTotal == storedSize else {
            throw FormatError(.invalidValue, "The chunks of '\(path)' add up to \(storedTotal) stored bytes, but the entry has \(storedSize); a chunk table must tile its entry exactly.", field: "\(field).chunks")
        }
    }
}
