/// One entry as the writer wrote it: what a manifest records about it.
public struct PackEntry: Sendable, Equatable {
    /// The entry's name in the archive.
    public var name: String
    /// How its bytes are stored.
    public var method: CompressionMethod
    /// The CRC-32 of the uncompressed content (for other ZIP tools; we check SHA-256).
    public var crc32: UInt32
    /// The size of its data in the archive.
    public var storedSize: Int64
    /// The uncompressed size.
    public var size: Int64
    /// The offset of its local header in the archive.
    public var headerOffset: Int64
    /// The SHA-256 of the uncompressed content, lowercase hex.
    public var sha256: String
    /// The entry's content-defined chunks, in order, when the writer chunked it (see
    /// ``PackWriter/Options/chunkThreshold``); empty otherwise.
    public var chunks: [FileChunk]

    public init(name: String, method: CompressionMethod, crc32: UInt32, storedSize: Int64, size: Int64, headerOffset: Int64, sha256: String,
                chunks: [FileChunk] = []) {
        self.chunks = chunks
        self.name = name
        self.method = method
        self.crc32 = crc32
        self.storedSize = storedSize
        self.size = size
        self.headerOffset = headerOffset
        self.sha256 = sha256
    }

    /// What a reader must find for this entry.
    public var expectation: PackEntryExpectation {
        PackEntryExpectation(name: name, method: method, storedSize: storedSize, size: size, headerOffset: headerOffset, sha256: sha256)
    }
}

/// A finished archive: its identity and its entries.
public struct PackSummary: Sendable, Equatable {
    /// The SHA-256 of the archive's bytes, lowercase hex: the pack's id and file name.
    public var sha256: String
    /// The archive's size in bytes.
    public var archiveBytes: Int64
    /// Every entry, in archive order.
    public var entries: [PackEntry]

    /// The sum of the entries' uncompressed sizes.
    public var installedBytes: Int64 { entries.reduce(0) { $0 + $1.size } }
}
