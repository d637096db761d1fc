/// A pack as a version manifest describes it: one immutable, content-addressed ZIP archive.
public struct PackRecord: Codable, Sendable, Equatable {
    /// The lowercase hexadecimal SHA-256 of the archive's bytes; also its file name.
    public var id: String
    /// The pack's tag set, sorted: a request for any of these tags needs this pack.
    public var tags: [String]
    /// The archive's size in bytes: what a client downloads.
    public var archiveBytes: Int64
    /// The sum of the uncompressed sizes of its entries: what it takes once installed.
    public var installedBytes: Int64
    /// The number of entries in the archive.
    public var entryCount: Int

    public init(id: String, tags: [String], archiveBytes: Int64, installedBytes: Int64, entryCount: Int) {
        self.id = id
        self.tags = tags
        self.archiveBytes = archiveBytes
        self.installedBytes = installedBytes
        self.entryCount = entryCount
    }

    /// The archive's path relative to the catalog root: `packs/<id>.zip`.
    public var archivePath: String { Self.archivePath(forID: id) }

    /// The archive path of the pack with this id.
    public static func archivePath(forID id: String) -> String { "packs/\(id).zip" }
}
