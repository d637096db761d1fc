#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRFormat

/// Lists the files of an assets folder that a build packs.
///
/// Hidden files and folders (`.DS_Store`, `.git/`) are skipped unless the rules include them, and so
/// are files the rules exclude, the rules file itself and any folder passed in `skipping` (for
/// example a catalog written inside the assets folder). A symbolic link is followed: one that
/// resolves to a regular file is packed as a regular file with the link's path and the target's
/// content (never as a link), one that resolves to a folder is walked like a folder; a link that
/// leads back into a folder being walked (a loop), a dangling link and special files are skipped with
/// a warning. The result is sorted by path, so builds do not depend on directory order.
public struct AssetScanner: Sendable {
    /// The assets folder.
    public var root: URL
    /// The rules that exclude files and decide about hidden ones.
    public var rules: TagRules
    /// Paths relative to `root` (files or folders) never to scan.
    public var skipping: Set<String>

    /// Creates a scanner.
    public init(root: URL, rules: TagRules, skipping: Set<String> = [TagRules.defaultFileName]) {
        self.root = root
        self.rules = rules
        self.skipping = skipping
    }

    /// What a scan found.
    public struct Result: Sendable {
        /// The files to pack, sorted by path.
        public var files: [AssetFile]
        /// Files that were skipped and why.
        public var warnings: [BuildWarning]
        /// Symbolic links followed (to files or folders).
        public var followedLinks: Int
        /// What `stat` said of each of `files`, in the same order (links followed).
        var fileStamps: [FileStamp] = []
        /// Every folder walked, the root (`""`) first, with what `stat` said of it (links followed).
        var folders: [(path: String, stamp: FileStamp)] = []
    }

    /// A folder's identity, to notice a link that leads back into a folder being walked.
    private struct FolderID: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    /// What the walk collects.
    private struct Walk {
        var files: [(file: AssetFile, stamp: FileStamp)] = []
        var folders: [(path: String, stamp: FileStamp)] = []
        var skipped: [String] = []
        var loops: [String] = []
        var followedLinks = 0
    }

    /// Walks the folder.
    ///
    /// - Throws: `BuildError` `scan.unreadable` when the folder or one of its subfolders cannot be read.
    public func scan() throws(BuildError) -> Result {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw BuildError(.assetsUnreadable, "the assets folder does not exist or is not a folder", file: root.path)
        }
        var found = Walk()
        var rootInfo = stat()
        let rootID = stat(root.path, &rootInfo) == 0 ? FolderID(device: UInt64(rootInfo.st_dev), inode: UInt64(rootInfo.st_ino)) : nil
        if rootID != nil { found.folders.append(("", FileStamp(rootInfo))) }
        try walk(relative: "", ancestors: rootID.map { [$0] } ?? [], into: &found)
        found.files.sort { $0.file.path.utf8.lexicographicallyPrecedes($1.file.path.utf8) }
        let files = found.files.map { $0.file }
        // Swift compares strings by canonical equivalence: `é` precomposed and `e` + U+0301 are
        // two files on disk but one catalog path, which no client could tell apart.
        var seen: [String: String] = [:]
        for file in files {
            if let twin = seen.updateValue(file.path, forKey: file.path) {
                throw BuildError(.assetsUnreadable, "'\(twin)' and '\(file.path)' are different bytes but the same name after Unicode normalization (NFC), so a catalog cannot hold both; rename one of them",
                                 file: file.url.path)
            }
        }
        var warnings: [BuildWarning] = []
        if !found.skipped.isEmpty {
            warnings.append(BuildWarning(
                .skippedFile,
                "skipped \(found.skipped.count) dangling symbolic link(s) or special file(s): "
                    + found.skipped.sorted().prefix(5).joined(separator: ", ") + (found.skipped.count > 5 ? ", ..." : "")))
        }
        if !found.loops.isEmpty {
            warnings.append(BuildWarning(
                .skippedFile,
                "skipped \(found.loops.count) symbolic link(s) that lead back into a folder being scanned (a loop): "
                    + found.loops.sorted().prefix(5).joined(separator: ", ") + (found.loops.count > 5 ? ", ..." : "")))
        }
        return Result(
            files: files, warnings: warnings, followedLinks: found.followedLinks, fileStamps: found.files.map { $0.stamp },
            folders: found.folders)
    }

    private func walk(relative: String, ancestors: Set<FolderID>, into found: inout Walk) throws(BuildError) {
        let directory = relative.isEmpty ? root : root.appending(path: relative, directoryHint: .isDirectory)
        let names: [String]
        do {
            names = try FileManager.default.contentsOfDirectory(atPath: directory.path)
        } catch {
            throw BuildError(.assetsUnreadable, "cannot list the folder; check its permissions", file: directory.path, cause: error)
        }
        for name in names.sorted() {
            if name.hasPrefix("."), !rules.includeHidden { continue }
            let path = relative.isEmpty ? name : "\(relative)/\(name)"
            if skipping.contains(path) || rules.isExcluded(path) { continue }
            let url = directory.appending(path: name)
            var info = stat()
            guard lstat(url.path, &info) == 0 else {
                let code = errno
                // The folder listed it, but its name does not lead back to it: a name whose bytes
                // are not UTF-8 (Foundation lists it decoded with replacement characters).
                if code == ENOENT {
                    throw BuildError(.assetsUnreadable, "the folder holds a file whose name is not valid UTF-8 (shown here as '\(name)'); catalog paths are UTF-8, so rename it",
                                     file: directory.path)
                }
                throw BuildError(
                    .assetsUnreadable, "cannot read the file's metadata: \(String(cString: strerror(code)))",
                    file: url.path)
            }
            var isLink = false
            if info.st_mode & S_IFMT == S_IFLNK {
                // Follow it: what matters is what it resolves to. A dangling link is skipped below.
                guard stat(url.path, &info) == 0 else {
                    found.skipped.append(path)
                    continue
                }
                isLink = true
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                let id = FolderID(device: UInt64(info.st_dev), inode: UInt64(info.st_ino))
                guard !ancestors.contains(id) else {
                    found.loops.append(path)
                    continue
                }
                if isLink { found.followedLinks += 1 }
                found.folders.append((path, FileStamp(info)))
                try walk(relative: path, ancestors: ancestors.union([id]), into: &found)
            case S_IFREG:
                if let problem = RelativePath.problem(in: path) {
                    throw BuildError(.assetsUnreadable, "the file's path cannot go in a catalog: \(problem)", file: url.path)
                }
                if isLink { found.followedLinks += 1 }
                let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
                found.files.append((AssetFile(
                    path: path, url: url, size: Int64(info.st_size), modificationTime: nanoseconds,
                    inode: UInt64(info.st_ino)), FileStamp(info)))
            default:
                found.skipped.append(path)
            }
        }
    }
}
