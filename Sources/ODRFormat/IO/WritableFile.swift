#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A file opened for writing with an append buffer; owns its descriptor and closes it in `deinit`.
///
/// Appends go through a 1 MiB buffer; ``overwrite(_:at:)`` patches bytes already written (the
/// ZIP writer fills in sizes and CRCs of a local header once the entry's data is written). The
/// runtime's trace recorder writes its file with it too.
package final class WritableFile {
    let path: String
    private var descriptor: Int32
    private var buffer: [UInt8] = []
    private let bufferLimit = 1 << 20
    /// The logical end of the file: bytes written plus bytes buffered.
    private(set) var position: Int64 = 0

    /// Creates a new file; fails if one exists, so immutable files are never overwritten.
    ///
    /// - Parameter mode: the permissions (before the umask); `0o600` for a private key.
    init(creating url: URL, mode: mode_t = 0o644) throws {
        path = url.path
        descriptor = open(path, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, mode)
        guard descriptor >= 0 else {
            throw FormatError.posix("create '\(path)'", errno: errno, field: nil)
        }
    }

    /// Takes over `descriptor`, a file the caller opened for writing (named `path` in errors).
    package init(adopting descriptor: Int32, path: String) {
        self.path = path
        self.descriptor = descriptor
    }

    /// Opens an existing regular file to append to it, after its current end.
    ///
    /// Refuses a symbolic link in place of the file (`O_NOFOLLOW`) and anything that is not a regular
    /// file, with `unsafe-entry-name`; the check is made on the opened descriptor, so the file cannot
    /// be swapped between check and use.
    init(appendingTo url: URL) throws {
        path = url.path
        // O_NONBLOCK: opening a FIFO for writing would otherwise wait for a reader; regular files ignore it.
        descriptor = open(path, O_WRONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else {
            let code = errno
            if code == ELOOP || code == EISDIR || code == ENXIO {
                throw FormatError(.unsafeEntryName, "'\(path)' is not a regular file (a symbolic link?); refusing to write through it.", field: nil)
            }
            throw FormatError.posix("open '\(path)'", errno: code, field: nil)
        }
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FormatError.posix("inspect '\(path)'", errno: errno, field: nil) }
        guard info.st_mode & S_IFMT == S_IFREG else {
            throw FormatError(.unsafeEntryName, "'\(path)' is not a regular file; refusing to write to it.", field: nil)
        }
        let end = lseek(descriptor, 0, SEEK_END)
        guard end >= 0 else { throw FormatError.posix("seek in '\(path)'", errno: errno, field: nil) }
        position = Int64(end)
    }

    func append(_ bytes: UnsafeRawBufferPointer) throws {
        if buffer.count + bytes.count > bufferLimit { try flush() }
        if bytes.count >= bufferLimit {
            try writeAll(bytes)
        } else {
            // Reserved at the first buffered append, not at open: a file written through
            // (``appendThrough(_:)``) never needs the megabyte.
            if buffer.capacity == 0 { buffer.reserveCapacity(bufferLimit) }
            buffer.append(contentsOf: bytes)
        }
        position += Int64(bytes.count)
    }

    package func append(_ bytes: [UInt8]) throws {
        try bytes.withUnsafeBytes { raw in try append(raw) }
    }

    /// Replaces bytes at `offset`, which must already have been appended.
    func overwrite(_ bytes: [UInt8], at offset: Int64) throws {
        try flush()
        let written = bytes.withUnsafeBytes { raw in pwrite(descriptor, raw.baseAddress, raw.count, off_t(offset)) }
        guard written == bytes.count else { throw FormatError.posix("write '\(path)'", errno: errno, field: nil) }
    }

    /// Discards everything from `offset` on.
    func truncate(to offset: Int64) throws {
        try flush()
        guard ftruncate(descriptor, off_t(offset)) == 0, lseek(descriptor, off_t(offset), SEEK_SET) >= 0 else {
            throw FormatError.posix("truncate '\(path)'", errno: errno, field: nil)
        }
        position = offset
    }

    package func flush() throws {
        guard !buffer.isEmpty else { return }
        try buffer.withUnsafeBytes { raw in try writeAll(raw) }
        buffer.removeAll(keepingCapacity: true)
    }

    /// Flushes, forces the bytes to stable storage and closes the file.
    package func close(sync: Bool = true) throws {
        try flush()
        if sync, fsync(descriptor) != 0 { throw FormatError.posix("sync '\(path)'", errno: errno, field: nil) }
        Glibc.close(descriptor)
        descriptor = -1
    }

    /// Flushes and hands the open descriptor to the caller, who must close it; the file object is
    /// closed from then on. For ``FileSyncQueue``, which flushes it to stable storage and closes it
    /// on another thread.
    func detachDescriptor() throws -> Int32 {
        try flush()
        defer { descriptor = -1 }
        return descriptor
    }

    /// Writes `bytes` at the end of the file now, without copying them into the buffer (flushing
    /// what the buffer holds first): for a caller that hands every piece to the file system as it
    /// arrives.
    func appendThrough(_ bytes: UnsafeRawBufferPointer) throws {
        try flush()
        try writeAll(bytes)
        position += Int64(bytes.count)
    }

    private func writeAll(_ bytes: UnsafeRawBufferPointer) throws {
        var offset = 0
        while offset < bytes.count {
            let n = Glibc.write(descriptor, bytes.baseAddress! + offset, bytes.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw FormatError.posix("write '\(path)'", errno: errno, field: nil)
            }
            offset += n
        }
    }

    deinit {
        if descriptor >= 0 { Glibc.close(descriptor) }
    }
}
