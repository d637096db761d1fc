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

extension PackEntryExpectation {
    /// The distinct entries of one pack's files (several files may share one entry, for identical
    /// content), ordered by their position in the archive.
    public static func distinctEntries(of files: some Sequence<FileRecord>) -> [PackEntryExpectation] {
        var byName: [String: PackEntryExpectation] = [:]
        for file in files where byName[file.entry] == nil {
            byName[file.entry] = PackEntryExpectation(
                name: file.entry, method: file.method, storedSize: file.storedSize,
                size: file.size, headerOffset: file.headerOffset, sha256: file.sha256)
        }
        return byName.values.sorted { $0.headerOffset < $1.headerOffset }
    }
}
