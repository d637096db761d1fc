/// What the installed packs take on disk, each physical file counted once, read from the inodes.
///
/// Packs of two versions of a tag share their unchanged files by hard link, so adding the packs'
/// sizes counts those files twice. This account reads every installed file's and folder's device,
/// inode, allocated blocks and link count (`lstat`, links never followed), and counts each inode
/// once, in bytes as `du` counts them (`st_blocks` × 512, not the files' lengths):
///
/// - a pack's **own** bytes are its folders and the files no other installed pack holds: what
///   deleting it frees;
/// - its **shared** bytes are those another installed pack holds too;
/// - a file with more links than the installed packs explain (linked from outside `packs/`, by the
///   user or a download in progress in `staging/`) is **pinned**: deleting the packs would not free
///   it, so no purge counts it.
///
/// Nothing is assumed from how the store made the files: a store copied without its links
/// (`cp -r`) has no shared bytes, and each pack's files are its own.
public struct StoreDiskAccount: Sendable {
    /// One installed pack's share of the disk.
    public struct Pack: Sendable, Hashable, Codable {
        /// The pack id.
        public var id: String
        /// The bytes of its files, each once: what it would take alone.
        public var bytes: Int64
        /// The bytes only it holds: what deleting it frees now.
        public var ownBytes: Int64
        /// The bytes it shares with other installed packs (hard links to the same files).
        public var sharedBytes: Int64
        /// The bytes of its files linked from outside the installed packs: not freed by deleting it.
        public var pinnedBytes: Int64
    }

    /// The installed packs, in the store's row order; ``files`` numbers them by position here.
    public var packs: [Pack]
    /// Which pack holds which file, for planning purges that count shared files once.
    public var files: PackFileAccount

    /// The bytes of every installed file, each once, and of the pack folders: what
    /// `du -s -B1 -c packs/*` shows.
    public var installedBytes: Int64 { files.installedBytes }
    /// The bytes of files more than one installed pack holds (each once).
    public var sharedBytes: Int64 { files.sharedBytes }
    /// The bytes of installed files linked from outside the installed packs.
    public var pinnedBytes: Int64 { files.pinnedBytes }

    /// The account of `packs` (ids, in order) holding `files`.
    init(packIDs: [String], files: PackFileAccount) {
        self.files = files
        packs = packIDs.enumerated().map { index, id in
            Pack(id: id, bytes: files.totalBytes(of: index), ownBytes: files.ownBytes(of: index),
                 sharedBytes: files.sharedBytes(of: index), pinnedBytes: files.pinnedBytes(of: index))
        }
    }

    /// The entry of pack `id`, if it is installed.
    public func pack(id: String) -> Pack? { packs.first { $0.id == id } }
}
