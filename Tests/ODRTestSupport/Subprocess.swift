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
