/// A tag as a version manifest describes it: what a client must download to use it.
public struct TagRecord: Codable, Sendable, Equatable {
    /// The tag's name, for example `level3`.
    public var name: String
    /// The default preservation priority (0...1); apps may override it at run time.
    public var preservationPriority: Double
    /// The ids of the packs whose tag set contains this tag, sorted.
    public var packs: [String]
    /// The archive bytes of those packs: what a client with nothing installed downloads.
    public var downloadBytes: Int64
    /// The uncompressed bytes of those packs: what they take once installed.
    public var installedBytes: Int64

    public init(name: String, preservationPriority: Double, packs: [String], downloadBytes: Int64, installedBytes: Int64) {
        self.name = name
        self.preservationPriority = preservationPriority
        self.packs = packs
        self.downloadBytes = downloadBytes
        self.installedBytes = installedBytes
    }

    /// Why `name` cannot be a tag name, or `nil` when it can.
    ///
    /// Tag names are 1 to 128 characters of letters, digits, `.`, `_` and `-`, so that they are safe
    /// in file names, URLs and command lines.
    public static func problem(inName name: String) -> String? {
        if name.isEmpty { return "a tag name is empty" }
        if name.utf8.count > 128 { return "the tag name '\(name.prefix(32))...' is longer than 128 characters" }
        let allowed = name.unicodeScalars.allSatisfy {
            ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0)
                || $0 == "." || $0 == "_" || $0 == "-"
        }
        return allowed ? nil : "the tag name '\(name)' may only contain letters, digits, '.', '_' and '-'"
    }
}
