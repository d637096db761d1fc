import Foundation

/// A regular file found in the assets folder, with the metadata the build cache keys on.
public struct AssetFile: Sendable, Equatable {
    /// The path relative to the assets root, `/`-separated.
    public var path: String
    /// Where the file is on disk.
    public var url: URL
    /// The size in bytes.
    public var size: Int64
    /// The modification time in nanoseconds since 1970.
    public var modificationTime: Int64
    /// The inode number.
    public var inode: UInt64

    /// Creates a file description.
    public init(path: String, url: URL, size: Int64, modificationTime: Int64, inode: UInt64) {
        self.path = path
        self.url = url
        self.size = size
        self.modificationTime = modificationTime
        self.inode = inode
    }
}

/// An asset file together with the SHA-256 of its content.
public struct HashedAsset: Sendable, Equatable {
    /// The scanned file.
    public var file: AssetFile
    /// The lowercase hex SHA-256 of its content.
    public var sha256: String

    /// Creates a hashed asset.
    public init(file: AssetFile, sha256: String) {
        self.file = file
        self.sha256 = sha256
    }

    /// The path relative to the assets root.
    public var path: String { file.path }
    /// The size in bytes.
    public var size: Int64 { file.size }
}
