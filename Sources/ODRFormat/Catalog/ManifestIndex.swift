/// Lookups over a ``VersionManifest`` by pack id, tag and path.
///
/// Building it is part of opening a store's catalog, so it does as little as it can up front:
/// packs and tags get dictionaries; files, which are many (100,000 in a large catalog), are read
/// from a compact manifest's bytes one at a time, or, in a manifest of records, found by binary
/// search when it lists them sorted by path (as `odrpack` writes them) and grouped by pack only the
/// first time a pack's files are asked for.
public struct ManifestIndex: Sendable {
    /// The manifest this index was built from.
    public let manifest: VersionManifest
    private let packsByID: [String: Int]
    private let tagsByName: [String: Int]
    /// The position of each pack in `manifest.packs` by id (the first, should an id repeat).
    package var packPositions: [String: Int] { packsByID }
    /// The position of each tag in `manifest.tags` by name (the first, should a name repeat).
    package var tagPositions: [String: Int] { tagsByName }
    /// The files of a manifest decoded from its compact form: everything below is unused then.
    private let compactFiles: CompactFileTable?
    /// Positions of files by path, or `nil` when `manifest.files` is sorted by path.
    private let filesByPath: [String: Int]?
    /// Positions in `manifest.files` of each pack's files, in manifest order; built on first use.
    private let filesByPack = Locked<[String: [Int]]?>(nil)

    public init(_ manifest: VersionManifest) {
        self.manifest = manifest
        packsByID = Self.firstPositions(of: manifest.packs.lazy.map(\.id))
        tagsByName = Self.firstPositions(of: manifest.tags.lazy.map(\.name))
        switch manifest.fileTable {
        case .compact(let table):
            compactFiles = table
            filesByPath = nil
        case .records(let files):
            compactFiles = nil
            let sorted = files.indices.dropFirst().allSatisfy { files[$0 - 1].path < files[$0].path }
            filesByPath = sorted ? nil : Self.firstPositions(of: files.lazy.map(\.path))
        }
    }

    private static func firstPositions(of keys: some Collection<String>) -> [String: Int] {
        // One hash per key: the first position wins without a lookup before each insert.
        Dictionary(zip(keys, 0..<keys.count), uniquingKeysWith: { first, _ in first })
    }

    /// The pack with this id.
    public func pack(id: String) -> PackRecord? { packsByID[id].map { manifest.packs[$0] } }
    /// The tag with this name.
    public func tag(named name: String) -> TagRecord? { tagsByName[name].map { manifest.tags[$0] } }
    /// The file at this logical path.
    public func file(atPath path: String) -> FileRecord? {
        if let compactFiles { return compactFiles.file(atPath: path) }
        if let filesByPath { return filesByPath[path].map { manifest.files[$0] } }
        let files = manifest.files
        var low = 0, high = files.count
        while low < high {
            let middle = (low + high) / 2
            if files[middle].path < path { low = middle + 1 } else { high = middle }
        }
        return low < files.count && files[low].path == path ? files[low] : nil
    }

    /// The files pack `id` holds, in manifest order.
    public func files(inPack id: String) -> [FileRecord] {
        if let compactFiles { return packsByID[id].map { compactFiles.files(inPackAt: $0) } ?? [] }
        let positions = filesByPack.withLock { byPack in
            if byPack == nil {
                var grouped: [String: [Int]] = [:]
                grouped.reserveCapacity(manifest.packs.count)
                for (position, file) in manifest.files.enumerated() { grouped[file.pack, default: []].append(position) }
                byPack = grouped
            }
            return byPack?[id] ?? []
        }
        return positions.map { manifest.files[$0] }
    }

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

