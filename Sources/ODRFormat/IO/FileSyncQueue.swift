#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Dispatch

/// Flushes written files to stable storage (`fsync`) and closes them on a thread of its own, so
/// that the thread writing the next file does not wait for the disk.
///
/// A file handed over with ``submit(_:path:)`` is synced and closed in the order given. At most
/// ``maximumPending`` files wait at once: a writer faster than the disk waits in `submit` rather
/// than holding ever more descriptors. ``finish()`` waits for every file handed over and throws
/// the first failure; only after it returns are those files on stable storage, so a caller that
/// records files as durable (a pack as installed) calls it first.
///
/// ```swift
/// let syncs = FileSyncQueue()
/// syncs.submit(try file.detachDescriptor(), path: file.path)   // for each file written
/// try syncs.finish()                                            // before recording them
/// ```
package final class FileSyncQueue: @unchecked Sendable {
    /// The most files submitted and not yet synced.
    package static let maximumPending = 32

    private let queue = DispatchQueue(label: "odr.file-sync")
    private let slots = DispatchSemaphore(value: FileSyncQueue.maximumPending)
    private let failure = Locked<FormatError?>(nil)

    package init() {}

    /// Hands over an open descriptor: it is synced, then closed, on the queue's thread. Waits while
    /// ``maximumPending`` files are still waiting.
    package func submit(_ descriptor: Int32, path: String) {
        slots.wait()
        queue.async { [slots, failure] in
            defer { slots.signal() }
            var result: Int32
            repeat { result = fsync(descriptor) } while result != 0 && errno == EINTR
            let code = errno
            close(descriptor)
            guard result != 0 else { return }
            failure.withLock { first in
                if first == nil { first = FormatError.posix("sync '\(path)'", errno: code, field: nil) }
            }
        }
    }

    /// Waits until every file submitted so far is synced and closed.
    ///
    /// - Throws: the first `fsync` failure (an `io` error naming the file): those files may not be
    ///   on stable storage, so whatever they belong to must not count as durable.
    package func finish() throws {
        queue.sync {}
        if let error = failure.withLock({ $0 }) { throw error }
    }

    deinit {
        // Descriptors still queued are closed by their blocks, which hold what they need.
        queue.sync {}
    }
}
