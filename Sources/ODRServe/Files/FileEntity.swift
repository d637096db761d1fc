import Foundation

/// A file as served: where it is, its size, and the validators (ETag, Last-Modified) derived from
/// one look at its attributes, so they stay the same while the file is unchanged and change when
/// it is rewritten or replaced.
struct FileEntity: Sendable {
    enum Kind { case regular, directory, other }

    /// Canonical path inside the catalog root.
    let path: String
    let kind: Kind
    let size: Int
    /// Modification time, whole seconds since 1970 (what Last-Modified can express).
    let modifiedSeconds: Int
    /// Strong validator: device, inode, size and modification time in microseconds. An atomic
    /// replace (a new inode) or any rewrite changes it; reading never does.
    let etag: String

    init?(path: String) {
        // FileManager rather than `stat`: on Linux, `struct stat`'s members are only visible through
        // whichever C module first included <sys/stat.h> (here SwiftNIO's), not through Glibc.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        self.path = path
        kind = Self.kind(of: attributes[.type] as? FileAttributeType)
        size = (attributes[.size] as? NSNumber)?.intValue ?? 0
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        modifiedSeconds = Int(modified.rounded(.down))
        let microseconds = UInt64(max(0, (modified * 1_000_000).rounded()))
        let device = (attributes[.systemNumber] as? NSNumber)?.uint64Value ?? 0
        let inode = (attributes[.systemFileNumber] as? NSNumber)?.uint64Value ?? 0
        etag = "\"" + [device, inode, UInt64(size), microseconds].map { String($0, radix: 16) }.joined(separator: "-") + "\""
    }

    /// The file's last path component.
    var name: Substring {
        path.lastIndex(of: "/").map { path[path.index(after: $0)...] } ?? Substring(path)
    }

    static func kind(ofPath path: String) -> Kind? {
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return nil }
        return kind(of: attributes[.type] as? FileAttributeType)
    }

    private static func kind(of type: FileAttributeType?) -> Kind {
        switch type {
        case .typeRegular?: .regular
        case .typeDirectory?: .directory
        default: .other
        }
    }
}
