#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFormat

/// A catalog folder on disk: `catalog.json`, `versions/<n>.json` and `packs/<sha256>.zip`.
///
/// It enforces the publishing rules: immutable files are written once (a second write with the same
/// bytes is a no-op, with other bytes an error) and `catalog.json` is replaced atomically, so a
/// reader sees either the old index or the new one, never a torn file.
public struct CatalogDirectory: Sendable {
    /// The catalog's root folder.
    public var root: URL

    /// A catalog at `root` (which need not exist yet).
    public init(root: URL) {
        self.root = root
    }

    /// The location of a file given by its path relative to the root.
    public func url(of relative: String) -> URL {
        root.appending(path: relative)
    }

    /// The location of pack `id`'s archive.
    public func packURL(id: String) -> URL {
        url(of: PackRecord.archivePath(forID: id))
    }

    /// Whether the catalog has an index yet.
    public var exists: Bool {
        FileManager.default.fileExists(atPath: url(of: CatalogIndex.fileName).path)
    }

    /// Reads and validates `catalog.json`, or returns `nil` when there is none.
    public func loadIndexIfPresent() throws(BuildError) -> CatalogIndex? {
        guard exists else { return nil }
        return try loadIndex()
    }

    /// Reads and validates `catalog.json`.
    public func loadIndex() throws(BuildError) -> CatalogIndex {
        let location = url(of: CatalogIndex.fileName)
        let data: Data
        do {
            data = try Data(contentsOf: location)
        } catch {
            throw BuildError(
                .catalogIO, "cannot read the catalog index; is this a catalog folder built by odrpack?",
                file: location.path, cause: error)
        }
        do {
            return try CatalogIndex.decode(from: data)
        } catch {
            throw BuildError(.catalogMalformed, error.message, file: location.path, key: error.field, cause: error)
        }
    }

    /// Reads and validates the manifest of version `number` that `index` lists; a split manifest
    /// (format 3) is assembled from its bins and tables, each checked against its pin.
    public func loadManifest(version number: Int, in index: CatalogIndex) throws(BuildError) -> VersionManifest {
        try loadVersion(number, in: index).manifest
    }

    /// A version as published: its whole manifest and, when it is split, its parts.
    public struct LoadedVersion: Sendable {
        /// The whole manifest (assembled, for a split version).
        public var manifest: VersionManifest
        /// The split manifest, its bins and tables; `nil` for a whole manifest (format 1, 2 or 4).
        public var split: SplitMetadata.Parts?
    }

    /// Reads and validates version `number` that `index` lists, keeping a split version's parts.
    ///
    /// - Parameter reading: given each file read (its catalog path and bytes), the manifest first.
    ///
    /// - Throws: `catalog.unknownVersion`, `verify.missingFile` (the manifest or one of its
    ///   metadata files), `catalog.malformed` (naming the file at fault).
    public func loadVersion(
        _ number: Int, in index: CatalogIndex, reading: (String, Data) -> Void = { _, _ in }
    ) throws(BuildError) -> LoadedVersion {
        guard let entry = index.version(number) else {
            throw BuildError(
                .unknownVersion,
                "the catalog has no version \(number); it has \(index.versions.map { String($0.number) }.joined(separator: ", "))",
                file: url(of: CatalogIndex.fileName).path, value: String(number))
        }
        let location = url(of: entry.manifest)
        let data: Data
        do {
            data = try Data(contentsOf: location)
        } catch {
            throw BuildError(.missingFile, "the version manifest listed in catalog.json is missing", file: location.path, cause: error)
        }
        reading(entry.manifest, data)
        let loaded: LoadedVersion
        do {
            switch try PublishedManifest.decode(from: data) {
            case .full(let manifest):
                loaded = LoadedVersion(manifest: manifest, split: nil)
            case .split(let split):
                let parts = try SplitMetadata.parts(of: split) { path in
                    do {
                        let data = try Data(contentsOf: url(of: path))
                        reading(path, data)
                        return data
                    } catch {
                        throw BuildError(
                            .missingFile, "a metadata file version \(number) pins is missing; restore it from a backup or rebuild the catalog",
                            file: url(of: path).path, cause: error)
                    }
                }
                loaded = LoadedVersion(manifest: try parts.assembled(), split: parts)
            }
        } catch let error as BuildError {
            throw error
        } catch let error as FormatError {
            let file = error.field.map { $0.hasPrefix(SplitMetadata.folder + "/") ? url(of: $0).path : nil } ?? nil
            // A metadata file that is not what its pin says: as for a manifest and its pin in catalog.json.
            let code: BuildError.Code = file != nil && [.hashMismatch, .sizeMismatch].contains(error.code) ? .manifestPinMismatch : .catalogMalformed
            throw BuildError(code, error.message, file: file ?? location.path, key: file == nil ? error.field : nil, cause: error)
        } catch {
            throw BuildError(.catalogMalformed, "\(error)", file: location.path, cause: error)
        }
        let manifest = loaded.manifest
        guard manifest.version == number, manifest.catalogID == index.id else {
            throw BuildError(
                .catalogMalformed,
                "the manifest says catalog '\(manifest.catalogID)' version \(manifest.version), but catalog.json lists it as '\(index.id)' version \(number)",
                file: location.path)
        }
        return loaded
    }

    /// Creates the catalog's folders.
    public func createLayout() throws(BuildError) {
        for folder in ["packs", "versions"] {
            do {
                try FileManager.default.createDirectory(at: url(of: folder), withIntermediateDirectories: true)
            } catch {
                throw BuildError(.catalogIO, "cannot create the catalog folder", file: url(of: folder).path, cause: error)
            }
        }
    }

    /// Writes an immutable file once.
    ///
    /// - Returns: `false` when the file already existed with exactly these bytes.
    /// - Throws: `catalog.immutableConflict` when it exists with other bytes; `catalog.io`.
    @discardableResult
    public func writeImmutable(_ data: Data, at relative: String) throws(BuildError) -> Bool {
        let location = url(of: relative)
        let folder = location.deletingLastPathComponent()
        let temporary = folder.appending(path: ".tmp-\(UUID().uuidString)-\(location.lastPathComponent)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try data.write(to: temporary)
            try Self.flush(temporary)
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw BuildError(.catalogIO, "cannot write the file; check free space and permissions", file: location.path, cause: error)
        }
        if try publish(temporary, to: location) { return true }
        guard (try? Data(contentsOf: location)) == data else {
            throw BuildError(
                .immutableConflict,
                "the file already exists with different content and published files are never overwritten; remove it only if no client has seen it",
                file: location.path)
        }
        return false
    }

    /// Writes many content-addressed immutable files at once (split metadata: thousands of small
    /// files named by their SHA-256). A file already there must have exactly these bytes
    /// (`catalog.immutableConflict` otherwise) and is left untouched; each new one goes to a
    /// temporary file, all of them are flushed to disk (several at once), then each is renamed into
    /// place. Renaming rather than linking like ``writeImmutable(_:at:)`` leaves no temporary
    /// file to delete: thousands of those deletions made ext4's inode allocation, and the build,
    /// several times slower. Replacing a file that appeared meanwhile is harmless, since under a
    /// content-addressed name it holds the same bytes.
    ///
    /// - Returns: how many files were new.
    /// - Throws: `catalog.immutableConflict`; `catalog.io`.
    public func writeImmutableFiles(_ files: [(path: String, data: Data)]) throws(BuildError) -> Int {
        var pending: [(temporary: URL, location: URL, data: Data)] = []
        var folders = Set<String>()
        for file in files {
            let location = url(of: file.path)
            if FileManager.default.fileExists(atPath: location.path) {
                guard (try? Data(contentsOf: location)) == file.data else {
                    throw BuildError(
                        .immutableConflict,
                        "the file already exists with different content and published files are never overwritten; remove it only if no client has seen it",
                        file: location.path)
                }
                continue
            }
            let folder = location.deletingLastPathComponent()
            if folders.insert(folder.path).inserted {
                do {
                    try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
                } catch {
                    throw BuildError(.catalogIO, "cannot create the catalog folder", file: folder.path, cause: error)
                }
            }
            pending.append((folder.appending(path: ".tmp-\(UUID().uuidString)-\(location.lastPathComponent)"), location, file.data))
        }
        guard !pending.isEmpty else { return 0 }
        defer { for file in pending { unlink(file.temporary.path) } }
        // Written and flushed by several threads at once, each file with one write and one fsync
        // (Data.write adds a flush of its own on Linux, and the file system serves concurrent
        // flushes together).
        let failure = Locked<(URL, Int32)?>(nil)
        let jobs = pending
        let workers = min(16, jobs.count)
        DispatchQueue.concurrentPerform(iterations: workers) { worker in
            for index in stride(from: worker, to: jobs.count, by: workers) {
                let code = Self.writeAndFlush(jobs[index].data, to: jobs[index].temporary)
                if code != 0 { failure.withLock { $0 = $0 ?? (jobs[index].location, code) } }
            }
        }
        if let (location, code) = failure.withLock({ $0 }) {
            throw BuildError(.catalogIO, "cannot write the file (\(String(cString: strerror(code)))); check free space and permissions", file: location.path)
        }
        let written = pending.count
        while let file = pending.last {
            guard rename(file.temporary.path, file.location.path) == 0 else {
                let code = errno
                throw BuildError(.catalogIO, "cannot publish the file: \(String(cString: strerror(code)))", file: file.location.path)
            }
            pending.removeLast()
        }
        return written
    }

    /// Creates `location` (which must not exist), writes `data` and flushes it; returns 0 or the `errno`.
    private static func writeAndFlush(_ data: Data, to location: URL) -> Int32 {
        let descriptor = open(location.path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else { return errno }
        defer { close(descriptor) }
        let complete = data.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let count = write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if count < 0 && errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        guard complete, fsync(descriptor) == 0 else { return errno == 0 ? EIO : errno }
        return 0
    }

    /// Moves a finished temporary file to `location` unless a file is already there, atomically:
    /// `link(2)` fails instead of replacing, so two builds racing for one name cannot overwrite
    /// each other. The temporary file is removed either way.
    ///
    /// - Returns: `false` when `location` already existed (and was left untouched).
    public func publish(_ temporary: URL, to location: URL) throws(BuildError) -> Bool {
        defer { unlink(temporary.path) }
        guard link(temporary.path, location.path) == 0 else {
            let code = errno
            if code == EEXIST { return false }
            throw BuildError(
                .catalogIO, "cannot publish the file: \(String(cString: strerror(code)))", file: location.path,
                cause: POSIXErrorCode(rawValue: code).map { POSIXError($0) })
        }
        return true
    }

    /// Replaces `catalog.json` atomically (temporary file, flush, rename).
    ///
    /// First pins every version that has no pin yet (the SHA-256 and size of its manifest file), so
    /// an older catalog gains its pins on its next change; then, with `signing`, sets `expires` and
    /// signs. Without `signing`, an index that was signed on disk is not replaced by an unsigned one.
    ///
    /// - Throws: `signing.required` when the catalog on disk is signed and `signing` is `nil`;
    ///   `verify.missingFile` when a manifest to pin is missing; `catalog.io`.
    public func writeIndex(_ index: CatalogIndex, signing: CatalogSigning? = nil) throws(BuildError) {
        var index = index
        if signing == nil, (try? loadIndexIfPresent())?.isSigned == true {
            throw BuildError(
                .signingRequired,
                "catalog.json is signed; sign the change too (--sign-with KEY), or clients that trust the key will refuse the catalog",
                file: url(of: CatalogIndex.fileName).path)
        }
        for (i, entry) in index.versions.enumerated() where entry.sha256 == nil {
            let location = url(of: entry.manifest)
            let data: Data
            do { data = try Data(contentsOf: location) } catch {
                throw BuildError(.missingFile, "the version manifest listed in catalog.json is missing, so it cannot be pinned", file: location.path, cause: error)
            }
            index.versions[i].sha256 = ContentHash.sha256Hex(of: data)
            index.versions[i].size = Int64(data.count)
        }
        if let signing {
            index = try signing.sign(index)
        } else {
            index.expires = nil
            index.signatures = nil
        }
        let data: Data
        do {
            data = try index.encoded()
        } catch {
            throw BuildError(.catalogMalformed, "the new catalog index is invalid: \(error)", file: url(of: CatalogIndex.fileName).path, cause: error)
        }
        try writeAtomically(data, to: url(of: CatalogIndex.fileName))
    }

    /// A fresh temporary file name in `folder`, hidden so scanners and servers ignore it.
    public func temporaryURL(in folder: String, suffix: String) -> URL {
        url(of: "\(folder)/.tmp-\(UUID().uuidString)\(suffix)")
    }

    /// Writes `data` to a temporary file next to `location`, flushes it and renames it into place.
    func writeAtomically(_ data: Data, to location: URL) throws(BuildError) {
        let folder = location.deletingLastPathComponent()
        let temporary = folder.appending(path: ".tmp-\(UUID().uuidString)-\(location.lastPathComponent)")
        do {
            try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
            try data.write(to: temporary)
            try Self.flush(temporary)
            guard rename(temporary.path, location.path) == 0 else {
                throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO)
            }
        } catch {
            try? FileManager.default.removeItem(at: temporary)
            throw BuildError(.catalogIO, "cannot write the file; check free space and permissions", file: location.path, cause: error)
        }
    }

    /// Flushes a file's bytes to disk, so a rename that publishes it never exposes an empty file after a crash.
    static func flush(_ location: URL) throws {
        let descriptor = open(location.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
}
