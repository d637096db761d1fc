#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRRuntime
import Synchronization

/// A one-line download bar on stderr, drawn only on a terminal so scripts and logs stay quiet.
final class FetchProgressBar: Sendable {
    private let enabled: Bool
    private let lastDraw = Mutex<UInt64>(0)

    init(enabled: Bool = isatty(STDERR_FILENO) == 1) { self.enabled = enabled }

    func update(_ progress: InstallProgress) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = lastDraw.withLock { last in
            guard now - last > 100_000_000 || progress.fraction >= 1 else { return false }
            last = now
            return true
        }
        guard due else { return }
        let width = 30, filled = Int(progress.fraction * Double(width))
        let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
        let line = "\r[\(bar)] \(Int(progress.fraction * 100))%  \(byteText(progress.completedBytes)) of \(byteText(progress.totalBytes))  packs \(progress.completedPacks)/\(progress.totalPacks)\u{1B}[K"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}
