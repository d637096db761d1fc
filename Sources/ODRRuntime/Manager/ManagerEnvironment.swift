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

/// Where a ``ResourceManager`` reads the time and waits; tests inject a clock they control.
public protocol ManagerClock: Sendable {
    /// Seconds since 1970.
    func now() -> Double
    /// Suspends for `duration` (the disk watcher's interval); throws when the task is cancelled.
    /// The default sleeps on the system's continuous clock.
    func sleep(for duration: Duration) async throws
}

extension ManagerClock {
    /// Sleeps on the system's continuous clock.
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

/// The wall clock.
public struct SystemClock: ManagerClock {
    /// Creates the wall clock.
    public init() {}
    /// Seconds since 1970, from `Date`.
    public func now() -> Double { Date().timeIntervalSince1970 }
}

/// Tells how much space is free on the file system that holds a directory; tests inject a probe
/// that reports a small disk.
public protocol DiskSpaceProbe: Sendable {
    /// Bytes available to unprivileged writers on the file system holding `directory`.
    func freeBytes(at directory: URL) -> Int64?
}

/// Reads free space with `statvfs`.
public struct FileSystemSpaceProbe: DiskSpaceProbe {
    /// Creates the probe; it keeps no state.
    public init() {}

    /// The bytes `statvfs` reports available to unprivileged writers, or `nil` when the call fails.
    public func freeBytes(at directory: URL) -> Int64? {
        var info = statvfs()
        guard statvfs(directory.path, &info) == 0 else { return nil }
        return Int64(info.f_bavail) * Int64(info.f_frsize)
    }
}
