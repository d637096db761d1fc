#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Dispatch

/// Writes a pack: a standard, deterministic ZIP archive, streamed to disk in constant memory.
///
/// Each entry is stored or deflated, whichever the content merits: a sample of its first bytes is
/// compressed, and deflate is used only when it saves at least ``Options/minimumSavings`` (so PNG,
/// OGG and MP3 files are stored as they are). Sizes and CRCs are written into the local header once
/// the data is written, so packs never need data descriptors and can be read as a stream. ZIP64
/// records appear only when sizes, offsets or the entry count require them.
///
/// The output depends only on the entries' names and contents: entries must be added in ascending
/// name order, and every entry gets the same timestamp and attributes.
///
/// ```swift
/// let writer = try PackWriter(creating: staging.appending(path: "pack.tmp"))
/// for (name, file) in files.sorted(by: { $0.0 < $1.0 }) {
///     _ = try writer.addEntry(named: name, contentsOf: file)
/// }
/// let summary = try writer.finish()
/// try FileManager.default.moveItem(at: staging.appending(path: "pack.tmp"),
///                                  to: packs.appending(path: "\(summary.sha256).zip"))
/// ```
///
/// A writer that is released without ``finish()`` removes its partial file.
public final class PackWriter {
    /// Settings that shape the archive; the defaults suit production.
    public struct Options: Sendable {
        /// Sizes, offsets and counts at or above this use ZIP64 records. Tests lower it to exercise
        /// ZIP64 without gigabytes of data; the format's own limit is `0xFFFF_FFFF`.
        public var zip64Threshold: Int64 = 0xFFFF_FFFF
        /// zlib compression level, 1 (fastest) to 9 (smallest).
        public var compressionLevel: Int32 = 6
        /// Deflate only when it saves at least this fraction of an entry's size.
        public var minimumSavings: Double = 0.05
        /// Entries of at least this many bytes are cut into content-defined chunks (``FastCDC``)
        /// and a deflated one is compressed with a full flush at every cut, so each chunk's bytes
        /// inflate on their own; 0 (the default here; `odrpack` takes `limits.chunkThreshold`,
        /// 8 MiB by default) chunks nothing.
        public var chunkThreshold: Int64 = 0
        /// The chunk sizes; tests lower them to chunk small files.
        public var chunkSizes: FastCDC.Parameters = .standard

        public init() {}
    }

    /// The archive's location.
    public let url: URL
    private let options: Options
    private let file: WritableFile
    private var central: [PackEntry] = []
    private var state: State = .open
    private var deflater: ZlibStream?
    private var readBuffer = [UInt8](repeating: 0, count: 1 << 20)
    private var scratch = [UInt8](repeating: 0, count: 1 << 18)
    /// Stored entries whose chunks are being cut on another thread, by their index in `central`;
    /// ``finish()`` waits for them.
    private var pendingCuts: [(index: Int, cut: ChunkCut)] = []
    /// Runs those cuts one after another, beside the writing.
    private let cutQueue = DispatchQueue(label: "odr.pack-writer.chunk-cuts")

    private enum State { case open, failed, finished }

    /// How many bytes of an entry are compressed to decide whether deflate pays.
    static let probeSize = 64 * 1024

    /// Creates the archive file; it must not exist yet.
    ///
    /// - Throws: ``FormatError`` with code `io` if the file exists or cannot be created.
    public init(creating url: URL, options: Options = Options()) throws {
        self.url = url
        self.options = options
        file = try WritableFile(creating: url)
    }

    /// Adds an entry with the contents of a file, read in chunks.
    ///
    /// - Parameters:
    ///   - name: the entry name: a clean relative path, greater than every name added before.
    ///   - source: the file to read. It must not change while it is read.
    /// - Returns: the entry as written, for the manifest. A stored entry that is cut into chunks
    ///   (without `knownChunks`) is cut by a second reader of `source` on another thread while it
    ///   and the next entries are written, so its chunks are in the entries of the summary
    ///   ``finish()`` returns, not in this one.
    /// - Throws: ``FormatError``: `unsafe-entry-name`, `invalid-operation` (out of order, or after
    ///   ``finish()``), `io`.
    ///   - knownChunks: the entry's chunk table as an earlier build computed it with the same
    ///     ``Options/chunkSizes`` (sizes and digests; stored sizes are recomputed), so the writer
    ///     cuts there instead of chunking and hashing the chunks again. Used only when the entry is
    ///     chunked and the sizes add up to its size; the caller checks the entry's SHA-256.
    ///   - method: `.stored` or `.deflate` whatever the content (a rule of the builder's); `nil`
    ///     lets the writer choose from a sample, as for every other entry.
    public func addEntry(
        named name: String, contentsOf source: URL, knownChunks: [FileChunk]? = nil, method: CompressionMethod? = nil
    ) throws -> PackEntry {
        let input = try ReadableFile(source)
        let size = try input.size()
        return try add(name: name, size: size, knownChunks: knownChunks, method: method, source: .file(source)) { offset, buffer in
            try input.read(into: &buffer, at: offset)
        }
    }

    /// Adds an entry with the given bytes.
    ///
    /// - Throws: see ``addEntry(named:contentsOf:)``.
    public func addEntry(named name: String, data: Data) throws -> PackEntry {
        try add(name: name, size: Int64(data.count), source: .data(data)) { offset, buffer in
            EntrySource.read(data, at: offset, into: &buffer)
        }
    }

    /// Writes the central directory and end records, flushes the file to disk and hashes it.
    ///
    /// - Returns: the archive's SHA-256, size and entries.
    public func finish() throws -> PackSummary {
        try requireOpen()
        do {
            let directoryOffset = file.position
            for entry in central { try file.append(centralHeader(for: entry)) }
            let directorySize = file.position - directoryOffset
            try file.append(endRecords(directoryOffset: directoryOffset, directorySize: directorySize))
            try file.close()
            state = .finished
        } catch {
            state = .failed
            throw error
        }
        // The cuts still running overlap the hashing of the archive.
        let digest = try ContentHash.sha256Hex(ofFileAt: url)
        let size = try ReadableFile(url).size()
        do {
            for (index, cut) in pendingCuts {
                let chunks = try cut.wait()
                // They were read apart from the copy: a file cut shorter after its copy gives fewer.
                guard chunks.lazy.map(\.size).checkedSum() == central[index].size else {
                    throw FormatError(.io, "'\(central[index].name)' changed size while it was being packed; build again once it is stable.", field: central[index].name)
                }
                central[index].chunks = chunks
            }
        } catch {
            state = .failed
            throw error
        }
        pendingCuts = []
        return PackSummary(sha256: digest, archiveBytes: size, entries: central)
    }

    deinit {
        if state != .finished { try? FileManager.default.removeItem(at: url) }
    }

    // MARK: - Entries

    private func requireOpen() throws {
        switch state {
        case .open: return
        case .failed: throw FormatError(.invalidOperation, "An earlier error left this pack incomplete; start a new one.", field: url.lastPathComponent)
        case .finished: throw FormatError(.invalidOperation, "The pack is already finished; entries cannot be added.", field: url.lastPathComponent)
        }
    }

    private typealias ChunkReader = (_ offset: Int64, _ buffer: inout [UInt8]) throws -> Int

    /// Where an entry's bytes come from, for a second reader on another thread.
    private enum EntrySource: Sendable {
        case file(URL)
        case data(Data)

        /// Copies the bytes of `data` from `offset` into `buffer`; the count copied.
        static func read(_ data: Data, at offset: Int64, into buffer: inout [UInt8]) -> Int {
            let start = Int(offset)
            let count = min(buffer.count, data.count - start)
            guard count > 0 else { return 0 }
            buffer.withUnsafeMutableBytes { raw in
                data.copyBytes(to: raw.bindMemory(to: UInt8.self), from: (data.startIndex + start)..<(data.startIndex + start + count))
            }
            return count
        }
    }

    private func add(
        name: String, size: Int64, knownChunks: [FileChunk]? = nil, method: CompressionMethod? = nil, source: EntrySource,
        read: ChunkReader
    ) throws -> PackEntry {
        try requireOpen()
        if let problem = RelativePath.problem(in: name) {
            throw FormatError(.unsafeEntryName, "The entry name '\(name)' is not allowed: \(problem).", field: name)
        }
        if let last = central.last?.name, !(last < name) {
            throw FormatError(
                .invalidOperation,
                "Entries must be added in ascending name order (for reproducible packs); '\(name)' came after '\(last)'.",
                field: name)
        }
        do {
            let entry = try write(name: name, size: size, knownChunks: knownChunks, forced: method, source: source, read: read)
            central.append(entry)
            return entry
        } catch {
            state = .failed
            throw error
        }
    }

    private func write(
        name: String, size: Int64, knownChunks: [FileChunk]?, forced: CompressionMethod?, source: EntrySource, read: ChunkReader
    ) throws -> PackEntry {
        let headerOffset = file.position
        var chunking: Chunking?
        if options.chunkThreshold > 0, size >= options.chunkThreshold {
            if let knownChunks, !knownChunks.isEmpty, knownChunks.lazy.map(\.size).checkedSum() == size {
                chunking = .known(knownChunks)
            } else {
                chunking = .cut(options.chunkSizes)
            }
        }
        let method = if let forced, size > 0 { forced } else { try chooseMethod(size: size, read: read) }
        let zip64 = size >= options.zip64Threshold
        let nameBytes = Array(name.utf8)
        try file.append(localHeader(name: nameBytes, method: method, crc: 0, storedSize: 0, size: size, zip64: zip64))
        let dataStart = file.position

        var (crc, sha, chunks) = if method == .stored, case .cut(let parameters)? = chunking {
            // Its bytes go to the archive as they are, wherever the cuts fall: another thread cuts
            // them while this one copies them and goes on to the next entries.
            try cutAside(entry: central.count, source: source, size: size, parameters: parameters) {
                try copyData(method: .stored, size: size, chunking: nil, read: read, name: name)
            }
        } else {
            try copyData(method: method, size: size, chunking: chunking, read: read, name: name)
        }
        var finalMethod = method
        var storedSize = file.position - dataStart
        if method == .deflate, forced == nil, Double(storedSize) > Double(size) * (1 - options.minimumSavings) {
            // The sample promised savings the whole entry did not deliver: store it after all.
            try file.truncate(to: dataStart)
            (crc, sha, chunks) = try copyData(method: .stored, size: size, chunking: chunks.isEmpty ? nil : .known(chunks), read: read, name: name)
            finalMethod = .stored
            storedSize = size
        }
        let header = localHeader(name: nameBytes, method: finalMethod, crc: crc, storedSize: storedSize, size: size, zip64: zip64)
        try file.overwrite(header, at: headerOffset)
        return PackEntry(
            name: name, method: finalMethod, crc32: crc, storedSize: storedSize, size: size,
            headerOffset: headerOffset, sha256: sha, chunks: chunks)
    }

    /// Compresses a sample of the entry and keeps deflate only if the sample shrinks enough.
    private func chooseMethod(size: Int64, read: ChunkReader) throws -> CompressionMethod {
        guard size > 0 else { return .stored }
        var sample = [UInt8](repeating: 0, count: Int(min(size, Int64(Self.probeSize))))
        let count = try read(0, &sample)
        let probe = try ZlibStream(.deflate, level: options.compressionLevel)
        var compressed = 0
        _ = try sample.withUnsafeBytes { raw in
            try probe.process(UnsafeRawBufferPointer(rebasing: raw[..<count]), finish: true, scratch: &scratch) { compressed += $0.count }
        }
        return Double(compressed) <= Double(count) * (1 - options.minimumSavings) ? .deflate : .stored
    }

    /// How an entry is cut into chunks: by ``FastCDC``, or at the sizes of a known table.
    fileprivate enum Chunking {
        case cut(FastCDC.Parameters)
        case known([FileChunk])
    }

    /// Streams the entry's bytes into the archive, returning its CRC-32, SHA-256 and chunks.
    ///
    /// With `chunking`, every chunk's bytes end at a byte boundary of the entry's data: a stored
    /// entry's trivially, a deflated one's by a full flush (`Z_FULL_FLUSH`) at every cut but the
    /// last, which the stream's end closes. Each chunk's stored size is the bytes written for it.
    private func copyData(
        method: CompressionMethod, size: Int64, chunking: Chunking?, read: ChunkReader, name: String
    ) throws -> (UInt32, String, [FileChunk]) {
        let hash = EntryHash()
        let stream: ZlibStream?
        if method == .deflate {
            if let deflater {
                deflater.reset()
                stream = deflater
            } else {
                stream = try ZlibStream(.deflate, level: options.compressionLevel)
                deflater = stream
            }
        } else {
            stream = nil
        }
        let cutter = chunking.map(ChunkCutter.init)
        var chunks: [FileChunk] = []
        var chunkStart: Int64 = 0  // where the current chunk starts in the entry's content
        var chunkStoredStart = file.position  // and in the archive
        var offset: Int64 = 0
        while offset < size {
            let count = try read(offset, &readBuffer)
            guard count > 0 else { break }
            let bufferStart = offset
            offset += Int64(count)
            let atEnd = offset >= size
            try readBuffer.withUnsafeBytes { raw in
                let buffer = UnsafeRawBufferPointer(rebasing: raw[..<count])
                guard let cutter else {
                    hash.update(buffer)
                    if let stream {
                        try stream.process(buffer, finish: atEnd, scratch: &scratch) { try file.append($0) }
                    } else {
                        try file.append(buffer)
                    }
                    return
                }
                if cutter.chunker != nil {
                    // A deflated entry is flushed at every cut, so the cuts must be known before
                    // it is compressed: cutting and hashing the chunks run on one core while the
                    // entry's own CRC and hash run on the other, and the compression waits for both.
                    let bytes = SendableBytes(bytes: buffer)
                    DispatchQueue.concurrentPerform(iterations: 2) { part in
                        if part == 0 { hash.update(bytes.bytes) } else { cutter.cut(bytes.bytes, at: bufferStart, atEnd: atEnd) }
                    }
                } else {
                    hash.update(buffer)
                    cutter.cut(buffer, at: bufferStart, atEnd: atEnd)
                }
                var position = bufferStart
                for (cut, digest) in zip(cutter.cuts, cutter.digests) {
                    let piece = UnsafeRawBufferPointer(rebasing: buffer[Int(position - bufferStart)..<Int(cut - bufferStart)])
                    position = cut
                    if let stream {
                        try stream.process(piece, finish: cut == size, fullFlush: true, scratch: &scratch) { try file.append($0) }
                    } else {
                        try file.append(piece)
                    }
                    chunks.append(FileChunk(size: cut - chunkStart, storedSize: file.position - chunkStoredStart, sha256: digest))
                    chunkStart = cut
                    chunkStoredStart = file.position
                }
                if position < offset {
                    let piece = UnsafeRawBufferPointer(rebasing: buffer[Int(position - bufferStart)...])
                    if let stream {
                        try stream.process(piece, scratch: &scratch) { try file.append($0) }
                    } else {
                        try file.append(piece)
                    }
                }
            }
        }
        var probe = [UInt8](repeating: 0, count: 1)
        guard offset == size, try read(size, &probe) == 0 else {
            throw FormatError(.io, "'\(name)' changed size while it was being packed; build again once it is stable.", field: name)
        }
        guard chunking == nil || chunks.lazy.map(\.size).checkedSum() == size else {
            throw FormatError(.invalidOperation, "The chunks of '\(name)' do not tile it; this is a bug in the pack writer.", field: name)
        }
        return (hash.crc.value, hash.sha.finalize(), chunks)
    }

    /// Runs `copy`, the copying of the stored entry `entry` (its future index in `central`), while
    /// the cut queue cuts the same `size` bytes of `source`, read on their own. ``finish()`` waits for
    /// the cut; if `copy` throws, the writer fails and the cut is dropped.
    ///
    /// The two readers see the same bytes unless the file changes while the entry is packed, which
    /// the caller detects by the copy's SHA-256. Only a change undone between the two reads could
    /// leave a chunk digest that matches no bytes of the entry; the runtime checks every chunk, so
    /// it would refuse that chunk (`integrity`), never install other bytes.
    private func cutAside<T>(entry: Int, source: EntrySource, size: Int64, parameters: FastCDC.Parameters, copy: () throws -> T) throws -> T {
        let cut = ChunkCut()
        cutQueue.async {
            cut.finish(Result {
                switch source {
                case .file(let url):
                    let input = try ReadableFile(url)
                    return try Self.cutChunks(size: size, parameters: parameters) { offset, buffer in try input.read(into: &buffer, at: offset) }
                case .data(let data):
                    return try Self.cutChunks(size: size, parameters: parameters) { offset, buffer in EntrySource.read(data, at: offset, into: &buffer) }
                }
            })
        }
        let copied = try copy()
        pendingCuts.append((entry, cut))
        return copied
    }

    /// The chunks of the first `size` bytes `read` gives, cut by ``FastCDC`` with their SHA-256,
    /// read into a buffer of the reader's own.
    private static func cutChunks(size: Int64, parameters: FastCDC.Parameters, read: ChunkReader) throws -> [FileChunk] {
        let cutter = ChunkCutter(.cut(parameters))
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        var chunks: [FileChunk] = []
        var offset: Int64 = 0, chunkStart: Int64 = 0
        while offset < size {
            // A file that grew meanwhile gives more: the copy fails on that.
            let count = min(try read(offset, &buffer), Int(size - offset))
            guard count > 0 else { break }
            let bufferStart = offset
            offset += Int64(count)
            buffer.withUnsafeBytes { raw in
                cutter.cut(UnsafeRawBufferPointer(rebasing: raw[..<count]), at: bufferStart, atEnd: offset >= size)
            }
            for (cut, digest) in zip(cutter.cuts, cutter.digests) {
                chunks.append(FileChunk(size: cut - chunkStart, storedSize: cut - chunkStart, sha256: digest))
                chunkStart = cut
            }
        }
        return chunks
    }

    // MARK: - Records

    private func localHeader(name: [UInt8], method: CompressionMethod, crc: UInt32, storedSize: Int64, size: Int64, zip64: Bool) -> [UInt8] {
        var w = ByteWriter()
        w.u32(ZipFormat.localHeaderSignature)
        w.u16(zip64 ? ZipFormat.versionNeededZip64 : ZipFormat.versionNeededDefault)
        w.u16(ZipFormat.flagUTF8)
        w.u16(method.zipMethod)
        w.u16(ZipFormat.dosTime)
        w.u16(ZipFormat.dosDate)
        w.u32(crc)
        w.u32(zip64 ? 0xFFFF_FFFF : UInt32(storedSize))
        w.u32(zip64 ? 0xFFFF_FFFF : UInt32(size))
        w.u16(UInt16(name.count))
        w.u16(zip64 ? 20 : 0)
        w.append(name)
        if zip64 {
            w.u16(ZipFormat.zip64ExtraID)
            w.u16(16)
            w.u64(UInt64(size))
            w.u64(UInt64(storedSize))
        }
        return w.bytes
    }

    private func centralHeader(for entry: PackEntry) -> [UInt8] {
        let largeSizes = entry.size >= options.zip64Threshold
        let largeOffset = entry.headerOffset >= options.zip64Threshold
        var extra = ByteWriter()
        if largeSizes || largeOffset {
            extra.u16(ZipFormat.zip64ExtraID)
            extra.u16(UInt16((largeSizes ? 16 : 0) + (largeOffset ? 8 : 0)))
            if largeSizes {
                extra.u64(UInt64(entry.size))
                extra.u64(UInt64(entry.storedSize))
            }
            if largeOffset { extra.u64(UInt64(entry.headerOffset)) }
        }
        let name = Array(entry.name.utf8)
        var w = ByteWriter()
        w.u32(ZipFormat.centralHeaderSignature)
        w.u16(ZipFormat.versionMadeBy)
        w.u16(largeSizes || largeOffset ? ZipFormat.versionNeededZip64 : ZipFormat.versionNeededDefault)
        w.u16(ZipFormat.flagUTF8)
        w.u16(entry.method.zipMethod)
        w.u16(ZipFormat.dosTime)
        w.u16(ZipFormat.dosDate)
        w.u32(entry.crc32)
        w.u32(largeSizes ? 0xFFFF_FFFF : UInt32(entry.storedSize))
        w.u32(largeSizes ? 0xFFFF_FFFF : UInt32(entry.size))
        w.u16(UInt16(name.count))
        w.u16(UInt16(extra.bytes.count))
        w.u16(0)  // comment
        w.u16(0)  // disk number
        w.u16(0)  // internal attributes
        w.u32(ZipFormat.regularFileAttributes)
        w.u32(largeOffset ? 0xFFFF_FFFF : UInt32(entry.headerOffset))
        w.append(name)
        w.append(extra.bytes)
        return w.bytes
    }

    private func endRecords(directoryOffset: Int64, directorySize: Int64) -> [UInt8] {
        let count = Int64(central.count)
        let countLimit = min(Int64(0xFFFF), options.zip64Threshold)
        let needsZip64 = count >= countLimit || directoryOffset >= options.zip64Threshold
            || directorySize >= options.zip64Threshold
        var w = ByteWriter()
        if needsZip64 {
            let zip64EndOffset = directoryOffset + directorySize
            w.u32(ZipFormat.zip64EndSignature)
            w.u64(UInt64(ZipFormat.zip64EndSize - 12))
            w.u16(ZipFormat.versionMadeBy)
            w.u16(ZipFormat.versionNeededZip64)
            w.u32(0)  // this disk
            w.u32(0)  // disk with the central directory
            w.u64(UInt64(count))
            w.u64(UInt64(count))
            w.u64(UInt64(directorySize))
            w.u64(UInt64(directoryOffset))
            w.u32(ZipFormat.zip64LocatorSignature)
            w.u32(0)
            w.u64(UInt64(zip64EndOffset))
            w.u32(1)  // total disks
        }
        w.u32(ZipFormat.endOfCentralDirectorySignature)
        w.u16(0)
        w.u16(0)
        w.u16(needsZip64 ? 0xFFFF : UInt16(count))
        w.u16(needsZip64 ? 0xFFFF : UInt16(count))
        w.u32(needsZip64 ? 0xFFFF_FFFF : UInt32(directorySize))
        w.u32(needsZip64 ? 0xFFFF_FFFF : UInt32(directoryOffset))
        w.u16(0)  // comment length
        return w.bytes
    }
}

/// A buffer handed to the two halves of one ``PackWriter`` step, which read it at the same time
/// and do not outlive the call.
private struct SendableBytes: @unchecked Sendable {
    let bytes: UnsafeRawBufferPointer
}

/// The chunk table of one stored entry, cut on a ``PackWriter``'s cut queue: set once there, read
/// once by ``PackWriter/finish()`` after waiting.
private final class ChunkCut: @unchecked Sendable {
    private let done = DispatchSemaphore(value: 0)
    private var result: Result<[FileChunk], any Error> = .success([])

    func finish(_ result: Result<[FileChunk], any Error>) {
        self.result = result
        done.signal()
    }

    func wait() throws -> [FileChunk] {
        done.wait()
        return try result.get()
    }
}

/// An entry's CRC-32 and SHA-256 as its bytes go by. A class so one half of a writer step can
/// update it while the other cuts chunks (each half touches only its own object).
private final class EntryHash: @unchecked Sendable {
    var crc = CRC32()
    var sha = StreamingSHA256()

    func update(_ bytes: UnsafeRawBufferPointer) {
        crc.update(bytes)
        sha.update(bytes)
    }
}

/// Where the chunks of an entry end, buffer by buffer: found by ``FastCDC`` with each chunk's
/// SHA-256, or taken from a known table with its digests.
private final class ChunkCutter: @unchecked Sendable {
    private(set) var chunker: FastCDC?
    private let known: [FileChunk]
    private var sha = StreamingSHA256()
    /// The content offset where the last cut found so far ends, and how many cuts there were.
    private var end: Int64 = 0, count = 0
    /// The cuts inside the last buffer (content offsets) and the digest of the chunk each ends.
    private(set) var cuts: [Int64] = [], digests: [String] = []

    init(_ chunking: PackWriter.Chunking) {
        switch chunking {
        case .cut(let parameters):
            chunker = FastCDC(parameters)
            known = []
        case .known(let table):
            known = table
        }
    }

    /// Finds the cuts in `buffer`, whose first byte is at content offset `start`.
    func cut(_ buffer: UnsafeRawBufferPointer, at start: Int64, atEnd: Bool) {
        cuts.removeAll(keepingCapacity: true)
        digests.removeAll(keepingCapacity: true)
        let bufferEnd = start + Int64(buffer.count)
        guard chunker != nil else {
            while count < known.count, end + known[count].size <= bufferEnd {
                end += known[count].size
                cuts.append(end)
                digests.append(known[count].sha256)
                count += 1
            }
            return
        }
        var from = 0
        func close(_ length: Int64) {
            let to = Int(end + length - start)
            sha.update(UnsafeRawBufferPointer(rebasing: buffer[from..<to]))
            digests.append(sha.finalize())
            sha = StreamingSHA256()
            from = to
            end += length
            cuts.append(end)
            count += 1
        }
        chunker?.consume(buffer) { close($0) }
        if atEnd, let last = chunker?.finish() {
            close(last)
        } else {
            sha.update(UnsafeRawBufferPointer(rebasing: buffer[from...]))
        }
    }
}
