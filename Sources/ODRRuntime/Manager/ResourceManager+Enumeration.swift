#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

extension ResourceManager {
    /// The tags of the catalog version requests use now, in the catalog's order, each with its
    /// packs and sizes as this device sees them (only the variants it chose): ``TagRecord/downloadBytes``
    /// is what a client with nothing installed downloads, ``TagRecord/installedBytes`` what the
    /// packs take on disk.
    ///
    /// For a split catalog, the tags described so far (see ``describe(tags:)``).
    ///
    /// - Throws: ``ResourceError`` `catalog-unavailable` before the manager has a catalog.
    public func catalogTags() throws(ResourceError) -> [TagRecord] {
        try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }.lookup.tags
    }

    /// The files a request for `tag` holds, sorted by path: for a path with variants, the one this
    /// device resolves to (what ``ResourceRequest/path(forResource:)`` returns while accessing).
    ///
    /// - Throws: ``ResourceError`` `catalog-unavailable` before the manager has a catalog,
    ///   `invalid-tag` for a tag the catalog does not define; for a split catalog,
    ///   `catalog-unavailable` for a tag not described yet (call ``describe(tags:)`` first).
    public func files(ofTag tag: String) throws(ResourceError) -> [FileRecord] {
        let snapshot = try state.withLock { state throws(ResourceError) in try Self.requireSnapshot(state) }
        let lookup = snapshot.lookup
        var files: [FileRecord] = []
        for pack in try Self.packIDs(forTags: [tag], in: snapshot) {
            for file in lookup.files(inPack: pack) where lookup.file(atPath: file.path) == file {
                files.append(file)
            }
        }
        return files.sorted { $0.path < $1.path }
    }
}
