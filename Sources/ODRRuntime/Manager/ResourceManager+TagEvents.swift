import ODRFormat

extension ResourceManager {
    /// The tags of `snapshot` that pack `id` serves, and those of them whose every pack is in
    /// `installed`: what ``ResourceManagerEvent/packInstalled(id:bytes:tags:)`` and
    /// ``ResourceManagerEvent/tagAvailable(tag:)`` (or, before a purge, ``ResourceManagerEvent/tagPurged(tag:)``) name.
    static func tagCoverage(ofPack id: String, in snapshot: CatalogSnapshot?, installed: Set<String>) -> (tags: [String], complete: [String]) {
        guard let snapshot, let pack = snapshot.lookup.pack(id: id) else { return ([], []) }
        let complete = pack.tags.filter { tag in snapshot.lookup.packs(forTags: [tag]).allSatisfy(installed.contains) }
        return (pack.tags, complete)
    }
}
