#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// Runs a command as a child process and reports its wall time and peak memory.
///
/// Peak memory comes from `wait4`'s resource usage of that one child, so each measurement stands on
/// its own even when several run in one benchmark; ``ChildProcess/measureAlone(_:quiet:)`` also keeps
/// odrbench's own resident size out of it.
struct ChildMeasurement {
    var status: Int32
    var seconds: Double
    /// Peak resident set size, in bytes.
    var peakMemory: Int64
    var output: String
}

enum ChildProcess {
    /// The running odrbench executable, to run its worker subcommands as children.
    static var selfExecutable: String {
        (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    }

    /// Runs `arguments[0]` (a path, or a name looked up on PATH) and waits for it.
    static func measure(_ arguments: [String], quiet: Bool = false) throws -> ChildMeasurement {
        let outputURL = FileManager.default.temporaryDirectory.appending(path: "odrbench-\(UUID().uuidString).out")
        defer { try? FileManager.default.removeItem(at: outputURL) }
        let start = ContinuousClock.now
        let pid = try spawn(arguments, stdout: outputURL.path, stderr: quiet ? "/dev/null" : nil)
        let (exitStatus, usage) = try wait(pid, name: arguments[0])
        let elapsed = ContinuousClock.now - start
        let output = (try? String(contentsOf: outputURL, encoding: .utf8)) ?? ""
        return ChildMeasurement(
            status: exitStatus,
            seconds: Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18,
            peakMemory: Int64(usage.ru_maxrss) * 1024,
            output: output)
    }

    /// Starts `arguments[0]` (a path, or a name looked up on PATH) without waiting for it, its
    /// stdout and stderr written to the files at those paths (`nil`: this process's own), its
    /// stdin the descriptor `stdin` when given.
    ///
    /// With `ownGroup` the child leads a process group of its own, so `kill(-pid, ...)` reaches
    /// it and every process it starts (a shell loop's commands).
    ///
    /// - Returns: its process id, for ``wait(_:name:)`` (and `kill`).
    static func spawn(_ arguments: [String], stdout: String?, stderr: String?, stdin: Int32? = nil, ownGroup: Bool = false) throws -> pid_t {
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        if ownGroup {
            posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP))
            posix_spawnattr_setpgroup(&attributes, 0)
        }
        if let stdin { posix_spawn_file_actions_adddup2(&actions, stdin, 0) }
        if let stdout { posix_spawn_file_actions_addopen(&actions, 1, stdout, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        if let stderr { posix_spawn_file_actions_addopen(&actions, 2, stderr, O_WRONLY | O_CREAT | O_TRUNC, 0o644) }
        let argv: [UnsafeMutablePointer<CChar>?] = arguments.map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawnp(&pid, arguments[0], &actions, &attributes, argv, environ)
        guard spawned == 0 else {
            throw ValidationFailure("could not start \(arguments[0]): \(String(cString: strerror(spawned)))")
        }
        return pid
    }

    /// Waits for the child `pid` (started as `name`) to exit.
    ///
    /// - Returns: its exit status (128 + the signal when a signal ended it) and its resource usage.
    static func wait(_ pid: pid_t, name: String) throws -> (status: Int32, usage: rusage) {
        var status: Int32 = 0
        var usage = rusage()
        while wait4(pid, &status, 0, &usage) < 0 {
            guard errno == EINTR else { throw ValidationFailure("waiting for \(name) failed") }
        }
        return ((status & 0x7F) == 0 ? (status >> 8) & 0xFF : 128 + (status & 0x7F), usage)
    }

    /// Whether ``measureAlone(_:quiet:)`` reports a command's own peak memory (it needs `/usr/bin/time`).
    static var measuresPeakMemoryAlone: Bool { FileManager.default.isExecutableFile(atPath: "/usr/bin/time") }

    /// Like ``measure(_:quiet:)``, but `peakMemory` is the command's own: it runs under `/usr/bin/time`
    /// when present. The `ru_maxrss` that `wait4` reports for a child of this process is at least this
    /// process's own resident size at the spawn (Linux records the old address space's high-water mark
    /// at exec), so it measures odrbench, not the command; `time` is small when it forks, so the figure
    /// it writes is the command's own. Without `time`, `peakMemory` is `wait4`'s figure.
    static func measureAlone(_ arguments: [String], quiet: Bool = false) throws -> ChildMeasurement {
        guard measuresPeakMemoryAlone else { return try measure(arguments, quiet: quiet) }
        let report = FileManager.default.temporaryDirectory.appending(path: "odrbench-\(UUID().uuidString).rss")
        defer { try? FileManager.default.removeItem(at: report) }
        var measurement = try measure(["/usr/bin/time", "-f", "%M", "-o", report.path] + arguments, quiet: quiet)
        // `time` writes KiB on the last line (after "Command exited with non-zero status" on failure).
        if let text = try? String(contentsOf: report, encoding: .utf8),
           let kib = text.split(whereSeparator: \.isNewline).last.flatMap({ Int64($0.trimmingCharacters(in: .whitespaces)) }) {
            measurement.peakMemory = kib * 1024
        }
        return measurement
    }
}

/// A benchmark that could not run; its message says why.
struct ValidationFailure: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}

/// Formats byte counts and rates for benchmark output.
enum BenchFormat {
    static func mib(_ bytes: Int64) -> String { String(format: "%.1f MiB", Double(bytes) / 1_048_576) }
    static func rate(_ bytes: Int64, _ seconds: Double) -> String { String(format: "%.0f MiB/s", Double(bytes) / 1_048_576 / seconds) }
    static func ratio(_ value: Double) -> String { String(format: "%.2fx", value) }
}
