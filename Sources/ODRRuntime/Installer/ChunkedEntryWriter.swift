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
import ODRFormat

/// Writes one chunked entry's file, chunk after chunk in order, in one pass: every chunk, held or
/// fetched, is checked against its SHA-256 before it is written, the file's SHA-256 is computed on
/// the way, and each chunk written is recorded in the staging journal (`chunks <count> <name>`), so
/// an interrupted assembly continues at the first chunk not written.
///
/// The file is `staging/<id>.chunked/<header offset>` while it is assembled, outside the pack's
/// staging folder (which a pack's own paths fill); ``finish(into:)`` moves it to its entry's place
/// there, read-only, once the whole file matched. Opening it again checks what an earlier attempt
/// wrote: the recorded chunks are hashed again, and the file is cut at the first that does not match.
///
/// Used by one assembly at a time; its ``ChunkRangeSink``s call it one at a time, in order.
final class ChunkedEntryWriter: @unchecked Sendable {
    let url: URL
    let entry: PackEntryExpectation
    let chunks: [ChunkedEntryPlan.Chunk]
    private let journal: StagingJournal
    private let syncFiles: Bool
    private let source: URL
    private let packID: String
    private var descriptor: Int32
    /// Chunks written and verified, from the start.
    private(set) var done = 0
    private var fileHash = StreamingSHA256()
    private var buffer: [UInt8] = []
    /// Installed files held chunks are read from, open while the assembly runs.
    private var heldFiles: [String: Int32] = [:]

    /// Where entry `entry` of pack `packID` is assembled in `staging`.
    static func workURL(staging: URL, packID: String, entry: PackEntryExpectation) -> URL {
        staging.appending(path: "\(packID).chunked", directoryHint: .isDirectory).appending(path: "\(entry.headerOffset)")
    }

    /// How many chunks the work file holds according to the journal and its size, without reading it
    /// (for size estimates; the assembly itself hashes them again).
    static func recordedChunks(at url: URL, chunks: [ChunkedEntryPlan.Chunk], journal: StagingJournal, entry: PackEntryExpectation) -> Int {
        var info = stat()
        guard let recorded = journal.chunksDone(of: entry.name), recorded > 0, lstat(url.path, &info) == 0,
              info.st_mode & S_IFMT == S_IFREG else { return 0 }
        let size = Int64(info.st_size)
        return chunks.prefix(recorded).prefix { $0.fileOffset + $0.size <= size }.count
    }

    /// Opens (creating) the work file of `entry` and keeps the chunks an earlier attempt wrote that
    /// still match their digests.
    init(url: URL, packID: String, entry: PackEntryExpectation, chunks: [ChunkedEntryPlan.Chunk], journal: StagingJournal,
         syncFiles: Bool, source: URL) throws(ResourceError) {
        self.url = url
        self.packID = packID
        self.entry = entry
        self.chunks = chunks
        self.journal = journal
        self.syncFiles = syncFiles
        self.source = source
        try StoreFiles.makeFolder(url.deletingLastPathComponent().path)
        descriptor = StoreFiles.openFile(url.path, O_RDWR | O_CREAT)
        guard descriptor >= 0 else { throw StoreFailure.posix("open '\(url.path)'") }
        try keepRecordedChunks()
    }

    deinit { close() }

    /// Hashes again the chunks the journal says are written; the file is cut after the last that matches.
    private func keepRecordedChunks() throws(ResourceError) {
        let recorded = min(journal.chunksDone(of: entry.name) ?? 0, chunks.count)
        var kept = 0
        while kept < recorded {
            let chunk = chunks[kept]
            guard read(Int(chunk.size), from: descriptor, at: chunk.fileOffset) else { break }
            var hash = StreamingSHA256()
            let matches = buffer.withUnsafeBytes { bytes in
                let piece = UnsafeRawBufferPointer(rebasing: bytes[..<Int(chunk.size)])
                hash.update(piece)
                guard hash.finalize() == chunk.sha256 else { return false }
                fileHash.update(piece)
                return true
            }
            guard matches else { break }
            kept += 1
        }
        done = kept
        let end = kept == 0 ? 0 : chunks[kept - 1].fileOffset + chunks[kept - 1].size
        guard ftruncate(descriptor, off_t(end)) == 0 else { throw StoreFailure.posix("cut '\(url.path)'") }
        if kept != recorded { try journal.recordChunksDone(kept, of: entry.name) }
    }

    /// Where the writer stands, to go back to when a response starts over.
    struct Mark {
        var done: Int
        var fileHash: StreamingSHA256
    }

    func mark() -> Mark { Mark(done: done, fileHash: fileHash) }

    /// Forgets the chunks written since `mark`.
    func rollback(to mark: Mark) throws(ResourceError) {
        guard mark.done < done else { return }
        done = mark.done
        fileHash = mark.fileHash
        let end = done == 0 ? 0 : chunks[done - 1].fileOffset + chunks[done - 1].size
        guard ftruncate(descriptor, off_t(end)) == 0 else { throw StoreFailure.posix("cut '\(url.path)'") }
        try journal.recordChunksDone(done, of: entry.name)
    }

    /// Checks and writes the next chunk from its bytes in the archive (inflated when the entry is deflated).
    ///
    /// - Throws: `integrity` when the bytes do not inflate on their own, or do not match the chunk's
    ///   SHA-256; nothing is written then.
    func append(archiveBytes: UnsafeRawBufferPointer) throws(ResourceError) {
        precondition(done < chunks.count, "more chunks than the entry has")
        let chunk = chunks[done]
        let bytes: UnsafeRawBufferPointer
        if entry.method == .stored {
            guard archiveBytes.count == chunk.size else { throw refused(done, "holds \(archiveBytes.count) bytes, not \(chunk.size)") }
            bytes = archiveBytes
            try check(bytes, done)
            try writeChecked(bytes)
            return
        }
        let inflated: Data
        do {
            inflated = try FileChunk(size: chunk.size, storedSize: Int64(archiveBytes.count), sha256: chunk.sha256)
                .inflate(archiveBytes, last: done == chunks.count - 1)
        } catch {
            throw ResourceError(.integrity, "Chunk \(done + 1) of \(chunks.count) of '\(entry.name)' (pack \(packID.prefix(12))) was refused: \(error.message) The chunks verified before it are kept; fetch again.",
                                url: source, cause: error)
        }
        try withPrefix(of: inflated, count: inflated.count) { piece throws(ResourceError) in
            try check(piece, done)
            try writeChecked(piece)
        }
    }

    /// Copies chunk `index` (the next one) from an installed file, checking it as it is read.
    ///
    /// - Returns: `false` (nothing written) when the file is gone, shorter, or its bytes do not match
    ///   the chunk's SHA-256: the chunk is then fetched instead.
    func copyHeld(_ held: ResourceStore.HeldChunk) throws(ResourceError) -> Bool {
        let chunk = chunks[done]
        guard held.size == chunk.size else { return false }
        let path = held.file.path
        var file = heldFiles[path] ?? -1
        if file < 0 {
            file = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
            guard file >= 0 else { return false }
            heldFiles[path] = file
        }
        guard read(Int(chunk.size), from: file, at: held.offset) else { return false }
        return try withPrefix(of: buffer, count: Int(chunk.size)) { piece throws(ResourceError) in try appendFileBytes(piece) }
    }

    /// ``appendFileBytes(_:)-(UnsafeRawBufferPointer)`` of bytes a peer sent.
    func appendFileBytes(_ data: Data) throws(ResourceError) -> Bool {
        try withPrefix(of: data, count: data.count) { piece throws(ResourceError) in try appendFileBytes(piece) }
    }

    /// Writes the next chunk from its file bytes (an installed file's, a peer's), checking them.
    ///
    /// - Returns: `false` (nothing written) when they do not match the chunk's size and SHA-256.
    func appendFileBytes(_ piece: UnsafeRawBufferPointer) throws(ResourceError) -> Bool {
        guard done < chunks.count, piece.count == chunks[done].size else { return false }
        var hash = StreamingSHA256()
        hash.update(piece)
        guard hash.finalize() == chunks[done].sha256 else { return false }
        try writeChecked(piece)
        return true
    }

    /// Checks the whole file's SHA-256 and moves it, read-only, to its entry's place in `folder`.
    ///
    /// - Throws: `integrity` when the chunks do not make the file the manifest describes (the work
    ///   file is removed, so the next attempt starts the entry over).
    func finish(into folder: URL) throws(ResourceError) {
        precondition(done == chunks.count, "the entry is not complete")
        guard fileHash.finalize() == entry.sha256 else {
            discard()
            throw ResourceError(.integrity, "The chunks of '\(entry.name)' (pack \(packID.prefix(12))) each matched, but together they do not make the file the manifest describes. Rebuild the catalog with a current odrpack.", url: source)
        }
        if syncFiles, fsync(descriptor) != 0 { throw StoreFailure.posix("flush '\(url.path)'") }
        fchmod(descriptor, 0o444)
        close()
        let target = folder.appending(path: entry.name)
        try StoreFiles.makeFolders(above: entry.name, below: folder.path)
        guard rename(url.path, target.path) == 0 else { throw StoreFailure.posix("move '\(entry.name)' into staging") }
    }

    /// Closes the files (the work file stays for a later attempt).
    func close() {
        if descriptor >= 0 { Glibc.close(descriptor) }
        descriptor = -1
        for file in heldFiles.values { Glibc.close(file) }
        heldFiles.removeAll()
    }

    /// Removes the work file and forgets its chunks.
    func discard() {
        close()
        unlink(url.path)
        try? journal.recordChunksDone(0, of: entry.name)
    }

    private func check(_ bytes: UnsafeRawBufferPointer, _ index: Int) throws(ResourceError) {
        var hash = StreamingSHA256()
        hash.update(bytes)
        guard hash.finalize() == chunks[index].sha256 else { throw refused(index, "does not match its SHA-256") }
    }

    private func refused(_ index: Int, _ problem: String) -> ResourceError {
        ResourceError(.integrity, "Chunk \(index + 1) of \(chunks.count) of '\(entry.name)' (pack \(packID.prefix(12))) \(problem); it was refused. The chunks verified before it are kept; fetch again.", url: source)
    }

    /// Writes the next chunk's verified bytes at its place and records it.
    private func writeChecked(_ bytes: UnsafeRawBufferPointer) throws(ResourceError) {
        var offset = 0
        let position = chunks[done].fileOffset
        while offset < bytes.count {
            let count = pwrite(descriptor, bytes.baseAddress! + offset, bytes.count - offset, off_t(position) + off_t(offset))
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { throw StoreFailure.posix("write '\(url.path)'") }
            offset += count
        }
        fileHash.update(bytes)
        done += 1
        try journal.recordChunksDone(done, of: entry.name)
        if done == chunks.count / 2 { CrashPoint.chunks.reached() }
    }

    /// Reads `count` bytes of `file` from `offset` into ``buffer``; `false` when it is shorter.
    private func read(_ count: Int, from file: Int32, at offset: Int64) -> Bool {
        if buffer.count < count { buffer = [UInt8](repeating: 0, count: count) }
        var filled = 0
        while filled < count {
            let got = buffer.withUnsafeMutableBytes { pread(file, $0.baseAddress! + filled, count - filled, off_t(offset) + off_t(filled)) }
            if got < 0, errno == EINTR { continue }
            guard got > 0 else { return false }
            filled += got
        }
        return true
    }
}

/// `body` over the first `count` bytes of `array`, throwing its error typed.
private func withPrefix<T>(of array: some ContiguousBytes, count: Int, _ body: (UnsafeRawBufferPointer) throws(ResourceError) -> T) throws(ResourceError) -> T {
    let result: Result<T, ResourceError> = array.withUnsafeBytes { all in
        Result { () throws(ResourceError) -> T in try body(UnsafeRawBufferPointer(rebasing: all[..<count])) }
    }
    return try result.get()
}

/// Receives one range request's bytes of a chunked entry: the compressed bytes of the chunks
/// `fetch.chunks`, back to back. Each chunk is handed to the ``ChunkedEntryWriter`` once all its
/// bytes are in; a response that starts over takes the writer back to where the request began.
final class ChunkRangeSink: TransferSink, @unchecked Sendable {
    private let writer: ChunkedEntryWriter
    private let fetch: ChunkedEntryPlan.Fetch
    private let journal: StagingJournal
    private let source: URL
    private let received: @Sendable (Int64) -> Void
    private let stalled: @Sendable (TransferRetry?) -> Void
    private let start: ChunkedEntryWriter.Mark
    private var pending: [UInt8] = []
    private var next: Int
    private var consumed: Int64 = 0
    private var reported: Int64 = 0
    private var begun = false

    init(writer: ChunkedEntryWriter, fetch: ChunkedEntryPlan.Fetch, journal: StagingJournal, source: URL,
         received: @escaping @Sendable (Int64) -> Void, stalled: @escaping @Sendable (TransferRetry?) -> Void) {
        self.writer = writer
        self.fetch = fetch
        self.journal = journal
        self.source = source
        self.received = received
        self.stalled = stalled
        start = writer.mark()
        next = fetch.chunks.lowerBound
    }

    func begin(_ head: TransferResponseHead) async throws {
        stalled(nil)
        try journal.record(head.validators)
        // A retry within the transfer continues the same bytes.
        if begun, head.offset > 0, head.offset == consumed { return }
        guard head.offset == 0 else {
            throw ResourceError(.storageFailure, "The transfer resumed at byte \(head.offset) of a range this sink holds \(consumed) bytes of.", url: source)
        }
        try writer.rollback(to: start)
        begun = true
        pending.removeAll(keepingCapacity: true)
        next = fetch.chunks.lowerBound
        consumed = 0
    }

    func write(_ bytes: Data) async throws {
        guard begun else { throw ResourceError(.storageFailure, "Pack bytes arrived before the response began.", url: source) }
        try bytes.withUnsafeBytes { (raw: UnsafeRawBufferPointer) in
            var offset = 0
            while offset < raw.count {
                guard next < fetch.chunks.upperBound else {
                    throw ResourceError(.integrity, "The server sent more bytes than the range asked for.", url: source)
                }
                let size = Int(writer.chunks[next].archive.count)
                let take = min(size - pending.count, raw.count - offset)
                let piece = UnsafeRawBufferPointer(rebasing: raw[offset..<(offset + take)])
                offset += take
                if pending.isEmpty, take == size {
                    try writer.append(archiveBytes: piece)  // a whole chunk in this delivery: no copy
                } else {
                    pending.append(contentsOf: piece)
                    guard pending.count == size else { continue }
                    try pending.withUnsafeBytes { try writer.append(archiveBytes: $0) }
                    pending.removeAll(keepingCapacity: true)
                }
                next += 1
            }
        }
        consumed += Int64(bytes.count)
        if consumed > reported {
            received(consumed - reported)
            reported = consumed
        }
    }

    func retrying(_ retry: TransferRetry) async { stalled(retry) }

    func finish() async throws {
        guard next == fetch.chunks.upperBound, pending.isEmpty else {
            throw ResourceError(.integrity, "The range ended before its last chunk did.", url: source)
        }
    }
}
