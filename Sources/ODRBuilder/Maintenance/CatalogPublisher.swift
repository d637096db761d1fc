#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFormat

/// Uploads a built catalog folder to where clients download it, in the one order that never lets a
/// client see a `catalog.json` naming a file that is not there: packs, then manifests, then (after
/// reading back what was written) `catalog.json`, through a temporary name and a rename.
///
/// The destination is a local folder (an nginx root, a mounted bucket) or any remote that `rclone`
/// reaches (`remote:bucket/path`: S3, GCS, R2, Azure, WebDAV, SFTP); rclone runs as a process, and
/// only when a remote is the destination. Objects the destination already holds with the same size
/// (and, in a local folder, the same SHA-256) are skipped, so an update uploads only what changed.
/// On remotes, packs and manifests are uploaded with `Cache-Control: public, max-age=31536000,
/// immutable` and `catalog.json` with a short max-age (``Options/catalogMaxAge``).
///
/// Only the catalog folder's own regular files go up: a file the catalog names that is a symbolic
/// link (or behind one, or not a regular file) is refused with `publish.source`, never followed,
/// and every file is hashed as it is copied (before it is handed to rclone), so a pack whose bytes
/// are not its id, or a metadata file that is not its pin, is refused rather than published.
///
/// ```swift
/// let publisher = CatalogPublisher(catalog: CatalogDirectory(root: catalogFolder),
///                                  destination: .parse("r2:game-cdn/live"))
/// let plan = try publisher.plan()          // what would go up, what is there already
/// let report = try publisher.publish()     // uploads, reads back, catalog.json last
/// ```
public struct CatalogPublisher: Sendable {
    /// Where the catalog goes.
    public enum Destination: Sendable, Hashable, CustomStringConvertible {
        /// A local folder (created if missing).
        case folder(URL)
        /// An rclone remote and path, `remote:bucket/path` (or a connection string, `:webdav,url=...:path`).
        case rclone(String)

        /// `remote:path` (text before the first `:` holds no `/`) is an rclone remote; anything
        /// else a local folder. Write `./name:with:colons` for a local folder with a colon.
        public static func parse(_ text: String) -> Destination {
            if let colon = text.firstIndex(of: ":"), !text[..<colon].contains("/") {
                return .rclone(text)
            }
            return .folder(URL(filePath: text, directoryHint: .isDirectory).standardizedFileURL)
        }

        public var description: String {
            switch self {
            case .folder(let url): url.path
            case .rclone(let remote): remote
            }
        }
    }

    /// How the upload behaves.
    public struct Options: Sendable, Hashable {
        /// `max-age` of `catalog.json` in seconds (default 60): how long a CDN or browser may serve
        /// an older index. Packs and manifests are immutable and cached for a year.
        public var catalogMaxAge: Int = 60
        /// The rclone executable: a name looked up on `PATH`, or a path.
        public var rclone: String = "rclone"
        /// Extra arguments for every rclone call (`--config FILE`, `--s3-no-check-bucket`, ...).
        public var rcloneArguments: [String] = []

        public init(catalogMaxAge: Int = 60, rclone: String = "rclone", rcloneArguments: [String] = []) {
            self.catalogMaxAge = catalogMaxAge
            self.rclone = rclone
            self.rcloneArguments = rcloneArguments
        }

        /// The `Cache-Control` value of immutable files (packs, manifests).
        public static let immutableCacheControl = "public, max-age=31536000, immutable"

        /// The `Cache-Control` value of `catalog.json`.
        public var catalogCacheControl: String { "public, max-age=\(catalogMaxAge)" }
    }

    /// One file of the catalog.
    public struct Object: Sendable, Hashable {
        /// What the file is; also the upload order.
        public enum Kind: Int, Sendable, Hashable, Comparable {
            case pack, metadata, manifest, index
            public static func < (a: Kind, b: Kind) -> Bool { a.rawValue < b.rawValue }
        }

        /// The path relative to the catalog root (`packs/<id>.zip`).
        public var path: String
        public var kind: Kind
        public var bytes: Int64
        /// The SHA-256 of the file's bytes.
        public var sha256: String
    }

    /// What a publish would do.
    public struct Plan: Sendable, Hashable {
        /// Files to upload, in order: packs, manifests, `catalog.json` last.
        public var uploads: [Object]
        /// Files the destination holds already (same size, and same SHA-256 where it can tell).
        public var present: [Object]
        /// Bytes to upload.
        public var uploadBytes: Int64 { uploads.reduce(0) { $0 + $1.bytes } }
    }

    /// What a publish did.
    public struct Report: Sendable, Hashable {
        public var plan: Plan
        /// Files read back and found as uploaded (every file the catalog names, and `catalog.json`).
        public var verified: Int
    }

    /// A step of the publish, for progress output.
    public enum Step: Sendable, Hashable {
        case uploading(Object, index: Int, of: Int)
        case readingBack(files: Int)
        case renaming(from: String, to: String)
        /// `--delete`: removing a file no kept version references (``deletionPlan(keepingDroppedVersions:requirePublished:)``).
        case deleting(String, index: Int, of: Int)
    }

    public var catalog: CatalogDirectory
    public var destination: Destination
    public var options: Options
    /// Called before each step.
    public var progress: (@Sendable (Step) -> Void)?

    public init(catalog: CatalogDirectory, destination: Destination, options: Options = Options(),
                progress: (@Sendable (Step) -> Void)? = nil) {
        self.catalog = catalog
        self.destination = destination
        self.options = options
        self.progress = progress
    }

    // MARK: Plan

    /// Every file of the catalog: each listed version's manifest and the packs it names, and
    /// `catalog.json`, checked against the local folder first (a file missing or of the wrong size
    /// here stops the publish before anything is written).
    public func objects() throws(BuildError) -> [Object] {
        let index = try catalog.loadIndex()
        var objects: [String: Object] = [:]
        for entry in index.versions {
            let loaded = try catalog.loadVersion(entry.number, in: index)
            let manifest = loaded.manifest
            // A split version's bins and tables (checked against their pins as it loaded) go up
            // before the manifest that pins them.
            for file in loaded.split?.files ?? [] where objects[file.path] == nil {
                objects[file.path] = Object(path: file.path, kind: .metadata, bytes: file.pin.size, sha256: file.pin.sha256)
            }
            for pack in manifest.packs where objects[pack.archivePath] == nil {
                let size = try localSize(of: pack.archivePath)
                guard size == pack.archiveBytes else {
                    throw BuildError(.packCorrupt, "the pack is \(size) bytes, but version \(entry.number) says \(pack.archiveBytes); run odrpack verify before publishing",
                                     file: catalog.url(of: pack.archivePath).path)
                }
                objects[pack.archivePath] = Object(path: pack.archivePath, kind: .pack, bytes: size, sha256: pack.id)
            }
            objects[entry.manifest] = Object(path: entry.manifest, kind: .manifest, bytes: try localSize(of: entry.manifest),
                                             sha256: try localHash(of: entry.manifest))
        }
        objects[CatalogIndex.fileName] = Object(path: CatalogIndex.fileName, kind: .index, bytes: try localSize(of: CatalogIndex.fileName),
                                                sha256: try localHash(of: CatalogIndex.fileName))
        return objects.values.sorted { ($0.kind, $0.path) < ($1.kind, $1.path) }
    }

    /// What would be uploaded and what the destination holds already; writes nothing.
    public func plan() throws(BuildError) -> Plan {
        let objects = try objects()
        let remote = try listDestination()
        var plan = Plan(uploads: [], present: [])
        for object in objects {
            // catalog.json always goes up: it is the one file that changes under the same name.
            if object.kind != .index, let held = remote[object.path], held.bytes == object.bytes,
               held.sha256.map({ $0 == object.sha256 }) ?? true {
                plan.present.append(object)
            } else {
                plan.uploads.append(object)
            }
        }
        return plan
    }

    // MARK: Publish

    /// Uploads what ``plan()`` lists (packs, manifests), reads back every file the catalog names,
    /// then uploads `catalog.json` under a temporary name, renames it into place and reads it back.
    ///
    /// - Throws: ``BuildError``: `publish.toolMissing` without rclone for a remote,
    ///   `publish.destination` when the destination refuses a write (nothing later is written, and
    ///   `catalog.json` is untouched, so clients keep the previous catalog; run again to finish),
    ///   `publish.readBack` when a file reads back different.
    public func publish() throws(BuildError) -> Report {
        let plan = try plan()
        let files = plan.uploads.filter { $0.kind != .index }
        for (number, object) in files.enumerated() {
            progress?(.uploading(object, index: number + 1, of: plan.uploads.count))
            try upload(object, as: object.path, cacheControl: Options.immutableCacheControl)
        }
        let named = plan.uploads.filter { $0.kind != .index } + plan.present
        progress?(.readingBack(files: named.count))
        try readBack(named, hashing: Set(files.map(\.path)))
        guard let index = plan.uploads.first(where: { $0.kind == .index }) else {
            return Report(plan: plan, verified: named.count)
        }
        progress?(.uploading(index, index: plan.uploads.count, of: plan.uploads.count))
        let temporary = "\(CatalogIndex.fileName).publish-\(getpid())"
        try upload(index, as: temporary, cacheControl: options.catalogCacheControl)
        progress?(.renaming(from: temporary, to: index.path))
        try rename(temporary, to: index.path)
        try readBack([index], hashing: [index.path])
        return Report(plan: plan, verified: named.count + 1)
    }

    // MARK: Local files

    /// Opens the catalog's file `relative` for reading, after checking the name (a path inside the
    /// catalog) and that neither it nor a folder on the way is a symbolic link: publish copies the
    /// catalog folder's own regular files only, never what a link points to.
    ///
    /// - Returns: the open descriptor (the caller closes it) and the file's size.
    private func openLocal(_ relative: String) throws(BuildError) -> (descriptor: Int32, size: Int64) {
        let path = catalog.url(of: relative).path
        if let problem = RelativePath.problem(inCatalogPath: relative) {
            throw BuildError(.catalogMalformed, "the catalog names the file '\(relative.prefix(200))': \(problem); rebuild the catalog", file: path)
        }
        var folder = catalog.root.path
        for component in relative.split(separator: "/").dropLast() {
            folder += "/" + component
            var info = stat()
            if lstat(folder, &info) == 0, info.st_mode & S_IFMT != S_IFDIR {
                throw BuildError(.publishSource, "is a symbolic link or not a folder; publish copies only the catalog folder's own files. Replace it with a real folder, then run again",
                                 file: folder)
            }
        }
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP {
                throw BuildError(.publishSource, "is a symbolic link; publish copies only the catalog folder's own regular files. Replace the link with the file it points to (cp --remove-destination), then run again",
                                 file: path)
            }
            if code == ENOENT || code == ENOTDIR {
                throw BuildError(.missingFile, "the catalog names this file but the catalog folder lacks it; rebuild or run odrpack verify before publishing",
                                 file: path)
            }
            throw BuildError(.catalogIO, "cannot open the file to publish it (\(String(cString: strerror(code))))", file: path)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG else {
            close(descriptor)
            throw BuildError(.publishSource, "is not a regular file; publish copies only the catalog folder's own regular files", file: path)
        }
        return (descriptor, Int64(info.st_size))
    }

    private func localSize(of relative: String) throws(BuildError) -> Int64 {
        let (descriptor, size) = try openLocal(relative)
        close(descriptor)
        return size
    }

    private func localHash(of relative: String) throws(BuildError) -> String {
        try copyLocal(relative, to: nil)
    }

    /// Reads the catalog's file `relative` whole (see ``openLocal(_:)``), writing each piece to
    /// `output` when given; returns the SHA-256 of what it read.
    private func copyLocal(_ relative: String, to output: Int32?) throws(BuildError) -> String {
        let (descriptor, _) = try openLocal(relative)
        defer { close(descriptor) }
        var hash = StreamingSHA256()
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw BuildError(.catalogIO, "cannot read the file to publish it (\(String(cString: strerror(errno))))", file: catalog.url(of: relative).path)
            }
            if count == 0 { break }
            // The errno of a failed write, if one failed.
            let failure: Int32? = buffer.withUnsafeBytes { raw in
                let piece = UnsafeRawBufferPointer(rebasing: raw[..<count])
                hash.update(piece)
                guard let output else { return nil }
                var written = 0
                while written < count {
                    let n = write(output, piece.baseAddress! + written, count - written)
                    if n < 0, errno == EINTR { continue }
                    guard n > 0 else { return n < 0 ? errno : ENOSPC }
                    written += n
                }
                return nil
            }
            if let failure {
                throw BuildError(.publishDestination, "cannot write into the destination folder (\(String(cString: strerror(failure)))); check that it is writable and has room, then run again",
                                 file: relative)
            }
        }
        return hash.finalize()
    }

    /// Refuses `object` when `digest`, the SHA-256 of the bytes copied, is not the one the catalog
    /// gives it (a pack's id, a metadata file's pin, the hash read when the plan was made).
    private func check(_ object: Object, digest: String) throws(BuildError) {
        guard digest != object.sha256 else { return }
        let what = object.kind == .pack ? "pack \(object.sha256)" : "\(object.path), expected SHA-256 \(object.sha256.prefix(16))…,"
        throw BuildError(.publishSource, "\(what) has SHA-256 \(digest) in the catalog folder: its bytes are not the ones the catalog names (damaged, replaced, or changed while publishing). Nothing of it was published; rebuild or run odrpack verify, then run again",
                         file: catalog.url(of: object.path).path)
    }

    // MARK: Destination

    /// What the destination holds: size, and SHA-256 where it can tell (a local folder).
    private func listDestination() throws(BuildError) -> [String: (bytes: Int64, sha256: String?)] {
        switch destination {
        case .folder(let root):
            var result: [String: (bytes: Int64, sha256: String?)] = [:]
            var isFolder: ObjCBool = false
            if FileManager.default.fileExists(atPath: root.path, isDirectory: &isFolder), !isFolder.boolValue {
                throw BuildError(.publishDestination, "the destination is a file, not a folder; give a folder (or an rclone remote:path)", file: root.path)
            }
            for object in try objects() where object.kind != .index {
                let path = root.appending(path: object.path).path
                guard let attributes = try? FileManager.default.attributesOfItem(atPath: path),
                      attributes[.type] as? FileAttributeType == .typeRegular,
                      let size = (attributes[.size] as? NSNumber)?.int64Value else { continue }
                // Same size: hashed, since a local folder can tell (a torn copy of the right size is not skipped).
                let hash = size == object.bytes ? try? ContentHash.sha256Hex(ofFileAt: URL(filePath: path)) : nil
                result[object.path] = (size, hash)
            }
            return result
        case .rclone:
            return try listAll().mapValues { (bytes: $0, sha256: nil) }
        }
    }

    private func upload(_ object: Object, as relative: String, cacheControl: String) throws(BuildError) {
        let source = catalog.url(of: object.path)
        switch destination {
        case .folder(let root):
            let target = root.appending(path: relative)
            let temporary = target.deletingLastPathComponent().appending(path: ".\(target.lastPathComponent).publish-\(getpid())")
            do {
                try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            } catch {
                throw BuildError(.publishDestination, "cannot write into the destination folder (\(Self.reason(error))); check that it exists, is a folder and is writable, then run again",
                                 file: target.path, cause: error)
            }
            unlink(temporary.path)
            let output = open(temporary.path, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0o644)
            guard output >= 0 else {
                throw BuildError(.publishDestination, "cannot write into the destination folder (\(String(cString: strerror(errno)))); check that it exists, is a folder and is writable, then run again",
                                 file: target.path)
            }
            do throws(BuildError) {
                defer { close(output) }
                // Hashed as it is copied: what goes up is exactly what was checked.
                try check(object, digest: try copyLocal(object.path, to: output))
            } catch {
                unlink(temporary.path)
                throw error
            }
            guard Glibc.rename(temporary.path, target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw BuildError(.publishDestination, "cannot move the uploaded file into place (\(reason)); check the destination folder, then run again",
                                 file: target.path)
            }
        case .rclone(let remote):
            // rclone reads the file itself: hashed (and checked a regular file) just before.
            try check(object, digest: try localHash(of: object.path))
            _ = try runRclone(["copyto", source.path, Self.join(remote, relative), "--header-upload", "Cache-Control: \(cacheControl)"])
        }
    }

    private func rename(_ from: String, to: String) throws(BuildError) {
        switch destination {
        case .folder(let root):
            guard Glibc.rename(root.appending(path: from).path, root.appending(path: to).path) == 0 else {
                throw BuildError(.publishDestination, "cannot rename \(from) to \(to) (\(String(cString: strerror(errno)))); run again",
                                 file: root.appending(path: to).path)
            }
        case .rclone(let remote):
            _ = try runRclone(["moveto", Self.join(remote, from), Self.join(remote, to)])
        }
    }

    /// Checks that the destination holds each object with its size (and, for `hashing` paths in a
    /// local folder, its SHA-256).
    private func readBack(_ objects: [Object], hashing: Set<String>) throws(BuildError) {
        switch destination {
        case .folder(let root):
            for object in objects {
                let url = root.appending(path: object.path)
                let size = (try? FileManager.default.attributesOfItem(atPath: url.path)[.size] as? NSNumber)??.int64Value
                let hash = hashing.contains(object.path) ? try? ContentHash.sha256Hex(ofFileAt: url) : object.sha256
                guard size == object.bytes, hash == object.sha256 else {
                    throw BuildError(.publishReadBack, "the destination holds \(size.map { "\($0) bytes" } ?? "nothing") where \(object.bytes) bytes with SHA-256 \(object.sha256.prefix(16))… were written; something else writes there, or the disk failed. Run again",
                                     file: url.path)
                }
            }
        case .rclone(let remote):
            let listed = try listDestination()
            for object in objects {
                guard let held = listed[object.path], held.bytes == object.bytes else {
                    throw BuildError(.publishReadBack, "the remote lists \(listed[object.path].map { "\($0.bytes) bytes" } ?? "nothing") for a file uploaded with \(object.bytes) bytes; run again",
                                     file: Self.join(remote, object.path))
                }
            }
        }
    }

    // MARK: rclone

    /// `remote` joined with a relative path (`r2:bucket/live` + `packs/a.zip`).
    static func join(_ remote: String, _ relative: String) -> String {
        remote.hasSuffix("/") || remote.hasSuffix(":") ? remote + relative : remote + "/" + relative
    }

    /// The rclone executable, or `publish.toolMissing`.
    func rcloneExecutable() throws(BuildError) -> URL {
        let name = options.rclone
        if name.contains("/") {
            guard FileManager.default.isExecutableFile(atPath: name) else { throw Self.missingRclone(name) }
            return URL(filePath: name)
        }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        for folder in path.split(separator: ":") {
            let candidate = URL(filePath: String(folder)).appending(path: name)
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        throw Self.missingRclone(name)
    }

    private static func missingRclone(_ name: String) -> BuildError {
        BuildError(.publishToolMissing,
                   "publishing to a remote needs rclone, and '\(name)' was not found on PATH; install it (apt install rclone, or https://rclone.org/install/) and configure the remote with rclone config, or publish to a local folder",
                   value: name)
    }

    /// Runs rclone with `arguments`; its standard output, or `publish.destination` with what it said.
    func runRclone(_ arguments: [String]) throws(BuildError) -> Data {
        let process = Process()
        process.executableURL = try rcloneExecutable()
        process.arguments = arguments + options.rcloneArguments
        let output = Pipe()
        let errors = Pipe()
        process.standardOutput = output
        process.standardError = errors
        process.standardInput = FileHandle.nullDevice
        do { try process.run() } catch {
            throw BuildError(.publishToolMissing, "rclone could not be started (\(Self.reason(error))); check the installation", value: options.rclone, cause: error)
        }
        // Read both pipes while it runs: a listing larger than a pipe's buffer would block it.
        let collected = Locked(Data())
        let stderrRead = DispatchSemaphore(value: 0)
        Thread {
            collected.withLock { $0 = errors.fileHandleForReading.readDataToEndOfFile() }
            stderrRead.signal()
        }.start()
        let data = output.fileHandleForReading.readDataToEndOfFile()
        stderrRead.wait()
        process.waitUntilExit()
        guard process.terminationStatus == 0 else {
            let said = String(decoding: collected.withLock { $0 }, as: UTF8.self)
                .split(separator: "\n").suffix(3).joined(separator: " | ")
            throw BuildError(.publishDestination, "rclone \(arguments.first ?? "") failed (exit \(process.terminationStatus)): \(said). Check the remote (rclone config), then run again; files already uploaded are skipped",
                             file: arguments.last)
        }
        return data
    }

    private static func reason(_ error: any Error) -> String {
        if let cocoa = error as? CocoaError, let underlying = cocoa.userInfo[NSUnderlyingErrorKey] as? NSError,
           underlying.domain == NSPOSIXErrorDomain {
            return String(cString: strerror(Int32(underlying.code)))
        }
        return (error as NSError).localizedDescription
    }
}
