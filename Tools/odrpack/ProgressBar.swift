#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import ODRBuilder
import ODRFormat

/// A one-line progress bar on stderr, drawn only when stderr is a terminal.
///
/// When stderr is a file or a pipe (CI logs), it draws nothing, so logs stay clean.
final class ProgressBar: Sendable {
    private struct State {
        var lastDraw: UInt64 = 0
        var lastPhase: BuildProgress.Phase?
        var drawn = false
    }

    private let enabled: Bool
    private let state = Locked(State())

    /// A bar that draws when `enabled` (by default: when stderr is a terminal).
    init(enabled: Bool = isatty(STDERR_FILENO) == 1) {
        self.enabled = enabled
    }

    /// Redraws the bar, at most ten times a second unless the phase changes.
    func update(_ progress: BuildProgress) {
        guard enabled else { return }
        let now = DispatchTime.now().uptimeNanoseconds
        let line: String? = state.withLock { state in
            let phaseChanged = state.lastPhase != progress.phase
            guard phaseChanged || now - state.lastDraw > 100_000_000 || progress.fraction >= 1 else { return nil }
            state.lastDraw = now
            state.lastPhase = progress.phase
            state.drawn = true
            return Self.render(progress)
        }
        if let line { FileHandle.standardError.write(Data(("\r" + line).utf8)) }
    }

    /// Erases the bar so the report starts on a clean line.
    func finish() {
        guard enabled else { return }
        let drawn = state.withLock { $0.drawn }
        if drawn { FileHandle.standardError.write(Data("\r\u{1B}[2K".utf8)) }
    }

    static func render(_ progress: BuildProgress, width: Int = 30) -> String {
        let filled = Int((progress.fraction * Double(width)).rounded(.down))
        let bar = String(repeating: "#", count: filled) + String(repeating: "-", count: width - filled)
        let percent = Int((progress.fraction * 100).rounded(.down))
        let phase = progress.phase.rawValue.padding(toLength: 10, withPad: " ", startingAt: 0)
        let megabytes = Double(progress.totalBytes) / 1_048_576
        return "\(phase) [\(bar)] \(String(format: "%3d", percent))% of \(String(format: "%.1f", megabytes)) MiB\u{1B}[K"
    }
}
