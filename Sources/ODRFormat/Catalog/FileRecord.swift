/// A file as a version manifest describes it: where its bytes are and how to check them.
public struct FileRecord: Codable, Sendable, Equatable {
    /// The logical path a game asks for, for example `Levels/Level3/map.json`.
    public var path: String
    /// The id of the pack that holds the file's bytes.
    public var pack: String
    /// The name of the entry inside the pack. Files with identical content share one entry.
    public var entry: String
    /// The lowercase hexadecimal SHA-256 of the uncompressed content.
    public var sha256: String
    /// The entry's size in the archive (compressed size for deflated entries).
    public var storedSize: Int64
    /// The uncompressed size.
    public var size: Int64
    /// The offset of the entry's local file header in the archive, for fetching it by HTTP range.
    public var headerOffset: Int64
    /// How the entry is stored.
    public var method: CompressionMethod
    /// The file's variant, by axis name: always its pack's. Empty for a common file. Several files
    /// may share one logical ``path`` when their variants differ. Written to JSON only when not empty.
    public var variant: Variant
    /// The file's content-defined chunks, in order; empty when the file is not chunked (smaller
    /// than the build's `limits.chunkThreshold`). Written to JSON as `chunks` only when not empty;
    /// a manifest with any chunked file has format version 4 (see ``VersionManifest``).
    public var chunks: [FileChunk]

    public init(
        path: String, pack: String, entry: String, sha256: String,
        storedSize: Int64, size: Int64, headerOffset: Int64, method: CompressionMethod, variant: Variant = [:],
        chunks: [FileChunk] = []
    ) {
        self.variant = variant
        self.chunks = chunks
        self.path = path
        self.pack = pack
        self.entry = entry
        self.sha256 = sha256
        self.storedSize = storedSize
        self.size = size
        self.headerOffset = headerOffset
        self.method = method
    }

    private enum CodingKeys: String, CodingKey { case path, pack, entry, sha256, storedSize, size, headerOffset, method, variant, chunks }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(path: try container.decode(String.self, forKey: .path), pack: try container.decode(String.self, forKey: .pack),
                  entry: try container.decode(String.self, forKey: .entry), sha256: try container.decode(String.self, forKey: .sha256),
                  storedSize: try container.decode(Int64.self, forKey: .storedSize), size: try container.decode(Int64.self, forKey: .size),
                  headerOffset: try container.decode(Int64.self, forKey: .headerOffset),
                  method: try container.decode(CompressionMethod.self, forKey: .method),
                  variant: try container.decodeIfPresent(Variant.self, forKey: .variant) ?? [:],
                  chunks: try container.decodeIfPresent([FileChunk].self, forKey: .chunks) ?? [])
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(path, forKey: .path)
        try container.encode(pack, forKey: .pack)
        try container.encode(entry, forKey: .entry)
        try container.encode(sha256, forKey: .sha256)
        try container.encode(storedSize, forKey: .storedSize)
        try container.encode(size, forKey: .size)
        try container.encode(headerOffset, forKey: .headerOffset)
        try container.encode(method, forKey: .method)
        if !variant.isEmpty { try container.encode(variant, forKey: .variant) }
        if !chunks.isEmpty { try container.encode(chunks, forKey: .chunks) }
    }
}
