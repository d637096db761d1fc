import Foundation
import ODRFormat

/// The bytes a folder holds: the sizes of the regular files below it, each inode once (what
/// `du --apparent-size -b` reports), without following symbolic links.
///
/// Files and folders that disappear during the walk (a pack renamed out of `staging/`) count as gone.
enum DiskUsage {
    /// The bytes below `folder`; 0 when it does not exist.
    static func bytes(under folder: URL) -> Int64 {
        var seen = Set<FileIdentity>()
        return walk(folder.path, seen: &seen)
    }

    /// The bytes below each top-level child of `folder` (a file counts as itself), by name.
    static func bytesByChild(of folder: URL) -> [String: Int64] {
        guard let names = try? FileManager.default.contentsOfDirectory(atPath: folder.path) else { return [:] }
        var seen = Set<FileIdentity>()
        var result: [String: Int64] = [:]
        for name in names { result[name] = walk(folder.appending(path: name).path, seen: &seen) }
        return result
    }

    private struct FileIdentity: Hashable {
        var device: UInt64
        var inode: UInt64
    }

    private static func walk(_ path: String, seen: inout Set<FileIdentity>) -> Int64 {
        // FileManager rather than lstat: which clang module owns `struct stat` depends on how files
        // are batched when compiling, which MemberImportVisibility then rejects.
        guard let attributes = try? FileManager.default.attributesOfItem(atPath: path) else { return 0 }
        switch attributes[.type] as? FileAttributeType {
        case .typeRegular?:
            // Hard links (files that share an entry) take their bytes once.
            if let links = attributes[.referenceCount] as? NSNumber, links.intValue > 1,
               let device = attributes[.deviceIdentifier] as? NSNumber, let inode = attributes[.systemFileNumber] as? NSNumber,
               !seen.insert(FileIdentity(device: device.uint64Value, inode: inode.uint64Value)).inserted {
                return 0
            }
            return (attributes[.size] as? NSNumber)?.int64Value ?? 0
        case .typeDirectory?:
            let names = (try? FileManager.default.contentsOfDirectory(atPath: path)) ?? []
            return names.reduce(0) { $0 + walk(path + "/" + $1, seen: &seen) }
        default:
            return 0
        }
    }
}

/// Samples ``DiskUsage`` of a folder's children on a thread of its own, keeping each child's peak
/// and the peak of their sum, until ``stop()``.
///
/// ```swift
/// let sampler = DiskUsageSampler(folder: store.appending(path: "staging"))
/// _ = try ChildProcess.measure([odr, "fetch", ...])
/// let peaks = sampler.stop()
/// ```
final class DiskUsageSampler: Sendable {
    struct Peaks {
        /// The largest sum over all children seen in one sample.
        var total: Int64 = 0
        /// Each child's largest size seen, by name.
        var byChild: [String: Int64] = [:]
        var samples = 0
    }

    private let state = Locked((running: true, peaks: Peaks()))
    private let finished = DispatchSemaphore(value: 0)

    /// Starts sampling `folder` every `interval`.
    init(folder: URL, interval: Duration = .milliseconds(20)) {
        let microseconds = UInt32(interval.components.seconds * 1_000_000 + interval.components.attoseconds / 1_000_000_000_000)
        let thread = Thread { [state, finished] in
            while state.withLock({ $0.running }) {
                let sizes = DiskUsage.bytesByChild(of: folder)
                state.withLock { state in
                    state.peaks.samples += 1
                    state.peaks.total = max(state.peaks.total, sizes.values.reduce(0, +))
                    state.peaks.byChild.merge(sizes, uniquingKeysWith: max)
                }
                usleep(microseconds)
            }
            finished.signal()
        }
        thread.name = "odrbench.disk-usage"
        thread.start()
    }

    /// Stops sampling and returns the peaks; call it once.
    func stop() -> Peaks {
        state.withLock { $0.running = false }
        finished.wait()
        return state.withLock { $0.peaks }
    }
}
