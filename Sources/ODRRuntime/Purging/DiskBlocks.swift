import ODRFormat

/// What files take on disk once written, in whole blocks as `du` counts them: the one estimate the
/// store's room reservation (``PackInstaller/newDiskBytes(of:in:)``) and `odrsim`'s model of the
/// store's files both use, matching what ``ResourceStore/diskAccount()`` later reads from the inodes.
///
/// ```swift
/// import ODRRuntime
///
/// // 100 bytes and 5,000 bytes, in two folders (the pack's and one below it), with 4 KiB blocks.
/// print(DiskBlocks.bytes(ofFileSizes: [100, 5000], folders: 2, blockSize: 4096))  // 20480
/// print(DiskBlocks.folderCount(ofEntryNames: ["maps/a.json", "maps/b.json", "music.ogg"]))  // 2
/// ```
public enum DiskBlocks {
    /// The block size assumed when the file system's is unknown: ext4's and most others'.
    public static let defaultBlockSize: Int64 = 4096

    /// A file of `size` bytes rounded up to whole blocks of `blockSize` (clamped, never trapping).
    public static func bytes(ofFile size: Int64, blockSize: Int64 = defaultBlockSize) -> Int64 {
        let block = max(blockSize, 1), size = max(size, 0)
        let (rounded, overflow) = (size / block + (size % block == 0 ? 0 : 1)).multipliedReportingOverflow(by: block)
        return overflow ? .max : rounded
    }

    /// Files of `sizes`, each rounded up to whole blocks, and `folders` folders of one block each.
    public static func bytes(ofFileSizes sizes: some Sequence<Int64>, folders: Int, blockSize: Int64 = defaultBlockSize) -> Int64 {
        let files = sizes.lazy.map { bytes(ofFile: $0, blockSize: blockSize) }.clampedSum()
        let (folderBytes, overflow) = Int64(max(folders, 0)).multipliedReportingOverflow(by: max(blockSize, 1))
        return [files, overflow ? .max : folderBytes].clampedSum()
    }

    /// How many folders unpacking entries named `names` creates: the pack's own folder and every
    /// distinct parent path of a name.
    public static func folderCount(ofEntryNames names: some Sequence<String>) -> Int {
        var folders: Set<Substring> = []
        for name in names {
            var rest = Substring(name)
            while let slash = rest.lastIndex(of: "/") {
                rest = rest[..<slash]
                guard !rest.isEmpty, folders.insert(rest).inserted else { break }
            }
        }
        return folders.count + 1
    }
}
