#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#endif
import ODRFormat

extension ResourceStore {
    /// What `staging/` holds of one pack: a download being assembled (`<id>.d/`, `<id>.journal`) or
    /// the remains of a removal (`<id>.removed-*`).
    public struct StagedPack: Sendable, Hashable {
        /// The pack's id (the part of the staging items' names before the first `.`).
        public var packID: String
        /// The bytes its staging items take on disk; a file also linked from outside `staging/`
        /// (an installed file reused by hard link) takes none.
        public var bytes: Int64
        /// When its newest item last changed (seconds since 1970).
        public var modifiedAt: Double
    }

    /// What `staging/` holds, per pack, ordered by id.
    ///
    /// Bytes are allocated blocks, as `du` counts them, folders included. A file counts once however
    /// many of its links are in `staging/` (paths sharing an entry are hard links), and not at all
    /// when it is linked from elsewhere too (a reused installed file).
    /// Sums are clamped (`clampedSum()`) rather than trap.
    public func stagedPacks() -> [StagedPack] {
        var files: [Inode: (bytes: Int64, links: UInt64, seen: UInt64, pack: String)] = [:]
        var packs: [String: StagedPack] = [:]
        let root = stagingURL.path
        for name in (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? [] {
            let id = String(name.prefix { $0 != "." })
            guard !id.isEmpty else { continue }
            var pack = packs[id] ?? StagedPack(packID: id, bytes: 0, modifiedAt: 0)
            // Below a folder, every item (links are not followed); a file has none.
            Self.walkFiles(under: root + "/" + name) { item in
                pack.modifiedAt = max(pack.modifiedAt, item.modifiedAt)
                if item.isFolder { pack.bytes = [pack.bytes, item.bytes].clampedSum() }
                guard item.isRegularFile else { return }
                var file = files[item.inode] ?? (item.bytes, item.links, 0, id)
                file.seen += 1
                files[item.inode] = file
            }
            packs[id] = pack
        }
        for file in files.values where file.seen >= file.links {
            guard var pack = packs[file.pack] else { continue }
            pack.bytes = [pack.bytes, file.bytes].clampedSum()
            packs[file.pack] = pack
        }
        return packs.values.sorted { $0.packID < $1.packID }
    }

    /// Deletes what `staging/` holds of pack `id`, unless a download of it is in progress in some
    /// process (its pack lock is held, and then nothing is deleted).
    ///
    /// What is deleted is only a partial download: the next fetch of the pack downloads those bytes
    /// again. An installed pack is never touched.
    ///
    /// - Returns: the bytes freed, or `nil` when the pack's lock is held.
    public func removeStaging(ofPack id: String) throws(ResourceError) -> Int64? {
        guard let lock = try FileLock.tryLock(lockPath(for: id)) else { return nil }
        defer { lock.unlock() }
        let bytes = stagedPacks().first { $0.packID == id }?.bytes ?? 0
        let prefix = id + "."
        for name in (try? FileManager.default.contentsOfDirectory(atPath: stagingURL.path)) ?? [] where name == id || name.hasPrefix(prefix) {
            Self.removeTree(stagingURL.appending(path: name))
        }
        return bytes
    }
}
