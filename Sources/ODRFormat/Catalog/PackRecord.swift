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
    /// The variant every file of the pack has, by axis name; empty for a common pack, which every
    /// device downloads with its tags. Written to JSON only when not empty.
    public var variant: Variant

    public init(id: String, tags: [String], archiveBytes: Int64, installedBytes: Int64, entryCount: Int, variant: Variant = [:]) {
        self.id = id
        self.tags = tags
        self.archiveBytes = archiveBytes
        self.installedBytes = installedBytes
        self.entryCount = entryCount
        self.variant = variant
    }

    private enum CodingKeys: String, CodingKey { case id, tags, archiveBytes, installedBytes, entryCount, variant }

    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        self.init(id: try container.decode(String.self, forKey: .id), tags: try container.decode([String].self, forKey: .tags),
                  archiveBytes: try container.decode(Int64.self, forKey: .archiveBytes),
                  installedBytes: try container.decode(Int64.self, forKey: .installedBytes),
                  entryCount: try container.decode(Int.self, forKey: .entryCount),
                  variant: try container.decodeIfPresent(Variant.self, forKey: .variant) ?? [:])
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(id, forKey: .id)
        try container.encode(tags, forKey: .tags)
        try container.encode(archiveBytes, forKey: .archiveBytes)
        try container.encode(installedBytes, forKey: .installedBytes)
        try container.encode(entryCount, forKey: .entryCount)
        if !variant.isEmpty { try container.encode(variant, forKey: .variant) }
    }

    /// The archive's path relative to the catalog root: `packs/<id>.zip`.
    public var archivePath: String { Self.archivePath(forID: id) }

    /// The archive path of the pack with this id.
    public static func archivePath(forID id: String) -> String { "packs/\(id).zip" }
}
