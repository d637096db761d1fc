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

    public init(
        path: String, pack: String, entry: String, sha256: String,
        storedSize: Int64, size: Int64, headerOffset: Int64, method: CompressionMethod
    ) {
        self.path = path
        self.pack = pack
        self.entry = entry
        self.sha256 = sha256
        self.storedSize = storedSize
        self.size = size
        self.headerOffset = headerOffset
        self.method = method
    }
}
