import Foundation
import ODRFormat
import ODRRuntime

extension SimulatedCatalog {
    /// The catalog in directory `root` (as `odrpack build` writes it), at the version its
    /// `distribution` points at, or at its newest version when that distribution does not exist.
    ///
    /// A split catalog (format 3, `odrpack build`'s default) is read from its tag bins.
    ///
    /// - Throws: `FormatError` for a malformed `catalog.json`, manifest or tag bin (one that differs
    ///   from its pin included), `ResourceError` `invalid-catalog` when a file is missing.
    public init(directory root: URL, distribution: String = "live") throws {
        let index = try CatalogIndex.decode(from: Self.read(root.appending(path: CatalogIndex.fileName)))
        guard let number = index.distributions[distribution] ?? index.versions.last?.number,
              let entry = index.version(number)
        else {
            throw ResourceError(.invalidCatalog, "\(root.path) lists no versions; build the catalog with odrpack first.")
        }
        let version: Int, tags: [TagRecord], packs: [PackRecord]
        switch try PublishedManifest.decode(from: Self.read(root.appending(path: entry.manifest))) {
        case .full(let manifest):
            (version, tags, packs) = (manifest.version, manifest.tags, manifest.packs)
        case .split(let manifest):
            // Tags and packs are all in the bins; the simulator never reads a file table.
            (tags, packs) = try Self.tagsAndPacks(of: manifest, in: root)
            version = manifest.version
        }
        var tagIndex: [String: TagIndex] = [:]
        for (i, tag) in tags.enumerated() { tagIndex[tag.name] = TagIndex(i) }
        try self.init(
            name: "\(index.id) v\(version)",
            tags: tags.map { Tag(name: $0.name, preservationPriority: $0.preservationPriority) },
            packs: packs.map { pack in
                Pack(id: pack.id, bytes: pack.installedBytes, downloadBytes: pack.archiveBytes,
                     tags: pack.tags.compactMap { tagIndex[$0] })
            })
    }

    /// The tags (sorted by name) and packs (sorted by id) of a split manifest, read from its bins,
    /// each checked against its pin.
    private static func tagsAndPacks(of manifest: SplitManifest, in root: URL) throws -> ([TagRecord], [PackRecord]) {
        var tags: [TagRecord] = [], packs: [String: PackRecord] = [:]
        for (number, pin) in manifest.bins.enumerated() {
            let path = SplitMetadata.binPath(for: pin)
            let bin = try TagBin.decode(from: read(root.appending(path: path)), pin: pin, index: number,
                                        binCount: manifest.bins.count, file: path)
            tags += bin.tags
            for entry in bin.packs { packs[entry.pack.id] = entry.pack }
        }
        return (tags.sorted { $0.name < $1.name }, packs.values.sorted { $0.id < $1.id })
    }

    private static func read(_ url: URL) throws(ResourceError) -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw ResourceError(.invalidCatalog, "Cannot read \(url.path); pass the root of a catalog built by odrpack.", cause: error)
        }
    }
}
