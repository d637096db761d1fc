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
/// It is spawned and reaped here (`posix_spawn`, `waitpid`), not by Foundation's `Process`, which
/// learns that a child exited from a socket the child inherits and then calls a blocking `waitpid`
/// on its one manager thread: a daemon that closes the descriptors it inherited (`avahi-daemon`
/// does, at start) makes that thread wait for the daemon's end, and until then no `Process` of the
/// test process is reaped (an `odr fetch` child exits and stays a zombie, its test hangs). Here the
/// child keeps only its three standard streams, starts with no signal blocked, and is reaped by
/// ``isRunning``; a child still running when the object goes away is killed and reaped.
///
/// ```swift
/// let child = try RunningProcess(odr, ["hold", "--catalog", url, "--store", store, "level1"])
/// defer { child.terminate() }
/// try await child.waitForOutput(containing: "holding")
/// try await child.kill()
/// ```
public final class RunningProcess: Sendable {
    /// The child's process id.
    public let processIdentifier: Int32
    /// The write end of the child's standard input, -1 once closed.
    private let input = LockedBox<Int32>(-1)
    private let output = LockedBox(Data())
    private let errors = LockedBox(Data())
    /// Whether the reader of standard output, and of standard error, has met the end.
    private let outputDone = LockedBox(false), errorsDone = LockedBox(false)
    /// The raw `waitpid` status once the child has been reaped; read and set under `reaping`, so
    /// that two threads asking at once cannot both call `waitpid`.
    private let reaped = LockedBox<Int32?>(nil)
    private let reaping = NSLock()

    /// Starts `executable` with `arguments`, its environment this process's with `environment`
    /// added (or replaced, key by key).
    public init(_ executable: URL, _ arguments: [String], environment: [String: String] = [:]) throws {
        var pipes: [[Int32]] = []
        defer { for pipe in pipes { for descriptor in pipe where descriptor >= 0 { close(descriptor) } } }
        for _ in 0..<3 {
            var pair: [Int32] = [-1, -1]
            guard pipe(&pair) == 0 else { throw POSIXError(POSIXErrorCode(rawValue: errno) ?? .EIO) }
            for descriptor in pair { _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC) }
            pipes.append(pair)
        }
        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, pipes[0][0], 0)
        posix_spawn_file_actions_adddup2(&actions, pipes[1][1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipes[2][1], 2)
        // Nothing else of this process reaches the child, not even a descriptor another thread
        // opened without close-on-exec (such as a Foundation pipe).
        for descriptor in Self.openDescriptors() where descriptor > 2 {
            posix_spawn_file_actions_addclose(&actions, descriptor)
        }
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        // A thread of the concurrency pool blocks signals, and a child inherits its mask: without
        // this the child would never see SIGTERM or SIGINT.
        var noSignals = sigset_t(), defaults = sigset_t()
        sigemptyset(&noSignals)
        sigemptyset(&defaults)
        sigaddset(&defaults, SIGPIPE)
        posix_spawnattr_setsigmask(&attributes, &noSignals)
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETSIGMASK | POSIX_SPAWN_SETSIGDEF))
        let argv = ([executable.path] + arguments).map { strdup($0) } + [nil]
        defer { for pointer in argv { free(pointer) } }
        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let envp = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer { for pointer in envp { free(pointer) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, executable.path, &actions, &attributes, argv, envp)
        guard spawned == 0 else {
            throw POSIXError(POSIXErrorCode(rawValue: spawned) ?? .EIO, userInfo: [NSLocalizedDescriptionKey: "cannot start \(executable.path)"])
        }
        processIdentifier = pid
        input.value = pipes[0][1]
        pipes[0][1] = -1
        for (index, box, done) in [(1, output, outputDone), (2, errors, errorsDone)] {
            let descriptor = pipes[index][0]
            pipes[index][0] = -1
            Thread {
                var chunk = [UInt8](repeating: 0, count: 65536)
                while true {
                    let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { break }
                    box.value.append(contentsOf: chunk[0..<count])
                }
                close(descriptor)
                done.value = true
            }.start()
        }
    }

    deinit {
        terminate()
        closeInput()
    }

    /// The descriptors open in this process, from `/proc/self/fd`.
    private static func openDescriptors() -> [Int32] {
        ((try? FileManager.default.contentsOfDirectory(atPath: "/proc/self/fd")) ?? []).compactMap { Int32($0) }
    }

    /// What the child wrote to standard output so far.
    public var stdout: String { String(decoding: output.value, as: UTF8.self) }
    /// What the child wrote to standard error so far.
    public var stderr: String { String(decoding: errors.value, as: UTF8.self) }

    /// Whether both output streams have ended (the child and whatever inherited them have
    /// exited), so ``stdout`` and ``stderr`` hold everything it wrote.
    public var outputEnded: Bool { outputDone.value && errorsDone.value }

    /// Whether the child is still running; reaps it once it has exited.
    public var isRunning: Bool { reap(blocking: false) == nil }

    /// The exit status once the child has exited (the signal's number when a signal ended it), else nil.
    public var terminationStatus: Int32? {
        reap(blocking: false).map { status in
            let signal = status & 0x7F
            return signal != 0 && signal != 0x7F ? signal : (status >> 8) & 0xFF
        }
    }

    /// The raw wait status, reaping the child if it has exited (or, `blocking`, once it has).
    private func reap(blocking: Bool) -> Int32? {
        reaping.lock()
        defer { reaping.unlock() }
        if let status = reaped.value { return status }
        var status: Int32 = 0
        while true {
            let result = waitpid(processIdentifier, &status, blocking ? 0 : WNOHANG)
            if result == processIdentifier {
                reaped.value = status
                return status
            }
            if result < 0, errno == EINTR { continue }
            // 0: still running. ECHILD: reaped already by someone else, so it has exited.
            if result < 0 {
                reaped.value = 0
                return 0
            }
            return nil
        }
    }

    /// Waits until standard output contains `text`; throws when the child exits first or the
    /// timeout (a hang guard, not a schedule) passes.
    public func waitForOutput(containing text: String, timeout: Duration = .seconds(120)) async throws {
        try await waitUntil("'\(text)' from the child (stderr: \(stderr))", timeout: timeout) {
            if !isRunning, !stdout.contains(text) {
                throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "the child exited (status \(terminationStatus ?? -1)) without writing '\(text)'; stderr: \(stderr)"])
            }
            return stdout.contains(text)
        }
    }

    /// Waits until the child exits and returns its ``terminationStatus``; throws when the timeout (a
    /// hang guard, not a schedule) passes first, leaving the child running.
    @discardableResult
    public func waitForExit(timeout: Duration = .seconds(120)) async throws -> Int32 {
        try await waitUntil("the child \(processIdentifier) to exit (stdout: \(stdout.suffix(2000)); stderr: \(stderr.suffix(2000)))", timeout: timeout) { !isRunning }
        return terminationStatus ?? -1
    }

    /// Closes the child's standard input.
    public func closeInput() {
        let descriptor = input.value
        input.value = -1
        if descriptor >= 0 { close(descriptor) }
    }

    /// Kills the child with `SIGKILL` and waits until it has exited.
    public func kill() async throws {
        if isRunning { Glibc.kill(processIdentifier, SIGKILL) }
        try await waitUntil("the child to exit") { !isRunning }
    }

    /// Kills the child with `SIGKILL` unless it has exited, and reaps it, blocking the caller for
    /// the moment that takes: for `defer` blocks, which cannot wait asynchronously.
    public func terminate() {
        guard isRunning else { return }
        Glibc.kill(processIdentifier, SIGKILL)
        _ = reap(blocking: true)
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
