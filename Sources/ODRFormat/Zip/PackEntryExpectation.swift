/// What a manifest says one entry of a pack must be; the readers check the archive against it.
public struct PackEntryExpectation: Sendable, Equatable {
    /// The entry's name in the archive.
    public var name: String
    /// How the entry is stored.
    public var method: CompressionMethod
    /// The size of its data in the archive.
    public var storedSize: Int64
    /// The uncompressed size.
    public var size: Int64
    /// The offset of its local header.
    public var headerOffset: Int64
    /// The SHA-256 of the uncompressed content, lowercase hex.
    public var sha256: String

    public init(name: String, method: CompressionMethod, storedSize: Int64, size: Int64, headerOffset: Int64, sha256: String) {
        self.name = name
        self.method = method
        self.storedSize = storedSize
        self.size = size
        self.headerOffset = headerOffset
        self.sha256 = sha256
    }
}
