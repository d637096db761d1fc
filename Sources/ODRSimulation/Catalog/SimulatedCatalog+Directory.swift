import Foundation
import ODRFormat
import ODRRuntime

extension SimulatedCatalog {
    /// The catalog in directory `root` (as `odrpack build` writes it), at the version its
    /// `distribution` points at, or at its newest version when that distribution does not exist.
    ///
    /// - Throws: `FormatError` for a malformed `catalog.json` or manifest, `ResourceError`
    ///   `invalid-catalog` when a file is missing.
    public init(directory root: URL, distribution: String = "live") throws {
        let index = try CatalogIndex.decode(from: Self.read(root.appending(path: CatalogIndex.fileName)))
        guard let number = index.distributions[distribution] ?? index.versions.last?.number,
              let entry = index.version(number)
        else {
            throw ResourceError(.invalidCatalog, "\(root.path) lists no versions; build the catalog with odrpack first.")
        }
        let manifest = try VersionManifest.decode(from: Self.read(root.appending(path: entry.manifest)))
        var tagIndex: [String: TagIndex] = [:]
        for (i, tag) in manifest.tags.enumerated() { tagIndex[tag.name] = TagIndex(i) }
        try self.init(
            name: "\(index.id) v\(manifest.version)",
            tags: manifest.tags.map { Tag(name: $0.name, preservationPriority: $0.preservationPriority) },
            packs: manifest.packs.map { pack in
                Pack(id: pack.id, bytes: pack.installedBytes, downloadBytes: pack.archiveBytes,
                     tags: pack.tags.compactMap { tagIndex[$0] })
            })
    }

    private static func read(_ url: URL) throws(ResourceError) -> Data {
        do {
            return try Data(contentsOf: url)
        } catch {
            throw ResourceError(.invalidCatalog, "Cannot read \(url.path); pass the root of a catalog built by odrpack.", cause: error)
        }
    }
}
