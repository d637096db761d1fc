#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A file opened for reading; owns its descriptor and closes it in `deinit`.
final class ReadableFile {
    let descriptor: Int32
    let path: String

    init(_ url: URL) throws {
        path = url.path
        descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            throw FormatError.posix("open '\(path)' for reading", errno: errno, field: nil)
        }
    }

    /// The file's size in bytes.
    func size() throws -> Int64 {
        var info = stat()
        guard fstat(descriptor, &info) == 0 else { throw FormatError.posix("stat '\(path)'", errno: errno, field: nil) }
        return Int64(info.st_size)
    }

    /// Fills `buffer` from `offset` on, without allocating; returns the count read (short only at
    /// the end of the file).
    func read(into buffer: inout [UInt8], at offset: Int64) throws -> Int {
        let count = buffer.count
        var filled = 0
        while filled < count {
            let n = buffer.withUnsafeMutableBytes { raw in
                pread(descriptor, raw.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled))
            }
            if n < 0 {
                if errno == EINTR { continue }
                throw FormatError.posix("read '\(path)'", errno: errno, field: nil)
            }
            if n == 0 { break }
            filled += n
        }
        return filled
    }

    /// Reads exactly `count` bytes at `offset`, or fewer at the end of the file.
    func read(count: Int, at offset: Int64) throws -> [UInt8] {
        var buffer = [UInt8](repeating: 0, count: count)
        let filled = try read(into: &buffer, at: offset)
        buffer.removeLast(count - filled)
        return buffer
    }

    /// The whole file, memory-mapped read-only: its pages are read when first touched, and the
    /// mapping (which outlives this descriptor) is removed when the returned `Data` is freed.
    ///
    /// The file must not shrink while mapped (reading a page past its new end would crash the
    /// process), so map only files that are replaced by renaming, never truncated in place.
    func mapped() throws -> Data {
        let size = Int(try size())
        guard size > 0 else { return Data() }
        guard let base = mmap(nil, size, PROT_READ, MAP_PRIVATE, descriptor, 0), base != MAP_FAILED else {
            throw FormatError.posix("map '\(path)'", errno: errno, field: nil)
        }
        return Data(bytesNoCopy: base, count: size, deallocator: .custom { pointer, length in munmap(pointer, length) })
    }

    deinit { close(descriptor) }
}

extension FormatError {
    /// An `io` error for a failed system call, with the system's own description.
    static func posix(_ action: String, errno code: Int32, field: String?) -> FormatError {
        let text = String(cString: strerror(code))
        return FormatError(.io, "Could not \(action): \(text).", field: field, cause: POSIXErrorCode(rawValue: code).map { POSIXError($0) })
    }
}
