#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

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
        size = Int(clamping: Self.number(attributes[.size]) ?? 0)
        let modified = (attributes[.modificationDate] as? Date)?.timeIntervalSince1970 ?? 0
        modifiedSeconds = Int(modified.rounded(.down))
        let microseconds = UInt64(max(0, (modified * 1_000_000).rounded()))
        let device = Self.number(attributes[.systemNumber]) ?? 0
        let inode = Self.number(attributes[.systemFileNumber]) ?? 0
        etag = "\"" + [device, inode, UInt64(size), microseconds].map { String($0, radix: 16) }.joined(separator: "-") + "\""
    }

    /// A number of a file's attributes, whichever integer type holds it (FoundationEssentials
    /// keeps them as Swift integers; there is no NSNumber to cast to).
    private static func number(_ value: Any?) -> UInt64? {
        switch value {
        case let value as UInt64: value
        case let value as Int: UInt64(clamping: value)
        case let value as Int64: UInt64(clamping: value)
        case let value as UInt: UInt64(value)
        case let value as UInt32: UInt64(value)
        case let value as Int32: UInt64(clamping: value)
        default: nil
        }
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
