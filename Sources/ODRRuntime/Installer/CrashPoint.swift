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

/// Fault injection for crash tests: when the environment variable `ODR_CRASH_AT` names a point, the
/// process kills itself with `SIGKILL` the first time an install reaches it, as a power cut or an
/// out-of-memory kill would, with no chance to clean up.
///
/// Points: `download` (half of a pack's bytes arrived, and at least ``downloadMinimumBytes``, so the
/// partial download is resumable), `unpack` (every entry extracted and verified
/// in `staging/`, before the rename), `after-rename` (the pack is in `packs/`, its row not committed),
/// `mid-purge` (a purge recorded, its folder still in `packs/`), `chunks` (half of a chunked
/// entry's chunks assembled and recorded in the journal).
enum CrashPoint: String {
    case download
    case chunks
    case unpack
    case afterRename = "after-rename"
    case midPurge = "mid-purge"

    private static let armed = ProcessInfo.processInfo.environment["ODR_CRASH_AT"].flatMap(CrashPoint.init(rawValue:))

    /// Kills the process if `ODR_CRASH_AT` names this point.
    func reached() {
        guard Self.armed == self else { return }
        kill(getpid(), SIGKILL)
    }

    static var isArmed: Bool { armed != nil }

    /// The bytes a download must hold before `download` fires: past the point where a ``FileSink``
    /// writes its resume validators.
    static let downloadMinimumBytes: Int64 = 2 << 20
}
