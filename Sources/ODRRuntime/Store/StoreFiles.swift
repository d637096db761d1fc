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

/// Opening and creating files and folders inside the store without following a symbolic link
/// (`docs/STORE.md`, "Links"). The store never makes a link, so one found where it opens or
/// creates something was planted there by someone else: it is removed (it is the store's to
/// remove; what it points to is never touched) and the store's own file or folder is made in its
/// place. A link anywhere else below the store (a folder of a staged pack) is refused where it is
/// met: ``DirectoryExtractor`` and ``makeFolders(_:below:)`` check every folder on the way.
enum StoreFiles {
    /// `open(2)` of a file of the store with `O_NOFOLLOW`: a link at `path` is removed and the
    /// open tried once more. `O_CLOEXEC` is added.
    ///
    /// - Returns: the descriptor, or -1 with `errno` set.
    static func openFile(_ path: String, _ flags: Int32, mode: mode_t = 0o644) -> Int32 {
        let descriptor = open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)
        // A link at the last component: ELOOP, or EEXIST with O_CREAT | O_EXCL.
        guard descriptor < 0, errno == ELOOP || errno == EEXIST && flags & O_EXCL != 0, removeLink(path) else { return descriptor }
        return open(path, flags | O_NOFOLLOW | O_CLOEXEC, mode)
    }

    /// `lstat(2)`: the entry at `path` itself, never what a link there points to.
    static func status(_ path: String) -> stat? {
        var info = stat()
        return lstat(path, &info) == 0 ? info : nil
    }

    /// Whether anything (a link included) is at `path`.
    static func exists(_ path: String) -> Bool { status(path) != nil }

    /// Whether a folder, not a link to one, is at `path`.
    static func isFolder(_ path: String) -> Bool { status(path).map { $0.st_mode & S_IFMT == S_IFDIR } ?? false }

    /// Removes a symbolic link at `path`; whether there was one and it is gone. `errno` is kept.
    @discardableResult
    static func removeLink(_ path: String) -> Bool {
        let code = errno
        defer { errno = code }
        guard let info = status(path), info.st_mode & S_IFMT == S_IFLNK else { return false }
        return unlink(path) == 0
    }

    /// Makes `path` a folder of the store unless it is one: a link there is removed first.
    ///
    /// - Throws: `storage-failure` (`out-of-space` on a full disk) when it cannot be created, or
    ///   something other than a folder or a link is there.
    ///
    /// - Returns: whether this call made the folder (so it is empty), not found it there.
    @discardableResult
    static func makeFolder(_ path: String) throws(ResourceError) -> Bool {
        if mkdir(path, 0o755) == 0 { return true }
        guard errno == EEXIST else { throw StoreFailure.posix("create '\(path)'") }
        if isFolder(path) { return false }
        guard removeLink(path) else {
            throw ResourceError(.storageFailure, "'\(path)' is in the store's way and is not a folder. Run `odr verify --repair`.")
        }
        if mkdir(path, 0o755) == 0 { return true }
        guard errno == EEXIST && isFolder(path) else {
            throw ResourceError(.storageFailure, "'\(path)' is in the store's way and is not a folder. Run `odr verify --repair`.")
        }
        return false
    }

    /// Makes the folders above the file `relative` (a checked relative path, `a/b/c.png`) below
    /// `root`, a folder of the store, each a real folder: a link on the way is removed and
    /// replaced by a folder, so nothing is ever created through it.
    static func makeFolders(above relative: String, below root: String) throws(ResourceError) {
        var path = root
        for component in relative.split(separator: "/").dropLast() {
            path += "/" + component
            try makeFolder(path)
        }
    }
}
