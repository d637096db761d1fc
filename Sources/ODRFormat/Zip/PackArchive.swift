#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A pack on disk, read by offset: its directory, single entries, and full verification.
///
/// ```swift
/// let archive = try PackArchive(contentsOf: catalog.appending(path: pack.archivePath))
/// try archive.verify(expecting: manifest.expectedEntries(inPack: pack.id), archiveSHA256: pack.id)
/// let map = try archive.contents(of: entry)   // one entry, checked against its SHA-256
/// ```
public final class PackArchive {
    /// One entry as the archive's central directory lists it.
    public struct Entry: Sendable, Equatable {
        public var name: String
        /// The ZIP method number (0 stored, 8 deflate; others are refused when read).
        public var method: UInt16
        public var crc32: UInt32
        public var storedSize: Int64
        public var size: Int64
        public var headerOffset: Int64
        /// Whether the attributes describe a regular file.
        public var isRegularFile: Bool
    }

    /// The archive's location.
    public let url: URL
    /// The archive's size in bytes.
    public let size: Int64
    private let file: ReadableFile

    /// Opens an archive for reading.
    public init(contentsOf url: URL) throws {
        self.url = url
        file = try ReadableFile(url)
        size = try file.size()
    }

    /// The entries of the central directory, in directory order.
    ///
    /// - Throws: ``FormatError`` (`malformed-archive`, `truncated`, `unsafe-entry-name`).
    public func entries() throws -> [Entry] {
        let tailCount = Int(min(size, Int64(65_535 + ZipFormat.endOfCentralDirectorySize + ZipFormat.zip64EndSize + ZipFormat.zip64LocatorSize)))
        let tailOffset = size - Int64(tailCount)
        let end = try CentralDirectory.parseEnd(try file.read(count: tailCount, at: tailOffset), tailOffset: tailOffset)
        guard end.directoryOffset >= 0, end.directorySize >= 0, end.directoryOffset <= size, end.directorySize <= size - end.directoryOffset,
              end.directorySize <= Int64(Int32.max) else {
            throw FormatError(.malformedArchive, "The central directory lies outside the archive.", field: nil)
        }
        let bytes = try file.read(count: Int(end.directorySize), at: end.directoryOffset)
        let (records, _) = try CentralDirectory.parseRecords(bytes, limit: Int(clamping: end.entryCount))
        guard records.count == end.entryCount else {
            throw FormatError(.truncated, "The central directory lists \(records.count) of \(end.entryCount) entries.", field: nil)
        }
        return records.map {
            Entry(name: $0.name, method: $0.method, crc32: $0.crc32, storedSize: $0.compressedSize,
                  size: $0.uncompressedSize, headerOffset: $0.headerOffset, isRegularFile: $0.isRegularFile)
        }
    }

    /// Reads the whole archive in order and checks it against the manifest, like a download would be.
    ///
    /// - Parameters:
    ///   - entries: the pack's distinct entries (``VersionManifest/expectedEntries(inPack:)``).
    ///   - archiveSHA256: the pack id, or `nil` to skip the whole-archive hash.
    ///   - sink: receives verified contents; by default they are discarded.
    public func verify(expecting entries: [PackEntryExpectation], archiveSHA256: String?, sink: any PackEntrySink = DiscardingSink()) throws {
        let reader = PackStreamReader(entries: entries, archiveSHA256: archiveSHA256, sink: sink)
        var offset: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 20)
        while offset < size {
            let count = try file.read(into: &buffer, at: offset)
            if count == 0 { break }
            try buffer.withUnsafeBytes { try reader.consume(UnsafeRawBufferPointer(rebasing: $0[..<count])) }
            offset += Int64(count)
        }
        try reader.finish()
    }

    /// The byte range of an entry's local header and data, for fetching it alone by HTTP range.
    public func recordRange(of entry: PackEntryExpectation) throws -> Range<Int64> {
        let header = try localHeader(of: entry)
        let dataOffset = entry.headerOffset + Int64(header.totalSize)  // inside the archive: localHeader(of:) read it
        guard entry.storedSize >= 0, entry.storedSize <= size - dataOffset else {
            throw FormatError(.truncated, "Entry '\(entry.name)' runs past the end of the archive.", field: entry.name)
        }
        return entry.headerOffset..<(dataOffset + entry.storedSize)
    }

    /// Reads one entry by offset and hands its verified contents to `sink`.
    public func extract(_ entry: PackEntryExpectation, to sink: any PackEntrySink) throws {
        let header = try localHeader(of: entry)
        guard try header.checkedName() == entry.name else {
            throw FormatError(.entryMismatch, "The entry at offset \(entry.headerOffset) is not '\(entry.name)'.", field: entry.name)
        }
        var decoder = try EntryDecoder(header: header, expected: entry) { try ZlibStream(.inflate) }
        var offset = entry.headerOffset + Int64(header.totalSize)  // inside the archive: localHeader(of:) read it
        guard entry.storedSize <= size - offset else {
            throw FormatError(.truncated, "Entry '\(entry.name)' runs past the end of the archive.", field: entry.name)
        }
        var scratch = [UInt8](repeating: 0, count: 1 << 18)
        try sink.beginEntry(entry)
        while decoder.remainingInput > 0 {
            let bytes = try file.read(count: Int(min(decoder.remainingInput, 1 << 20)), at: offset)
            guard !bytes.isEmpty else {
                throw FormatError(.truncated, "Entry '\(entry.name)' runs past the end of the archive.", field: entry.name)
            }
            _ = try bytes.withUnsafeBytes { try decoder.feed($0, scratch: &scratch, sink: sink) }
            offset += Int64(bytes.count)
        }
        try decoder.finish()
        try sink.endEntry(entry)
    }

    /// The verified contents of one entry.
    public func contents(of entry: PackEntryExpectation) throws -> Data {
        let sink = MemorySink()
        try extract(entry, to: sink)
        return Data(sink.contents[entry.name] ?? [])
    }

    private func localHeader(of entry: PackEntryExpectation) throws -> LocalHeader {
        guard entry.headerOffset >= 0, entry.headerOffset <= size - Int64(ZipFormat.localHeaderSize) else {
            throw FormatError(.truncated, "Entry '\(entry.name)' lies beyond the end of the archive.", field: entry.name)
        }
        let fixed = try file.read(count: ZipFormat.localHeaderSize, at: entry.headerOffset)
        // Short only when the file shrank since its size was read; parsing fewer bytes would trap.
        guard fixed.count == ZipFormat.localHeaderSize else {
            throw FormatError(.truncated, "The header of '\(entry.name)' is cut short.", field: entry.name)
        }
        guard let lengths = LocalHeader.variableLengths(fixed: fixed) else {
            throw FormatError(.malformedArchive, "No local header at offset \(entry.headerOffset) for '\(entry.name)'.", field: entry.name)
        }
        let full = try file.read(count: ZipFormat.localHeaderSize + lengths.name + lengths.extra, at: entry.headerOffset)
        guard full.count == ZipFormat.localHeaderSize + lengths.name + lengths.extra else {
            throw FormatError(.truncated, "The header of '\(entry.name)' is cut short.", field: entry.name)
        }
        return try LocalHeader.parse(full, entry: entry.name)
    }
}
