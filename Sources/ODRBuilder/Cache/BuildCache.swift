import Foundation
import ODRFormat

/// Remembers the SHA-256 of every asset file, keyed by its path, size, modification time and inode,
/// so that a rebuild hashes only the files that changed; and the chunk table of every chunked file,
/// keyed by its SHA-256 and the chunk sizes, so that a pack written again does not chunk an
/// unchanged large file again.
///
/// A cache that is missing, unreadable or from another version is treated as empty: it can only
/// save work, never change what a build produces.
///
/// ```swift
/// var cache = BuildCache.load(from: cacheURL)
/// let known = cache.sha256(for: file)          // nil when the file changed
/// cache.record(file, sha256: digest)
/// try cache.save(to: cacheURL)
/// ```
public struct BuildCache: Sendable, Equatable {
    static let formatVersion = 1

    struct Entry: Codable, Sendable, Equatable {
        var size: Int64
        var modificationTime: Int64
        var inode: UInt64
        var sha256: String
    }

    /// One chunk as the cache keeps it: the stored size depends on the pack writer, not the content.
    struct ChunkEntry: Codable, Sendable, Equatable {
        var size: Int64
        var sha256: String
    }

    private struct Stored: Codable {
        var formatVersion: Int
        var entries: [String: Entry]
        /// Absent in caches written before chunking; such a cache simply knows no tables.
        var chunkTables: [String: [ChunkEntry]]?
    }

    private(set) var entries: [String: Entry] = [:]
    /// Chunk tables by ``chunkKey(sha256:sizes:)``.
    private(set) var chunkTables: [String: [ChunkEntry]] = [:]

    /// An empty cache.
    public init() {}

    /// The cache stored at `url`, or an empty one when there is none or it cannot be read.
    public static func load(from url: URL) -> BuildCache {
        guard let data = try? Data(contentsOf: url),
              let stored = try? JSONDecoder().decode(Stored.self, from: data),
              stored.formatVersion == formatVersion
        else { return BuildCache() }
        var cache = BuildCache()
        cache.entries = stored.entries
        cache.chunkTables = stored.chunkTables ?? [:]
        return cache
    }

    /// The number of files the cache knows.
    public var count: Int { entries.count }

    /// The remembered digest of `file`, or `nil` if its path, size, modification time or inode changed.
    public func sha256(for file: AssetFile) -> String? {
        guard let entry = entries[file.path], entry.size == file.size,
              entry.modificationTime == file.modificationTime, entry.inode == file.inode
        else { return nil }
        return entry.sha256
    }

    /// Remembers the digest of `file`.
    public mutating func record(_ file: AssetFile, sha256: String) {
        entries[file.path] = Entry(
            size: file.size, modificationTime: file.modificationTime, inode: file.inode, sha256: sha256)
    }

    /// Forgets every file not in `paths` (deleted or excluded since the last build), and every
    /// chunk table of content no remaining file has.
    public mutating func retain(paths: Set<String>) {
        entries = entries.filter { paths.contains($0.key) }
        let contents = Set(entries.values.map(\.sha256))
        chunkTables = chunkTables.filter { contents.contains(String($0.key.prefix(64))) }
    }

    static func chunkKey(sha256: String, sizes: FastCDC.Parameters) -> String {
        "\(sha256) \(sizes.minimumSize)/\(sizes.averageSize)/\(sizes.maximumSize)"
    }

    /// The chunk tables known for `sizes`, by content SHA-256, with stored sizes equal to sizes
    /// (the pack writer recomputes them): what ``PackArchiver/knownChunkTables`` takes.
    public func chunkTables(for sizes: FastCDC.Parameters) -> [String: [FileChunk]] {
        let suffix = Self.chunkKey(sha256: "", sizes: sizes)
        var tables: [String: [FileChunk]] = [:]
        for (key, table) in chunkTables where key.hasSuffix(suffix) && key.utf8.count == 64 + suffix.utf8.count {
            tables[String(key.prefix(64))] = table.map { FileChunk(size: $0.size, storedSize: $0.size, sha256: $0.sha256) }
        }
        return tables
    }

    /// Remembers the chunk table of the content `sha256`, cut with `sizes`.
    public mutating func recordChunks(_ chunks: [FileChunk], sha256: String, sizes: FastCDC.Parameters) {
        guard !chunks.isEmpty else { return }
        chunkTables[Self.chunkKey(sha256: sha256, sizes: sizes)] = chunks.map { ChunkEntry(size: $0.size, sha256: $0.sha256) }
    }

    /// Writes the cache to `url` atomically, creating its folder.
    public func save(to url: URL) throws(BuildError) {
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(Stored(formatVersion: Self.formatVersion, entries: entries, chunkTables: chunkTables.isEmpty ? nil : chunkTables))
            try data.write(to: url, options: .atomic)
        } catch {
            throw BuildError(.catalogIO, "cannot write the build cache; pass --no-cache or another --cache path", file: url.path, cause: error)
        }
    }

    /// The default cache location for an assets folder: `$XDG_CACHE_HOME/odrpack` (or
    /// `~/.cache/odrpack`), one file per assets folder.
    public static func defaultLocation(forAssets assets: URL) -> URL {
        let environment = ProcessInfo.processInfo.environment
        let base: URL
        if let xdg = environment["XDG_CACHE_HOME"], !xdg.isEmpty {
            base = URL(filePath: xdg, directoryHint: .isDirectory)
        } else {
            base = FileManager.default.homeDirectoryForCurrentUser.appending(path: ".cache", directoryHint: .isDirectory)
        }
        let key = ContentHash.sha256Hex(of: Data(assets.standardizedFileURL.path.utf8)).prefix(16)
        return base.appending(path: "odrpack/\(key).json")
    }
}
