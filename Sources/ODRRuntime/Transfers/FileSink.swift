#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFormat

/// A ``TransferSink`` that writes the body to a file and can continue a partial download later.
///
/// While a download is incomplete the file holds the bytes received so far, and a small companion
/// file (`<name>.resume`) holds the response's validators (`ETag`, `Last-Modified`); it is written
/// when a download fails, or during the download once 1 MiB has arrived. A later
/// ``FileSink`` for the same path, in this or another process, reports them as its
/// ``resumePoint()``, so the engine asks only for the missing bytes (`Range` guarded by `If-Range`).
/// When the download completes, the companion file is removed; after an integrity failure both are.
///
/// ```swift
/// let sink = FileSink(url: staging.appending(path: "\(pack.id).zip"))
/// let result = try await engine.download(request, into: sink)
/// ```
public final class FileSink: TransferSink {
    /// Where the body goes.
    public let url: URL
    /// Where the validators of a partial download are kept.
    public var resumeInfoURL: URL { URL(filePath: url.path + ".resume") }
    private let keepsPartialBytes: Bool
    private let state = Locked(State())

    private struct State {
        var descriptor: Int32 = -1
        /// Bytes of the body in the file.
        var held: Int64 = 0
        /// Validators of the response the held bytes came from.
        var validators = TransferValidators()
        /// Whether a `.resume` file may exist (found by ``resumePoint()`` or written by this sink).
        var resumeInfoMayExist = false
    }

    /// Held bytes from which the validators are written down during the download, so even a
    /// killed process leaves a resumable file. Below it they are written only when a download
    /// fails: creating an extra file per small download costs more than re-fetching it.
    private static let persistThreshold: Int64 = 1 << 20

    /// Creates a sink for `url`; nothing is touched until the first response arrives.
    ///
    /// - Parameter keepsPartialBytes: whether a failed or cancelled download leaves its bytes for a
    ///   later resume (the default) or removes them.
    public init(url: URL, keepsPartialBytes: Bool = true) {
        self.url = url
        self.keepsPartialBytes = keepsPartialBytes
    }

    deinit {
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
        }
    }

    /// The bytes of a partial download in the file, when its `.resume` file holds the validators they came from.
    public func resumePoint() -> TransferResumePoint? {
        // access() first: a missing file is the common case, and a failed Data(contentsOf:) builds an error.
        guard keepsPartialBytes, access(resumeInfoURL.path, F_OK) == 0,
              let data = try? Data(contentsOf: resumeInfoURL) else { return nil }
        state.withLock { $0.resumeInfoMayExist = true }
        guard let validators = try? JSONDecoder().decode(TransferValidators.self, from: data),
              case var info = stat(), lstat(url.path, &info) == 0, info.st_size > 0
        else { return nil }
        return TransferResumePoint(offset: Int64(info.st_size), validators: validators)
    }

    /// Reads the file's first `count` bytes back, so the engine can hash what an earlier attempt kept.
    public func readHeldBytes(count: Int64, _ consume: (UnsafeRawBufferPointer) throws -> Void) async throws {
        let descriptor = open(url.path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else { throw storageError("open \(url.path) for reading") }
        defer { close(descriptor) }
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var remaining = count
        while remaining > 0 {
            let wanted = Int(min(Int64(buffer.count), remaining))
            let got = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, wanted) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { throw storageError("read \(url.path)") }
            try buffer.withUnsafeBytes { try consume(UnsafeRawBufferPointer(rebasing: $0[..<got])) }
            remaining -= Int64(got)
        }
    }

    /// Opens the file (emptied when the body starts over) and keeps exactly `head.offset` held bytes.
    public func begin(_ head: TransferResponseHead) async throws {
        let staleResumeInfo = try state.withLock { state throws(ResourceError) -> Bool in
            if state.descriptor < 0 {
                let truncate = head.offset == 0 ? O_TRUNC : 0
                state.descriptor = open(url.path, O_WRONLY | O_CREAT | O_CLOEXEC | truncate, 0o644)
                guard state.descriptor >= 0 else { throw storageError("create \(url.path)") }
            }
            if head.offset > 0 || state.held > 0 {
                guard ftruncate(state.descriptor, off_t(head.offset)) == 0,
                      lseek(state.descriptor, off_t(head.offset), SEEK_SET) >= 0 else {
                    throw storageError("truncate \(url.path)")
                }
            }
            state.held = head.offset
            let changed = state.validators != head.validators
            state.validators = head.validators
            // Validators of other bytes must not outlive them.
            defer { if changed { state.resumeInfoMayExist = false } }
            return changed && state.resumeInfoMayExist
        }
        if staleResumeInfo { try? FileManager.default.removeItem(at: resumeInfoURL) }
    }

    /// Appends the bytes; at 1 MiB held, writes the validators down so even a killed process can resume.
    public func write(_ bytes: Data) async throws {
        let persist = try state.withLock { state throws -> TransferValidators? in
            guard state.descriptor >= 0 else {
                throw ResourceError(.storageFailure, "The file sink received bytes before a response began.", url: url)
            }
            let descriptor = state.descriptor
            try bytes.withUnsafeBytes { (buffer: UnsafeRawBufferPointer) throws in
                guard let base = buffer.baseAddress else { return }
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(descriptor, base + offset, buffer.count - offset)
                    if written < 0, errno == EINTR { continue }
                    guard written > 0 else { throw storageError("write \(url.path)") }
                    offset += written
                }
            }
            let before = state.held
            state.held += Int64(bytes.count)
            guard keepsPartialBytes, !state.validators.isEmpty,
                  before < Self.persistThreshold, state.held >= Self.persistThreshold else { return nil }
            state.resumeInfoMayExist = true
            return state.validators
        }
        if let persist { try writeResumeInfo(persist) }
    }

    /// Closes the file and removes the `.resume` file: the download is complete.
    public func finish() async throws {
        if closeFile().resumeInfoMayExist { try? FileManager.default.removeItem(at: resumeInfoURL) }
    }

    /// Closes the file and keeps its bytes for a resume, unless they failed integrity or partial bytes are not kept.
    public func fail(_ error: ResourceError) async {
        let closed = closeFile()
        if error.code == .integrity || !keepsPartialBytes {
            try? FileManager.default.removeItem(at: url)
            if closed.resumeInfoMayExist { try? FileManager.default.removeItem(at: resumeInfoURL) }
        } else if closed.held > 0, !closed.validators.isEmpty {
            // Best effort: without it the next attempt simply starts over.
            try? writeResumeInfo(closed.validators)
        }
    }

    private func writeResumeInfo(_ validators: TransferValidators) throws(ResourceError) {
        do {
            try JSONEncoder().encode(validators).write(to: resumeInfoURL, options: .atomic)
        } catch {
            throw ResourceError(.storageFailure, "Could not write \(resumeInfoURL.path). Check permissions and free space.",
                                url: resumeInfoURL, cause: SinkError(underlying: "\(error)"))
        }
    }

    /// Closes the file and returns the state it had.
    private func closeFile() -> (held: Int64, validators: TransferValidators, resumeInfoMayExist: Bool) {
        state.withLock { state in
            if state.descriptor >= 0 { close(state.descriptor) }
            state.descriptor = -1
            return (state.held, state.validators, state.resumeInfoMayExist)
        }
    }

    private func storageError(_ operation: String) -> ResourceError {
        let code = errno
        let cause = SinkError(underlying: "\(operation): \(String(cString: strerror(code)))")
        if code == ENOSPC || code == EDQUOT {
            return ResourceError(.outOfSpace, "The disk is full. Free some space, then try again.", url: url, cause: cause)
        }
        return ResourceError(.storageFailure, "Could not \(operation). Check permissions and free space.", url: url, cause: cause)
    }
}
