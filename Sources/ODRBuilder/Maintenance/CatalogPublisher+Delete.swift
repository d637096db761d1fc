#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFormat

extension CatalogPublisher {
    /// One file `--delete` removes from the destination.
    public struct Deletion: Sendable, Hashable {
        /// The path relative to the destination's root.
        public var path: String
        public var bytes: Int64
    }

    /// What `--delete` would do: the files the destination holds that no kept version of the
    /// catalog references, and those kept for the grace.
    public struct DeletionPlan: Sendable, Hashable {
        /// Files to delete, in the order they are deleted: packs, metadata, leftovers of
        /// interrupted uploads, manifests last.
        public var deletions: [Deletion]
        /// Files no kept version references, kept because a version dropped within the grace
        /// (``CatalogPublisher/deletionPlan(keepingDroppedVersions:requirePublished:)``) uses them.
        public var keptForGrace: [String]
        /// The dropped versions whose files are kept for the grace.
        public var graceVersions: [Int]
        /// Bytes the deletions free.
        public var deletionBytes: Int64 { deletions.reduce(0) { $0.clampedAdding($1.bytes) } }
    }

    /// The folders (and leftovers) of the destination that `--delete` looks at: what a catalog
    /// consists of. Anything else there (an `index.html`, another game's folder) is never touched.
    static func isCatalogFile(_ path: String) -> Bool {
        let components = path.split(separator: "/", omittingEmptySubsequences: false)
        guard let first = components.first else { return false }
        if components.count == 1 { return first.hasPrefix("\(CatalogIndex.fileName).publish-") }
        return ["packs", "versions", SplitMetadata.folder].contains(String(first))
    }

    /// What ``delete(_:)`` would remove: every file under the destination's `packs/`, `versions/`
    /// and `meta/` (and every `catalog.json.publish-*` left by an interrupted publish) that no
    /// version the local `catalog.json` lists references. Writes nothing.
    ///
    /// - Parameters:
    ///   - grace: keep the files of versions dropped from the catalog (whose manifests the
    ///     destination still holds) that are at most this many versions older than the newest, for
    ///     edges that still serve their `catalog.json` (`--delete-after-versions`; 0 keeps none).
    ///   - requirePublished: refuse unless the destination's `catalog.json` is the local one (the
    ///     publish finished): deleting against a destination that still serves an older
    ///     `catalog.json` would remove files its clients use.
    /// - Throws: `publish.destination` when the destination cannot be listed, a dropped version's
    ///   manifest within the grace cannot be read (nothing is deleted then: its files are unknown),
    ///   or (with `requirePublished`) the destination's `catalog.json` is not the local one.
    public func deletionPlan(keepingDroppedVersions grace: Int, requirePublished: Bool = true) throws(BuildError) -> DeletionPlan {
        let objects = try objects()
        let referenced = Set(objects.map(\.path))
        let held = try listAll()
        if requirePublished, let index = objects.first(where: { $0.kind == .index }) {
            let current: Bool
            switch destination {
            case .folder(let root):
                current = (try? ContentHash.sha256Hex(ofFileAt: root.appending(path: index.path))) == index.sha256
            case .rclone:
                current = held[index.path] == index.bytes
            }
            guard current else {
                throw BuildError(.publishDestination, "the destination's catalog.json is not the one being published, so files its clients use could be deleted; publish first (odrpack publish without --dry-run), then delete",
                                 file: join(index.path))
            }
        }
        let newest = try catalog.loadIndex().versions.map(\.number).max() ?? 0
        var graceVersions: [Int] = []
        var graceFiles = Set<String>()
        for (path, bytes) in held.sorted(by: { $0.key < $1.key }) where !referenced.contains(path) {
            guard let number = VersionManifest.version(ofManifestPath: path), newest - number <= grace, number <= newest else { continue }
            graceVersions.append(number)
            graceFiles.insert(path)
            graceFiles.formUnion(try filesOfDroppedVersion(path, bytes: bytes))
        }
        var deletions: [Deletion] = []
        var keptForGrace: [String] = []
        for (path, bytes) in held where Self.isCatalogFile(path) && !referenced.contains(path) {
            if graceFiles.contains(path) { keptForGrace.append(path) } else { deletions.append(Deletion(path: path, bytes: bytes)) }
        }
        // Manifests last: a delete cut short still finds, on the next run, what they name.
        func rank(_ path: String) -> Int {
            path.hasPrefix("packs/") ? 0 : path.hasPrefix(SplitMetadata.folder + "/") ? 1 : path.hasPrefix("versions/") ? 3 : 2
        }
        deletions.sort { (rank($0.path), $0.path) < (rank($1.path), $1.path) }
        return DeletionPlan(deletions: deletions, keptForGrace: keptForGrace.sorted(), graceVersions: graceVersions.sorted())
    }

    /// Deletes what `plan` lists, in order, reporting each step; files already gone are fine.
    ///
    /// - Returns: how many files were deleted.
    /// - Throws: `publish.destination` at the first file the destination refuses to delete; the
    ///   files before it are gone, nothing a kept version references was touched, and running
    ///   the delete again finishes it.
    @discardableResult
    public func delete(_ plan: DeletionPlan) throws(BuildError) -> Int {
        for (number, deletion) in plan.deletions.enumerated() {
            progress?(.deleting(deletion.path, index: number + 1, of: plan.deletions.count))
            switch destination {
            case .folder(let root):
                let path = root.appending(path: deletion.path).path
                guard unlink(path) == 0 || errno == ENOENT else {
                    throw BuildError(.publishDestination, "cannot delete the file (\(String(cString: strerror(errno)))); nothing a kept version uses was deleted. Check the folder's permissions, then run again to finish",
                                     file: path)
                }
            case .rclone(let remote):
                _ = try runRclone(["deletefile", Self.join(remote, deletion.path)])
            }
        }
        return plan.deletions.count
    }

    /// The most bytes a dropped version's manifest (or one of its metadata files) may have to be
    /// read for the grace: as much as a client accepts.
    static let maximumDroppedManifestBytes: Int64 = 256 << 20

    /// Every file dropped version manifest `path` uses: its packs and, when split, its metadata
    /// files, read from the destination.
    private func filesOfDroppedVersion(_ path: String, bytes: Int64) throws(BuildError) -> Set<String> {
        func unreadable(_ reason: String) -> BuildError {
            BuildError(.publishDestination, "\(reason); its files cannot be kept for the grace, so nothing was deleted. Restore or delete it by hand, or lower --delete-after-versions",
                       file: join(path))
        }
        guard bytes <= Self.maximumDroppedManifestBytes else { throw unreadable("the manifest is larger than any client reads") }
        do {
            switch try PublishedManifest.decode(from: try readDestination(path)) {
            case .full(let manifest):
                return Set(manifest.packs.map(\.archivePath))
            case .split(let split):
                let parts = try SplitMetadata.parts(of: split) { file in try readDestination(file) }
                return Set(parts.files.map(\.path) + parts.bins.flatMap { $0.packs.map(\.pack.archivePath) })
            }
        } catch let error as BuildError {
            throw error
        } catch {
            throw unreadable("the destination's \(path) (a dropped version within the grace) is not a valid manifest: \(error)")
        }
    }

    /// The bytes of the destination's file `path`.
    private func readDestination(_ path: String) throws(BuildError) -> Data {
        if let problem = RelativePath.problem(inCatalogPath: path) {
            throw BuildError(.publishDestination, "a dropped version names '\(path.prefix(200))': \(problem); nothing was deleted", file: join(path))
        }
        switch destination {
        case .folder(let root):
            do { return try Data(contentsOf: root.appending(path: path)) } catch {
                throw BuildError(.publishDestination, "cannot read the file to keep what it names for the grace; nothing was deleted. Run again", file: root.appending(path: path).path, cause: error)
            }
        case .rclone(let remote):
            return try runRclone(["cat", Self.join(remote, path)])
        }
    }

    /// `path` on the destination, for messages.
    private func join(_ path: String) -> String {
        switch destination {
        case .folder(let root): root.appending(path: path).path
        case .rclone(let remote): Self.join(remote, path)
        }
    }

    /// Every regular file the destination holds (relative path to size). A local folder is walked
    /// without following symbolic links; a folder that does not exist holds nothing.
    func listAll() throws(BuildError) -> [String: Int64] {
        switch destination {
        case .folder(let root):
            var isFolder: ObjCBool = false
            guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isFolder) else { return [:] }
            guard isFolder.boolValue else {
                throw BuildError(.publishDestination, "the destination is a file, not a folder; give a folder (or an rclone remote:path)", file: root.path)
            }
            var result: [String: Int64] = [:]
            let base = root.standardizedFileURL.path
            let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey, .isSymbolicLinkKey, .fileSizeKey])
            while let url = enumerator?.nextObject() as? URL {
                guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .isSymbolicLinkKey, .fileSizeKey]),
                      values.isSymbolicLink != true, values.isRegularFile == true else { continue }
                let path = url.standardizedFileURL.path
                guard path.hasPrefix(base + "/") else { continue }
                result[String(path.dropFirst(base.count + 1))] = Int64(values.fileSize ?? 0)
            }
            return result
        case .rclone(let remote):
            let output: Data
            do {
                output = try runRclone(["lsjson", "--recursive", "--files-only", "--no-mimetype", "--no-modtime", remote])
            } catch let error where error.code == .publishDestination && error.message.contains("directory not found") {
                return [:]
            }
            struct Listed: Decodable { var Path: String; var Size: Int64 }
            guard let listed = try? JSONDecoder().decode([Listed].self, from: output) else {
                throw BuildError(.publishDestination, "rclone lsjson printed something that is not its JSON listing; check the rclone version (1.50 or later)", file: remote)
            }
            // The remote's names and sizes come from outside: a name that is not a clean catalog
            // path ("packs/../x") is never a deletion candidate, and a size is at least 0.
            return Dictionary(listed.filter { RelativePath.problem(inCatalogPath: $0.Path) == nil }.map { ($0.Path, max(0, $0.Size)) },
                              uniquingKeysWith: { first, _ in first })
        }
    }
}
