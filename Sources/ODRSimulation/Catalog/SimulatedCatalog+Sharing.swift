import ODRFormat
import ODRRuntime

extension SimulatedCatalog {
    /// Which of `packs` share files, as the runtime's store shares them: an install links every file
    /// whose content an installed pack holds already, so packs of two versions of a tag hold one
    /// physical file for each unchanged file. A file here is a content (SHA-256); pack number `i`
    /// of the account is `packs[i]`.
    ///
    /// Bytes are what the files take on disk, as the store counts them (``ODRRuntime/DiskBlocks``):
    /// each file in whole blocks of `blockSize`, and each pack's folders, which are its own.
    ///
    /// The purge planner given this account (``ODRRuntime/PurgePlanner/plan(_:bytesNeeded:now:account:)``)
    /// frees what the runtime frees for the same packs: a superseded pack only its own files and
    /// its folders.
    ///
    /// - Parameter manifests: versions listing the packs (the newest one listing a pack describes it).
    public static func fileAccount(of packs: [String], in manifests: [VersionManifest],
                                   blockSize: Int64 = DiskBlocks.defaultBlockSize) -> PackFileAccount {
        var files: [String: (bytes: Int64, packs: [Int])] = [:]
        var folders: [PackFileAccount.File] = []
        for (number, id) in packs.enumerated() {
            guard let manifest = manifests.last(where: { manifest in manifest.packs.contains { $0.id == id } }) else { continue }
            let entries = manifest.expectedEntries(inPack: id)
            for entry in entries {
                var file = files[entry.sha256] ?? (DiskBlocks.bytes(ofFile: entry.size, blockSize: blockSize), [])
                if file.packs.last != number { file.packs.append(number) }
                files[entry.sha256] = file
            }
            let count = DiskBlocks.folderCount(ofEntryNames: entries.lazy.map(\.name))
            folders.append(PackFileAccount.File(bytes: DiskBlocks.bytes(ofFileSizes: [], folders: count, blockSize: blockSize), packs: [number]))
        }
        return PackFileAccount(files: files.sorted { $0.key < $1.key }.map { PackFileAccount.File(bytes: $0.value.bytes, packs: $0.value.packs) } + folders)
    }
}
