import ODRFormat

/// A pack as it ended up in the catalog: its record and the file records that point into it.
public struct WrittenPack: Sendable, Equatable {
    /// The planned pack it came from.
    public var plan: PackPlan.Pack
    /// The manifest's record of it.
    public var record: PackRecord
    /// One record per logical path stored in it.
    public var files: [FileRecord]
    /// Whether the archive already existed (from an earlier version) and was not written again.
    public var reused: Bool
}
