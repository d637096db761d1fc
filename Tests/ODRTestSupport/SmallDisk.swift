#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// A small tmpfs mounted in a temporary folder: a real file system that runs out of space, so a
/// test sees `ENOSPC` from real writes. Needs root (`mount`); ``isAvailable`` says whether it works.
///
/// ```swift
/// let disk = try SmallDisk(bytes: 3 << 20)
/// defer { disk.unmount() }
/// let store = try ResourceStore(directory: disk.url.appending(path: "store"))
/// ```
public final class SmallDisk: Sendable {
    public let url: URL

    /// Whether this machine lets the tests mount a tmpfs (root with the mount capability).
    public static let isAvailable: Bool = {
        guard getuid() == 0, let probe = try? SmallDisk(bytes: 1 << 20) else { return false }
        probe.unmount()
        return true
    }()

    public init(bytes: Int) throws {
        let folder = FileManager.default.temporaryDirectory.appending(path: "odr-small-disk-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let result = try runCommand("mount", ["-t", "tmpfs", "-o", "size=\(bytes)", "tmpfs", folder.path])
        guard result.status == 0 else {
            try? FileManager.default.removeItem(at: folder)
            throw CocoaError(.fileWriteNoPermission, userInfo: [NSLocalizedDescriptionKey: "mount failed: \(result.stderr)"])
        }
        url = folder
    }

    /// Unmounts the file system (dropping its files) and removes the folder.
    public func unmount() {
        _ = try? runCommand("umount", [url.path])
        try? FileManager.default.removeItem(at: url)
    }
}
