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

    private func localSize(of relative: String) throws(BuildError) -> Int64 {
        let path = catalog.url(of: relative).path
        do {
            let attributes = try FileManager.default.attributesOfItem(atPath: path)
            guard let size = (attributes[.size] as? NSNumber)?.int64Value else { throw CocoaError(.fileReadUnknown) }
            return size
        } catch {
            throw BuildError(.missingFile, "the catalog names this file but the catalog folder lacks it; rebuild or run odrpack verify before publishing",
                             file: path, cause: error)
        }
    }

    private func localHash(of relative: String) throws(BuildError) -> String {
        let url = catalog.url(of: relative)
        do { return try ContentHash.sha256Hex(ofFileAt: url) } catch {
            throw BuildError(.catalogIO, "cannot read the file to publish it", file: url.path, cause: error)
        }
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
            return Dictionary(listed.map { ($0.Path, (bytes: $0.Size, sha256: nil)) }, uniquingKeysWith: { first, _ in first })
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
                try? FileManager.default.removeItem(at: temporary)
                try FileManager.default.copyItem(at: source, to: temporary)
            } catch {
                try? FileManager.default.removeItem(at: temporary)
                throw BuildError(.publishDestination, "cannot write into the destination folder (\(Self.reason(error))); check that it exists, is a folder and is writable, then run again",
                                 file: target.path, cause: error)
            }
            guard Glibc.rename(temporary.path, target.path) == 0 else {
                let reason = String(cString: strerror(errno))
                try? FileManager.default.removeItem(at: temporary)
                throw BuildError(.publishDestination, "cannot move the uploaded file into place (\(reason)); check the destination folder, then run again",
                                 file: target.path)
            }
        case .rclone(let remote):
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
    private func runRclone(_ arguments: [String]) throws(BuildError) -> Data {
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
