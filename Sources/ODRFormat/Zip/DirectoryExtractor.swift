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

/// A sink that writes each entry as a file below a destination directory.
///
/// Entry names are clean relative paths (the readers refuse any other), and files are created with
/// `O_EXCL`, which never follows a symbolic link, and directories are checked to be real directories;
/// so nothing can be written outside the destination. Files are read-only once complete.
///
/// For ``PackRangeReader`` it can also continue a file an earlier attempt left partial
/// (``resumeEntry(_:heldBytes:)``), which ``closeKeepingExtracted()`` leaves in place.
///
/// ```swift
/// let extractor = try DirectoryExtractor(destination: staging)
/// do { try archive.verify(expecting: entries, archiveSHA256: id, sink: extractor) }
/// catch { extractor.removeExtracted(); throw error }
/// ```
public final class DirectoryExtractor: PackRangeSink {
    /// The directory entries are written below.
    public let destination: URL
    /// Whether each file is flushed to stable storage (on a thread of its own; ``finishWrites()``
    /// waits for it).
    public let syncFiles: Bool
    /// Whether entry data goes to the file system as it arrives rather than through a buffer.
    public let writesThrough: Bool
    /// Entry names written and verified so far (on stable storage once ``finishWrites()`` returned,
    /// when ``syncFiles``).
    public private(set) var extracted: [String] = []
    private var current: (name: String, file: WritableFile)?
    private var createdDirectories: [String] = []
    /// Syncs and closes completed files while the next ones are written.
    private let syncs: FileSyncQueue?

    /// Creates the destination directory if needed.
    ///
    /// - Parameters:
    ///   - syncFiles: flush each completed file to stable storage. The flush runs on another thread
    ///     while the next entries are written; call ``finishWrites()`` before counting the files as
    ///     durable.
    ///   - writesThrough: hand each piece of entry data to the file system as it arrives (a process
    ///     killed at any point keeps what was received, for ``resumeEntry(_:heldBytes:)``), without
    ///     copying it into a buffer first.
    public init(destination: URL, syncFiles: Bool = false, writesThrough: Bool = false) throws {
        self.destination = destination
        self.syncFiles = syncFiles
        self.writesThrough = writesThrough
        syncs = syncFiles ? FileSyncQueue() : nil
        do {
            try FileManager.default.createDirectory(at: destination, withIntermediateDirectories: true)
        } catch {
            throw FormatError(.io, "Could not create '\(destination.path)'.", field: nil, cause: error)
        }
    }

    public func beginEntry(_ entry: PackEntryExpectation) throws {
        let file = try WritableFile(creating: URL(filePath: preparePath(of: entry)))
        current = (entry.name, file)
    }

    /// Does nothing: the extractor learns where a partial file stands from the file itself.
    public func entryDataStarts(_ entry: PackEntryExpectation, at dataOffset: Int64) throws {}

    /// Reopens the partial file an earlier attempt left for `entry`, to append the rest of its data.
    ///
    /// - Throws: `unsafe-entry-name` when the file, or a directory above it, is a symbolic link or
    ///   not a regular file (directory); `size-mismatch` when the file does not hold exactly
    ///   `heldBytes` bytes (fetch the entry from its start instead).
    public func resumeEntry(_ entry: PackEntryExpectation, heldBytes: Int64) throws {
        let file: WritableFile
        do {
            file = try WritableFile(appendingTo: URL(filePath: preparePath(of: entry)))
        } catch var error as FormatError {
            error.field = error.field ?? entry.name
            throw error
        }
        guard file.position == heldBytes else {
            try? file.close(sync: false)
            throw FormatError(
                .sizeMismatch,
                "The partial file '\(file.path)' holds \(file.position) bytes, not the \(heldBytes) expected; remove it and fetch the entry from its start.",
                field: entry.name)
        }
        current = (entry.name, file)
    }

    public func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws {
        guard let current else {
            throw FormatError(.invalidOperation, "Entry data arrived before its entry began.", field: nil)
        }
        if writesThrough { try current.file.appendThrough(bytes) } else { try current.file.append(bytes) }
    }

    public func endEntry(_ entry: PackEntryExpectation) throws {
        guard let current, current.name == entry.name else {
            throw FormatError(.invalidOperation, "Entry '\(entry.name)' ended without beginning.", field: entry.name)
        }
        // Detached first: a last write that fails leaves the entry current, so that
        // removeCurrentEntry() still deletes its partial file.
        let descriptor = try current.file.detachDescriptor()
        self.current = nil
        fchmod(descriptor, 0o444)
        if let syncs {
            syncs.submit(descriptor, path: current.file.path)
        } else {
            close(descriptor)
        }
        extracted.append(entry.name)
    }

    /// Waits until every completed file is on stable storage (when ``syncFiles``; otherwise
    /// returns at once).
    ///
    /// - Throws: an `io` error naming the first file whose flush failed: the extracted files must
    ///   then not count as installed.
    public func finishWrites() throws {
        try syncs?.finish()
    }

    /// Closes the partial entry's file, keeping it and every completed file, so that a later attempt
    /// can continue where this one stopped (``resumeEntry(_:heldBytes:)``).
    ///
    /// A write that fails here leaves the file shorter; resume from the file's size and contents.
    public func closeKeepingExtracted() {
        guard let current else { return }
        try? current.file.close(sync: syncFiles)
        self.current = nil
    }

    /// Hands the current entry's buffered bytes to the file system (no `fsync`), so that a process
    /// killed now keeps them in the partial file for a later ``resumeEntry(_:heldBytes:)``.
    public func flushCurrentEntry() throws {
        try current?.file.flush()
    }

    /// Closes and deletes the partial file of the current entry (one that failed verification),
    /// keeping the completed ones.
    public func removeCurrentEntry() {
        guard let current else { return }
        try? current.file.close(sync: false)
        unlink(current.file.path)
        self.current = nil
    }

    /// Removes every file and directory this extractor created, including a partial entry.
    public func removeExtracted() {
        removeCurrentEntry()
        try? syncs?.finish()
        for name in extracted { unlink(destination.path + "/" + name) }
        extracted.removeAll()
        for directory in createdDirectories.reversed() { rmdir(directory) }
        createdDirectories.removeAll()
    }

    /// The entry's path below the destination, after checking its name and that every directory on
    /// the way is a real directory (created when missing).
    private func preparePath(of entry: PackEntryExpectation) throws -> String {
        if let problem = RelativePath.problem(in: entry.name) {
            throw FormatError(.unsafeEntryName, "The entry name '\(entry.name)' is not allowed: \(problem).", field: entry.name)
        }
        let components = entry.name.split(separator: "/")
        var path = destination.path
        for component in components.dropLast() {
            path += "/" + component
            try ensureDirectory(path, entry: entry.name)
        }
        return path + "/" + components.last!
    }

    private func ensureDirectory(_ path: String, entry: String) throws {
        if mkdir(path, 0o755) == 0 {
            createdDirectories.append(path)
            return
        }
        guard errno == EEXIST else { throw FormatError.posix("create directory '\(path)'", errno: errno, field: entry) }
        var info = stat()
        guard lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else {
            throw FormatError(.unsafeEntryName, "'\(path)' exists and is not a directory (a symbolic link?); refusing to write through it.", field: entry)
        }
    }
}
