#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRRuntime
import ODRFormat

/// A one-line download bar on stderr, drawn only on a terminal so scripts and logs stay quiet.
final class FetchProgressBar: Sendable {
    private let enabled: Bool
    private let lastDraw = Locked<UInt64>(0)

    init(enabled: Bool = isatty(STDERR_FILENO) == 1) { self.enabled = enabled }

    /// Whether it draws anything (on a terminal, unless told to be quiet).
    var isEnabled: Bool { enabled }

    func update(_ progress: InstallProgress) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let due = lastDraw.withLock { last in
            guard now - last > 100_000_000 || progress.fraction >= 1 else { return false }
            last = now
            return true
        }
        guard due else { return }
        let bar = progressBarText(fraction: progress.fraction, completed: progress.completedBytes, total: progress.totalBytes)
        let line = "\r\(bar)  packs \(progress.completedPacks)/\(progress.totalPacks)\u{1B}[K"
        FileHandle.standardError.write(Data(line.utf8))
    }

    func finish() {
        if enabled { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }
}

/// One progress line for people: `[=========           ]  31%  1.2 MiB of 3.9 MiB`.
func progressBarText(fraction: Double, completed: Int64, total: Int64, width: Int = 30) -> String {
    let clamped = min(max(fraction, 0), 1)
    let filled = Int(clamped * Double(width))
    let bar = String(repeating: "=", count: filled) + String(repeating: " ", count: width - filled)
    let percent = String(Int(clamped * 100)).leftPadded(to: 3)
    return "[\(bar)] \(percent)%  \(byteText(completed)) of \(byteText(total))"
}

extension String {
    fileprivate func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: " ", count: width - count) + self
    }
}
