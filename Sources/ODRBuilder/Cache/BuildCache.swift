import Foundation
import ODRFormat

/// Remembers the SHA-256 of every asset file, keyed by its path, size, modification time and inode,
/// so that a rebuild hashes only the files that changed.
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

    private struct Stored: Codable {
        var formatVersion: Int
        var entries: [String: Entry]
    }

    private(set) var entries: [String: Entry] = [:]

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

    /// Forgets every file not in `paths` (deleted or excluded since the last build).
    public mutating func retain(paths: Set<String>) {
        entries = entries.filter { paths.contains($0.key) }
    }

    /// Writes the cache to `url` atomically, creating its folder.
    public func save(to url: URL) throws(BuildError) {
        do {
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            let encoder = JSONEncoder()
            encoder.outputFormatting = [.sortedKeys]
            let data = try encoder.encode(Stored(formatVersion: Self.formatVersion, entries: entries))
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
