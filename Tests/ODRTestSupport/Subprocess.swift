#if canImport(Glibc)
import Glibc
#endif
import Foundation

/// The result of running a command line tool to completion.
public struct CommandResult: Sendable {
    public var status: Int32
    public var stdout: String
    public var stderr: String
}

/// Runs `executable` (looked up on PATH) with `arguments` and waits for it.
///
/// Interop tests use it to have real `unzip`, `curl` and `python3` read what we write.
@discardableResult
public func runCommand(_ executable: String, _ arguments: [String], input: Data? = nil) throws -> CommandResult {
    let process = Process()
    process.executableURL = URL(filePath: "/usr/bin/env")
    process.arguments = [executable] + arguments
    let out = Pipe(), err = Pipe()
    process.standardOutput = out
    process.standardError = err
    let stdin = Pipe()
    process.standardInput = stdin
    try process.run()
    if let input { stdin.fileHandleForWriting.write(input) }
    try stdin.fileHandleForWriting.close()
    // Read both pipes before waiting, so a chatty tool cannot block on a full pipe.
    let errData = LockedBox(Data())
    let errReader = Thread { errData.value = err.fileHandleForReading.readDataToEndOfFile() }
    errReader.start()
    let outData = out.fileHandleForReading.readDataToEndOfFile()
    process.waitUntilExit()
    while errReader.isExecuting || !errReader.isFinished { usleep(1000) }
    return CommandResult(
        status: process.terminationStatus,
        stdout: String(decoding: outData, as: UTF8.self),
        stderr: String(decoding: errData.value, as: UTF8.self))
}

/// A value shared with one helper thread; the thread writes it once and the caller reads it after
/// the thread has finished, so the accesses never overlap.
final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var stored: T
    init(_ value: T) { stored = value }
    var value: T {
        get { lock.withLock { stored } }
        set { lock.withLock { stored = newValue } }
    }
}

/// ``runCommand(_:_:input:)`` on a thread of its own, for async tests: waiting for the child must
/// not block the concurrency pool, which an in-process test server needs to answer the child.
///
/// ```swift
/// let result = try await runCommandOffPool(game.path, [server.baseURL.absoluteString, store.path])
/// ```
public func runCommandOffPool(_ executable: String, _ arguments: [String]) async throws -> CommandResult {
    try await withCheckedThrowingContinuation { continuation in
        Thread {
            continuation.resume(with: Result { try runCommand(executable, arguments) })
        }.start()
    }
}

/// A child process left running while the test works beside it: its standard output is collected
/// as it comes, its standard input stays open until ``closeInput()``, and ``kill()`` ends it the
/// way a crash would.
///
/// ```swift
/// let child = try RunningProcess(odr, ["hold", "--catalog", url, "--store", store, "level1"])
/// try await child.waitForOutput(containing: "holding")
/// child.kill()
/// ```
public final class RunningProcess: Sendable {
    // Process is a class started once in init and afterwards only read (pid) or signalled.
    private struct Handle: @unchecked Sendable { let process: Process; let input: Pipe }
    private let handle: Handle
    private let output = LockedBox(Data())
    private let errors = LockedBox(Data())

    /// Starts `executable` with `arguments`.
    public init(_ executable: URL, _ arguments: [String]) throws {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        let out = Pipe(), err = Pipe(), input = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = input
        try process.run()
        handle = Handle(process: process, input: input)
        for (pipe, box) in [(out, output), (err, errors)] {
            Thread {
                while true {
                    let chunk = pipe.fileHandleForReading.availableData
                    if chunk.isEmpty { return }
                    box.value.append(chunk)
                }
            }.start()
        }
    }

    /// The child's process id.
    public var processIdentifier: Int32 { handle.process.processIdentifier }
    /// What the child wrote to standard output so far.
    public var stdout: String { String(decoding: output.value, as: UTF8.self) }
    /// What the child wrote to standard error so far.
    public var stderr: String { String(decoding: errors.value, as: UTF8.self) }
    /// Whether the child is still running.
    public var isRunning: Bool { handle.process.isRunning }

    /// Waits until standard output contains `text`; throws when the child exits first or the
    /// timeout (a hang guard, not a schedule) passes.
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(120)) async throws {
        try await waitUntil("'\(text)' from the child (stderr: \(stderr))", timeout: timeout) {
            if !isRunning, !stdout.contains(text) {
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the child exited (status \(handle.process.terminationStatus)) without writing '\(text)'; stderr: \(stderr)"])
            }
            return stdout.contains(text)
        }
    }

    /// Closes the child's standard input.
    public func closeInput() { try? handle.input.fileHandleForWriting.close() }

    /// Kills the child with `SIGKILL` and waits until it has exited.
    public func kill() async throws {
        if isRunning { Glibc.kill(processIdentifier, SIGKILL) }
        try await waitUntil("the child to exit") { !isRunning }
    }
}

/// Polls `condition` every 10 ms until it holds; throws when `timeout` (a hang guard) passes.
public func waitUntil(_ what: String, timeout: Duration = .seconds(120), _ condition: () throws -> Bool) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
        guard ContinuousClock.now < deadline else {
            throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "timed out after \(timeout) waiting for \(what)"])
        }
        try await Task.sleep(for: .milliseconds(10))
    }
}

/// What ``runMeasuringPeakMemory(_:_:)`` saw of a finished child.
public struct MeasuredRun: Sendable {
    /// The exit status, or the signal's number when ``killedBySignal``.
    public var status: Int32
    public var killedBySignal: Bool
    public var stdout: String
    public var stderr: String
    /// The child's peak resident memory (`ru_maxrss` from `wait4`), in bytes.
    public var peakResidentBytes: Int
}

/// Runs `executable` with `arguments` to completion and reports its peak resident memory, read
/// for exactly this child from `wait4`. A small `python3` forks and waits for it: Linux records the
/// high-water mark of the memory a process execs from, which for a child spawned by the test
/// process is the test process's own (hundreds of MiB after building hostile inputs), while a
/// child forked by a small process starts from that process's few MiB. Output goes to temporary
/// files, so no pipe can fill. Blocks: call it off the concurrency pool.
public func runMeasuringPeakMemory(_ executable: URL, _ arguments: [String]) throws -> MeasuredRun {
    let folder = try TemporaryDirectory(prefix: "odr-measured")
    let outPath = folder.appending("stdout").path, errPath = folder.appending("stderr").path
    let usagePath = folder.appending("usage").path
    let script = """
        import os, sys
        pid = os.fork()
        if pid == 0:
            os.execv(sys.argv[2], sys.argv[2:])
        _, status, usage = os.wait4(pid, 0)
        with open(sys.argv[1], "w") as out:
            out.write(f"{usage.ru_maxrss} {status}")
        """
    var actions = posix_spawn_file_actions_t()
    posix_spawn_file_actions_init(&actions)
    defer { posix_spawn_file_actions_destroy(&actions) }
    posix_spawn_file_actions_addopen(&actions, 1, outPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    posix_spawn_file_actions_addopen(&actions, 2, errPath, O_WRONLY | O_CREAT | O_TRUNC, 0o644)
    let argv = (["/usr/bin/env", "python3", "-c", script, usagePath, executable.path] + arguments).map { strdup($0) } + [nil]
    defer { for pointer in argv { free(pointer) } }
    let environment = ProcessInfo.processInfo.environment.map { strdup("\($0.key)=\($0.value)") } + [nil]
    defer { for pointer in environment { free(pointer) } }
    var pid: pid_t = 0
    let spawned = posix_spawn(&pid, "/usr/bin/env", &actions, nil, argv, environment)
    guard spawned == 0 else { throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO) }
    var waited: Int32 = 0
    while waitpid(pid, &waited, 0) < 0 {
        guard errno == EINTR else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
    }
    let usage = ((try? String(contentsOfFile: usagePath, encoding: .utf8)) ?? "").split(separator: " ").compactMap { Int($0) }
    guard usage.count == 2 else {
        throw POSIXError(.EIO, userInfo: [NSLocalizedDescriptionKey: "python3 did not report the child's usage: \((try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "")"])
    }
    // WIFSIGNALED / WTERMSIG / WEXITSTATUS, which Swift does not import as macros.
    let status = Int32(usage[1])
    let signal = status & 0x7F
    let killed = signal != 0 && signal != 0x7F
    return MeasuredRun(status: killed ? signal : (status >> 8) & 0xFF, killedBySignal: killed,
                       stdout: (try? String(contentsOfFile: outPath, encoding: .utf8)) ?? "",
                       stderr: (try? String(contentsOfFile: errPath, encoding: .utf8)) ?? "",
                       peakResidentBytes: usage[0] * 1024)
}
