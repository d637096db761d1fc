#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFormat

/// What `stat` says of a file or folder (links followed): enough to notice that it changed.
///
/// A folder's modification and change times move whenever an entry is added to it, removed from
/// it or renamed in it; a file's move whenever it is written, and its change time also on
/// `chmod`, `touch -d` and link count changes, and no program can set the change time back.
struct FileStamp: Equatable, Sendable {
    var device: UInt64
    var inode: UInt64
    var size: Int64
    /// Nanoseconds since 1970.
    var modificationTime: Int64
    /// Nanoseconds since 1970.
    var changeTime: Int64

    init(device: UInt64, inode: UInt64, size: Int64, modificationTime: Int64, changeTime: Int64) {
        self.device = device
        self.inode = inode
        self.size = size
        self.modificationTime = modificationTime
        self.changeTime = changeTime
    }

    init(_ info: stat) {
        device = UInt64(info.st_dev)
        inode = UInt64(info.st_ino)
        size = Int64(info.st_size)
        modificationTime = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
        changeTime = Int64(info.st_ctim.tv_sec) * 1_000_000_000 + Int64(info.st_ctim.tv_nsec)
    }

    /// The stamp of the file or folder at `path`, or `nil` when it cannot be `stat`ed.
    static func of(path: String) -> FileStamp? {
        var info = stat()
        return stat(path, &info) == 0 ? FileStamp(info) : nil
    }

    /// The wall clock, in nanoseconds since 1970.
    static func now() -> Int64 {
        var time = timespec()
        clock_gettime(CLOCK_REALTIME, &time)
        return Int64(time.tv_sec) * 1_000_000_000 + Int64(time.tv_nsec)
    }
}

/// The proof that rebuilding would change nothing, kept beside the build cache
/// (`<cache>.unchanged`): a rebuild that finds everything the proof lists as it was returns the
/// report of a rebuild with nothing changed without reading the rules, the cache or the catalog's
/// manifests, planning or writing anything.
///
/// A build that publishes or keeps a version records what decided its outcome:
/// - a key over every input that is not a file in the assets folder: the `odrpack` executable,
///   the paths of the assets, rules, catalog and cache, every option, and the rules file's bytes
///   (so its tags, variants, limits, compression rules and `splitMetadata`);
/// - every folder walked and every file scanned (device, inode, size, modification and change
///   time): an added, removed, renamed or written file changes one of them;
/// - the SHA-256 of every catalog file the next build reads to compare with the latest version
///   (`catalog.json`, the latest version's manifest and its split metadata files), and the size
///   of each of the latest version's packs (what a build checks before reusing one);
/// - the build cache file's stamp (a cache deleted or replaced means a full build);
/// - the report such a rebuild gives.
///
/// A proof is only written when every folder and file it lists last changed at least
/// ``BuildOptions/unchangedProofMargin`` before the scan began (2 s by default, the coarsest
/// timestamp of common file systems), so that a file written during or just before the scan cannot
/// keep its time. Signed builds (which always write `catalog.json`), builds without a cache and
/// scans that skipped special files, dangling links or link loops write none. Any build that does
/// not take the proof removes it first.
struct UnchangedBuild {
    static let header = "odrpack unchanged-build 1"

    var key: String
    var cache: FileStamp
    var folders: [(path: String, stamp: FileStamp)]
    var files: [(path: String, stamp: FileStamp)]
    /// Catalog files by path inside the catalog, with their SHA-256.
    var metadata: [(path: String, sha256: String)]
    /// Pack files by path inside the catalog, with their sizes.
    var packs: [(path: String, size: Int64)]
    /// The JSON of the report.
    var report: Data

    /// Where the proof for the build cache at `cache` is kept.
    static func location(forCache cache: URL) -> URL {
        URL(filePath: cache.path + ".unchanged")
    }

    /// Removes the proof kept beside `cache`.
    static func forget(forCache cache: URL) {
        _ = unlink(location(forCache: cache).path)
    }

    /// The key of a build with `options` and rules file bytes `rules`.
    static func key(options: BuildOptions, rules: Data) -> String {
        func path(_ url: URL?) -> String { url?.standardizedFileURL.path ?? "-" }
        let executable = FileStamp.of(path: "/proc/self/exe") ?? Bundle.main.executablePath.flatMap { FileStamp.of(path: $0) }
        let pack = options.packOptions
        let fields: [String] = [
            header,
            executable.map { "\($0.device) \($0.inode) \($0.size) \($0.modificationTime) \($0.changeTime)" } ?? "-",
            path(options.assets), path(options.rulesURL), path(options.output), path(options.cache),
            options.catalogID.map { "id " + $0 } ?? "-", options.distribution, "\(options.allowOversize)",
            "\(pack.zip64Threshold) \(pack.compressionLevel) \(pack.minimumSavings) \(pack.chunkThreshold)",
            "\(pack.chunkSizes.minimumSize) \(pack.chunkSizes.averageSize) \(pack.chunkSizes.maximumSize)",
            options.splitMetadata.map { "\($0)" } ?? "-",
            ContentHash.sha256Hex(of: rules),
        ]
        return ContentHash.sha256Hex(of: Data(fields.joined(separator: "\u{0}").utf8))
    }

    // MARK: Checking

    /// The report of a rebuild with nothing changed, when the proof kept for `options` still holds.
    static func report(options: BuildOptions, key: String) -> BuildReport? {
        guard let cacheURL = options.cache,
              let data = try? Data(contentsOf: location(forCache: cacheURL)),
              let proof = UnchangedBuild(parsing: data, key: key),
              FileStamp.of(path: cacheURL.path) == proof.cache,
              proof.holds(assets: options.assets.path, catalog: CatalogDirectory(root: options.output))
        else { return nil }
        return try? JSONDecoder().decode(BuildReport.self, from: proof.report)
    }

    /// Whether every entry's path under `root` has the stamp recorded.
    private static func unchanged(_ entries: ArraySlice<(path: String, stamp: FileStamp)>, root: String) -> Bool {
        entries.allSatisfy { FileStamp.of(path: $0.path.isEmpty ? root : root + "/" + $0.path) == $0.stamp }
    }

    /// One answer per thread, each written by its own thread only.
    private final class Answers: @unchecked Sendable {
        let values: UnsafeMutableBufferPointer<Bool>
        init(count: Int) { values = .allocate(capacity: count); values.initialize(repeating: false) }
        deinit { values.deallocate() }
    }

    private func holds(assets: String, catalog: CatalogDirectory) -> Bool {
        let root = assets.hasSuffix("/") ? String(assets.dropLast()) : assets
        // Folders first: a change in a folder's entries is the likeliest change, and the cheapest to see.
        guard Self.unchanged(folders[...], root: root) else { return false }
        // The files on both cores: `stat` is a system call per file.
        let halves = [files[..<(files.count / 2)], files[(files.count / 2)...]]
        let answers = Answers(count: halves.count)
        DispatchQueue.concurrentPerform(iterations: halves.count) { answers.values[$0] = Self.unchanged(halves[$0], root: root) }
        guard answers.values.allSatisfy({ $0 }) else { return false }
        for pack in packs {
            guard FileStamp.of(path: catalog.url(of: pack.path).path)?.size == pack.size else { return false }
        }
        for file in metadata {
            guard let bytes = try? Data(contentsOf: catalog.url(of: file.path)),
                  ContentHash.sha256Hex(of: bytes) == file.sha256
            else { return false }
        }
        return true
    }

    // MARK: Recording

    /// Records the proof of a build that just ended, or removes the old one when this build cannot
    /// be proven unchanged next time.
    static func record(
        options: BuildOptions, key: String?, scan: AssetScanner.Result, scanStart: Int64, catalog: CatalogDirectory,
        index: CatalogIndex, version: Int, manifest: VersionManifest, report: BuildReport
    ) {
        guard let cacheURL = options.cache else { return }
        let location = location(forCache: cacheURL)
        _ = unlink(location.path)
        let settled = scanStart - options.unchangedProofMargin
        guard let key, options.signing == nil, scan.warnings.isEmpty, scan.fileStamps.count == scan.files.count,
              scan.folders.allSatisfy({ !$0.path.contains("\n") && $0.stamp.settled(before: settled) }),
              scan.fileStamps.allSatisfy({ $0.settled(before: settled) }),
              let cache = FileStamp.of(path: cacheURL.path),
              let indexBytes = try? Data(contentsOf: catalog.url(of: CatalogIndex.fileName))
        else { return }
        var metadata = [(path: CatalogIndex.fileName, sha256: ContentHash.sha256Hex(of: indexBytes))]
        guard (try? catalog.loadVersion(version, in: index, reading: { path, bytes in
            metadata.append((path, ContentHash.sha256Hex(of: bytes)))
        })) != nil,
            let reportJSON = try? JSONEncoder().encode(report)
        else { return }
        let proof = UnchangedBuild(
            key: key, cache: cache, folders: scan.folders,
            files: zip(scan.files, scan.fileStamps).map { ($0.path, $1) }, metadata: metadata,
            packs: manifest.packs.map { (PackRecord.archivePath(forID: $0.id), $0.archiveBytes) }, report: reportJSON)
        // Written whole and renamed into place: a proof read half-written would simply not parse,
        // but one written by a build that failed midway must never be found.
        try? proof.encoded().write(to: location, options: .atomic)
    }

    // MARK: Encoding

    private static func line(_ stamp: FileStamp) -> String {
        "\(Int64(bitPattern: stamp.device)) \(Int64(bitPattern: stamp.inode)) \(stamp.size) \(stamp.modificationTime) \(stamp.changeTime)"
    }

    func encoded() -> Data {
        var text = "\(Self.header)\n\(key)\n\(Self.line(cache))\n"
        text += "\(folders.count) \(files.count) \(metadata.count) \(packs.count) \(report.count)\n"
        for folder in folders { text += "\(Self.line(folder.stamp)) \(folder.path)\n" }
        for file in files { text += "\(Self.line(file.stamp)) \(file.path)\n" }
        for file in metadata { text += "\(file.sha256) \(file.path)\n" }
        for pack in packs { text += "\(pack.size) \(pack.path)\n" }
        var data = Data(text.utf8)
        data.append(report)
        return data
    }

    /// Parses a proof, or returns `nil` when it is malformed or its key is not `key`.
    init?(parsing data: Data, key expected: String) {
        var parsed: UnchangedBuild?
        data.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var reader = LineReader(bytes: raw)
            guard reader.line() == Self.header, reader.line() == expected,
                  let cache = reader.stamp(), reader.end(),
                  let counts = reader.numbers(5), counts.allSatisfy({ $0 >= 0 })
            else { return }
            func stamped(_ count: Int64) -> [(path: String, stamp: FileStamp)]? {
                var entries: [(path: String, stamp: FileStamp)] = []
                entries.reserveCapacity(Int(count))
                for _ in 0..<count {
                    guard let stamp = reader.stamp(), let path = reader.line() else { return nil }
                    entries.append((path, stamp))
                }
                return entries
            }
            guard let folders = stamped(counts[0]), let files = stamped(counts[1]) else { return }
            var metadata: [(path: String, sha256: String)] = []
            for _ in 0..<counts[2] {
                guard let word = reader.word(), let path = reader.line() else { return }
                metadata.append((path, word))
            }
            var packs: [(path: String, size: Int64)] = []
            for _ in 0..<counts[3] {
                guard let size = reader.number(), let path = reader.line() else { return }
                packs.append((path, size))
            }
            guard let report = reader.rest(), report.count == counts[4] else { return }
            parsed = UnchangedBuild(
                key: expected, cache: cache, folders: folders, files: files, metadata: metadata, packs: packs,
                report: report)
        }
        guard let parsed else { return nil }
        self = parsed
    }

    private init(
        key: String, cache: FileStamp, folders: [(path: String, stamp: FileStamp)],
        files: [(path: String, stamp: FileStamp)], metadata: [(path: String, sha256: String)],
        packs: [(path: String, size: Int64)], report: Data
    ) {
        self.key = key
        self.cache = cache
        self.folders = folders
        self.files = files
        self.metadata = metadata
        self.packs = packs
        self.report = report
    }
}

extension FileStamp {
    /// Whether both times are before `time`.
    func settled(before time: Int64) -> Bool { modificationTime < time && changeTime < time }
}

/// Reads a proof: space-separated numbers and words, each line ending in a path.
private struct LineReader {
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    init(bytes: UnsafeRawBufferPointer) { self.bytes = bytes }

    /// The rest of the line, without its newline.
    mutating func line() -> String? {
        let start = offset
        while offset < bytes.count, bytes[offset] != UInt8(ascii: "\n") { offset += 1 }
        guard offset < bytes.count else { return nil }
        defer { offset += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
    }

    /// Whether the line ends here (and moves past it).
    mutating func end() -> Bool {
        guard offset < bytes.count, bytes[offset] == UInt8(ascii: "\n") else { return false }
        offset += 1
        return true
    }

    /// A word ended by a space (consumed).
    mutating func word() -> String? {
        let start = offset
        while offset < bytes.count, bytes[offset] != UInt8(ascii: " "), bytes[offset] != UInt8(ascii: "\n") { offset += 1 }
        guard offset < bytes.count, offset > start, bytes[offset] == UInt8(ascii: " ") else { return nil }
        defer { offset += 1 }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[start..<offset]), as: UTF8.self)
    }

    /// A decimal number, possibly negative, ended by a space or a newline (a space is consumed).
    mutating func number() -> Int64? {
        var negative = false
        if offset < bytes.count, bytes[offset] == UInt8(ascii: "-") {
            negative = true
            offset += 1
        }
        var value: Int64 = 0
        var digits = 0
        while offset < bytes.count, bytes[offset] >= UInt8(ascii: "0"), bytes[offset] <= UInt8(ascii: "9") {
            let (times, overflow1) = value.multipliedReportingOverflow(by: 10)
            let (sum, overflow2) = times.addingReportingOverflow(Int64(bytes[offset] - UInt8(ascii: "0")))
            guard !overflow1, !overflow2 else { return nil }
            value = sum
            digits += 1
            offset += 1
        }
        guard digits > 0, offset < bytes.count else { return nil }
        if bytes[offset] == UInt8(ascii: " ") { offset += 1 } else if bytes[offset] != UInt8(ascii: "\n") { return nil }
        return negative ? -value : value
    }

    mutating func numbers(_ count: Int) -> [Int64]? {
        var values: [Int64] = []
        for _ in 0..<count {
            guard let value = number() else { return nil }
            values.append(value)
        }
        return end() ? values : nil
    }

    /// Device, inode, size, modification and change time, each followed by a space.
    mutating func stamp() -> FileStamp? {
        guard let device = number(), let inode = number(), let size = number(), let modified = number(),
              let changed = number()
        else { return nil }
        return FileStamp(
            device: UInt64(bitPattern: device), inode: UInt64(bitPattern: inode), size: size,
            modificationTime: modified, changeTime: changed)
    }

    /// The bytes left.
    mutating func rest() -> Data? {
        defer { offset = bytes.count }
        return Data(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
    }
}
