#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// A physical file: its device and inode number.
struct Inode: Hashable {
    var device: UInt64
    var number: UInt64
}

/// An item found by ``ResourceStore/walkFiles(under:_:)``.
struct WalkedFile {
    /// Whether it is a regular file.
    var isRegularFile: Bool
    /// Whether it is a folder (neither this nor a regular file: a link or another kind of item).
    var isFolder: Bool
    var inode: Inode
    /// What it takes on disk: its allocated blocks in bytes (`st_blocks` × 512), as `du` counts
    /// it, not its length. A 1-byte file takes a whole block (4 KiB on ext4), a sparse one less
    /// than its length.
    var bytes: Int64
    var links: UInt64
    var modifiedAt: Double
}

extension ResourceStore {
    /// What the installed packs take on disk, each physical file once (see ``StoreDiskAccount``).
    ///
    /// Reads the rows it can trust (see ``packs()``) and `lstat`s every file under each installed
    /// pack's folder; a folder missing meanwhile (a purge finished) counts as empty.
    public func diskAccount() throws(ResourceError) -> StoreDiskAccount {
        let ids = try read("list packs") { db in try Self.packRows(db, installedOnly: true).packs.map(\.id) }
        var files: [Inode: (bytes: Int64, links: UInt64, seen: UInt64, packs: [Int])] = [:]
        var folders: [PackFileAccount.File] = []
        for (index, id) in ids.enumerated() {
            guard let folder = try? packFolder(id: id) else { continue }
            Self.walkFiles(under: folder.path) { file in
                if file.isFolder {
                    // A pack's folders are its own (folders have no hard links): deleting it frees them.
                    folders.append(.init(bytes: file.bytes, packs: [index]))
                    return
                }
                guard file.isRegularFile else { return }
                var entry = files[file.inode] ?? (file.bytes, file.links, 0, [])
                entry.seen += 1
                if entry.packs.last != index { entry.packs.append(index) }
                files[file.inode] = entry
            }
        }
        let account = PackFileAccount(files: files.values.map { .init(bytes: $0.bytes, packs: $0.packs, isPinned: $0.links > $0.seen) } + folders)
        return StoreDiskAccount(packIDs: ids, files: account)
    }

    /// The bytes deleting the folder at `path` alone frees: its files whose every link is inside it,
    /// and its folders, in allocated blocks as `du` counts them.
    static func ownBytes(ofFolder path: String) -> Int64 {
        var files: [Inode: (bytes: Int64, links: UInt64, seen: UInt64)] = [:]
        var folders: [Int64] = []
        walkFiles(under: path) { file in
            if file.isFolder { folders.append(file.bytes) }
            guard file.isRegularFile else { return }
            var entry = files[file.inode] ?? (file.bytes, file.links, 0)
            entry.seen += 1
            files[file.inode] = entry
        }
        return [files.values.lazy.filter { $0.seen >= $0.links }.map(\.bytes).clampedSum(), folders.clampedSum()].clampedSum()
    }

    /// The block size of the store's file system (`statvfs`'s `f_bsize`), 4 KiB when unreadable;
    /// clamped to 512 B...1 MiB.
    func blockSize() -> Int64 {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return DiskBlocks.defaultBlockSize }
        return min(max(Int64(clamping: info.f_bsize), 512), 1 << 20)
    }

    /// Calls `body` with every item at or below `path` (which may be a file), never following a
    /// symbolic link; items that vanish meanwhile are skipped.
    static func walkFiles(under path: String, _ body: (WalkedFile) -> Void) {
        let paths = [path] + ((try? FileManager.default.subpathsOfDirectory(atPath: path)) ?? []).map { path + "/" + $0 }
        for item in paths {
            var info = stat()
            guard lstat(item, &info) == 0 else { continue }
            let blocks = UInt64(clamping: info.st_blocks).multipliedReportingOverflow(by: 512)
            body(WalkedFile(isRegularFile: info.st_mode & S_IFMT == S_IFREG, isFolder: info.st_mode & S_IFMT == S_IFDIR,
                            inode: Inode(device: UInt64(info.st_dev), number: UInt64(info.st_ino)),
                            bytes: blocks.overflow ? .max : Int64(clamping: blocks.partialValue), links: UInt64(info.st_nlink),
                            modifiedAt: Double(info.st_mtim.tv_sec)))
        }
    }
}
