import CODR
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
import Dispatch
import ODRFormat
import ODRRuntime

/// Turns what a C caller passes into Swift values, or into an `invalid-argument` error that says
/// which argument was wrong: nothing a caller passes may trap.
enum CInput {
    /// A required NUL-terminated UTF-8 string.
    static func string(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(ResourceError) -> String {
        guard let pointer else { throw invalidArgument("\(what) is NULL; pass a NUL-terminated UTF-8 string.") }
        guard let text = String(validatingCString: pointer) else {
            throw invalidArgument("\(what) is not valid UTF-8; pass UTF-8 text.")
        }
        return text
    }

    /// A required, non-empty string.
    static func nonEmptyString(_ pointer: UnsafePointer<CChar>?, _ what: String) throws(ResourceError) -> String {
        let text = try string(pointer, what)
        guard !text.isEmpty else { throw invalidArgument("\(what) is empty.") }
        return text
    }

    /// A list of at least one tag, each non-NULL, non-empty UTF-8.
    static func tags(_ tags: UnsafePointer<UnsafePointer<CChar>?>?, count: Int) throws(ResourceError) -> Set<String> {
        guard count > 0 else { throw invalidArgument("The tag list is empty; pass at least one tag (tag_count > 0).") }
        guard let tags else { throw invalidArgument("The tag list is NULL while tag_count is \(count); pass an array of tag_count strings.") }
        var result = Set<String>()
        for index in 0..<count {
            let tag = try string(tags[index], "Tag \(index) of the tag list")
            guard !tag.isEmpty else { throw invalidArgument("Tag \(index) of the tag list is empty; tags are names such as \"level1\".") }
            result.insert(tag)
        }
        return result
    }

    /// A required out-pointer.
    static func out<T>(_ pointer: UnsafeMutablePointer<T>?, _ what: String) throws(ResourceError) -> UnsafeMutablePointer<T> {
        guard let pointer else { throw invalidArgument("\(what) is NULL; pass the address of a variable to receive the result.") }
        return pointer
    }

    /// Copies `text` into the caller's `buffer` of `size` bytes, NUL-terminated, and sets `*needed`
    /// (when not NULL) to the bytes it takes with its NUL; `buffer-too-small` (with `*needed` set)
    /// when `buffer` is NULL or smaller. `what` names the text in the message ("The path of 'x'").
    static func copy(
        _ text: String, into buffer: UnsafeMutablePointer<CChar>?, size: Int, needed: UnsafeMutablePointer<Int>?, what: String
    ) throws(ResourceError) {
        let bytes = Array(text.utf8CString)
        needed?.pointee = bytes.count
        guard let buffer, size >= bytes.count else {
            throw ResourceError(CStatus.bufferTooSmall, "\(what) needs \(bytes.count) bytes with its NUL; the buffer has \(size). Pass a buffer of *out_needed bytes.")
        }
        bytes.withUnsafeBufferPointer { source in
            guard let base = source.baseAddress else { return }
            buffer.update(from: base, count: source.count)
        }
    }

    /// The most bytes a size argument means (2^60, more than any disk): larger values are taken as
    /// this, so that the runtime's byte arithmetic cannot overflow on `INT64_MAX`.
    static let maximumBytes: Int64 = 1 << 60

    /// A byte count, capped at ``maximumBytes``.
    static func bytes(_ value: Int64) -> Int64 { min(value, maximumBytes) }

    /// A timeout in milliseconds: negative waits forever. Very long ones are capped at 24 days, so no
    /// value can overflow the clock arithmetic.
    static func deadline(_ milliseconds: Int64) -> DispatchTime? {
        guard milliseconds >= 0 else { return nil }
        return .now() + .milliseconds(Int(min(milliseconds, Int64(Int32.max))))
    }
}

/// The object behind a C handle: retained while the handle lives, released by its `_destroy`.
enum CHandle {
    static func make<T: AnyObject>(_ object: T) -> OpaquePointer {
        OpaquePointer(Unmanaged.passRetained(object).toOpaque())
    }

    static func object<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type, _ what: String) throws(ResourceError) -> T {
        guard let handle else { throw invalidArgument("The \(what) handle is NULL; pass one that odr_\(what)_create returned.") }
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeUnretainedValue()
    }

    static func release<T: AnyObject>(_ handle: OpaquePointer?, as type: T.Type) -> T? {
        guard let handle else { return nil }
        return Unmanaged<T>.fromOpaque(UnsafeRawPointer(handle)).takeRetainedValue()
    }
}

/// Runs the body of an entry point: its `ResourceError` becomes the returned status and the
/// thread's last error.
@inline(__always)
func entryPoint(_ body: () throws(ResourceError) -> Void) -> odr_status {
    do {
        try body()
        return ODR_OK
    } catch {
        return CLastError.record(error)
    }
}

/// Runs `operation` in a task and blocks the calling thread until it finishes or `deadline`
/// passes; see ``waitBlocking(deadline:awaitCancellation:start:cancel:)``.
func runBlocking(
    deadline: DispatchTime?, awaitCancellation: Bool,
    _ operation: @escaping @Sendable () async throws(ResourceError) -> Void
) throws(ResourceError) {
    let task = Locked<Task<Void, Never>?>(nil)
    try waitBlocking(deadline: deadline, awaitCancellation: awaitCancellation) { finish in
        let started = Task {
            do throws(ResourceError) {
                try await operation()
                finish(.success(()))
            } catch {
                finish(.failure(error))
            }
        }
        task.withLock { $0 = started }
    } cancel: {
        task.withLock { $0 }?.cancel()
    }
}

/// Starts an operation with `start` (which must call `finish` once, from any thread) and blocks the
/// calling thread until it finishes or `deadline` passes. On a timeout it calls `cancel`; with
/// `awaitCancellation` it then waits for the operation to wind down (so the caller finds things as
/// they were), and reports success if it finished anyway; the error is `wait-timeout`.
func waitBlocking(
    deadline: DispatchTime?, awaitCancellation: Bool,
    start: (@escaping @Sendable (Result<Void, ResourceError>) -> Void) throws(ResourceError) -> Void,
    cancel: () -> Void
) throws(ResourceError) {
    let finished = DispatchSemaphore(value: 0)
    let outcome = Locked<Result<Void, ResourceError>?>(nil)
    try start { result in
        outcome.withLock { $0 = result }
        finished.signal()
    }
    if let deadline {
        if finished.wait(timeout: deadline) == .timedOut {
            cancel()
            guard awaitCancellation else {
                throw ResourceError(CStatus.waitTimeout, "The call did not finish before its timeout and was cancelled. Call it again, with a longer timeout or a negative one for none.")
            }
            finished.wait()
            if case .success = outcome.withLock({ $0 }) { return }
            throw ResourceError(CStatus.waitTimeout, "The call did not finish before its timeout; it was cancelled and nothing is held. Call it again, with a longer timeout or a negative one for none.")
        }
    } else {
        finished.wait()
    }
    if case .failure(let error) = outcome.withLock({ $0 }) { throw error }
}
