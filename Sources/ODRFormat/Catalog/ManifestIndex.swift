/// Dictionaries over a ``VersionManifest`` for constant-time lookups by pack id, tag and path.
public struct ManifestIndex: Sendable {
    /// The manifest this index was built from.
    public let manifest: VersionManifest
    private let packsByID: [String: Int]
    private let tagsByName: [String: Int]
    private let filesByPath: [String: Int]
    /// Positions in `manifest.files` of each pack's files, in manifest order.
    private let filesByPack: [String: [Int]]

    public init(_ manifest: VersionManifest) {
        self.manifest = manifest
        packsByID = Dictionary(manifest.packs.enumerated().map { ($1.id, $0) }, uniquingKeysWith: { a, _ in a })
        tagsByName = Dictionary(manifest.tags.enumerated().map { ($1.name, $0) }, uniquingKeysWith: { a, _ in a })
        filesByPath = Dictionary(manifest.files.enumerated().map { ($1.path, $0) }, uniquingKeysWith: { a, _ in a })
        var filesByPack: [String: [Int]] = [:]
        for (position, file) in manifest.files.enumerated() { filesByPack[file.pack, default: []].append(position) }
        self.filesByPack = filesByPack
    }

    /// The pack with this id.
    public func pack(id: String) -> PackRecord? { packsByID[id].map { manifest.packs[$0] } }
    /// The tag with this name.
    public func tag(named name: String) -> TagRecord? { tagsByName[name].map { manifest.tags[$0] } }
    /// The file at this logical path.
    public func file(atPath path: String) -> FileRecord? { filesByPath[path].map { manifest.files[$0] } }

    /// The files pack `id` holds, in manifest order.
    public func files(inPack id: String) -> [FileRecord] { (filesByPack[id] ?? []).map { manifest.files[$0] } }

    /// The distinct entries of pack `id` in archive order; the same as
    /// ``VersionManifest/expectedEntries(inPack:)`` without reading every file of the manifest.
    public func expectedEntries(inPack id: String) -> [PackEntryExpectation] {
        PackEntryExpectation.distinctEntries(of: files(inPack: id))
    }

    /// The ids of the packs that a request for `tags` needs, sorted; unknown tags are ignored.
    public func packs(forTags tags: some Sequence<String>) -> [String] {
        var ids = Set<String>()
        for name in tags { ids.formUnion(tag(named: name)?.packs ?? []) }
        return ids.sorted()
    }
}
