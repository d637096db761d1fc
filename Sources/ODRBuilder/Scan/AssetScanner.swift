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
/// example a catalog written inside the assets folder). Symbolic links and special files are
/// skipped with a warning. The result is sorted by path, so builds do not depend on directory order.
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
    }

    /// Walks the folder.
    ///
    /// - Throws: `BuildError` `scan.unreadable` when the folder or one of its subfolders cannot be read.
    public func scan() throws(BuildError) -> Result {
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root.path, isDirectory: &isDirectory), isDirectory.boolValue else {
            throw BuildError(.assetsUnreadable, "the assets folder does not exist or is not a folder", file: root.path)
        }
        var files: [AssetFile] = []
        var skipped: [String] = []
        try walk(relative: "", into: &files, skipped: &skipped)
        files.sort { $0.path.utf8.lexicographicallyPrecedes($1.path.utf8) }
        var warnings: [BuildWarning] = []
        if !skipped.isEmpty {
            warnings.append(BuildWarning(
                .skippedFile,
                "skipped \(skipped.count) symbolic link(s) or special file(s): "
                    + skipped.sorted().prefix(5).joined(separator: ", ") + (skipped.count > 5 ? ", ..." : "")))
        }
        return Result(files: files, warnings: warnings)
    }

    private func walk(relative: String, into files: inout [AssetFile], skipped: inout [String]) throws(BuildError) {
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
                throw BuildError(
                    .assetsUnreadable, "cannot read the file's metadata: \(String(cString: strerror(code)))",
                    file: url.path)
            }
            switch info.st_mode & S_IFMT {
            case S_IFDIR:
                try walk(relative: path, into: &files, skipped: &skipped)
            case S_IFREG:
                if let problem = RelativePath.problem(in: path) {
                    throw BuildError(.assetsUnreadable, "the file's path cannot go in a catalog: \(problem)", file: url.path)
                }
                let nanoseconds = Int64(info.st_mtim.tv_sec) * 1_000_000_000 + Int64(info.st_mtim.tv_nsec)
                files.append(AssetFile(
                    path: path, url: url, size: Int64(info.st_size), modificationTime: nanoseconds,
                    inode: UInt64(info.st_ino)))
            default:
                skipped.append(path)
            }
        }
    }
}
