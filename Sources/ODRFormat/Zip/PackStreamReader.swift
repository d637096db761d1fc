#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads a pack as its bytes arrive, checking every entry against the manifest and handing the
/// verified contents to a sink.
///
/// Feed it chunks of any size, as they come from the network, then call ``finish()``. It checks each
/// local header (name, method, sizes, position), inflates deflated entries, refuses output beyond
/// the declared size, checks every entry's SHA-256, checks the central directory (no symlinks or
/// devices, no duplicates, nothing the manifest does not list) and, if given, the SHA-256 of the
/// whole archive. Any problem throws a ``FormatError`` and the reader stops.
///
/// ```swift
/// let extractor = try DirectoryExtractor(destination: staging)
/// let reader = PackStreamReader(entries: manifest.expectedEntries(inPack: pack.id),
///                               archiveSHA256: pack.id, sink: extractor)
/// for try await chunk in download { try reader.consume(chunk) }
/// try reader.finish()
/// ```
public final class PackStreamReader {
    private let expected: [PackEntryExpectation]
    private let archiveSHA256: String?
    private let sink: any PackEntrySink
    private var state: State = .header(LocalHeader.Collector())
    private var nextEntry = 0
    private var seenNames = Set<String>()
    private var archiveHash = StreamingSHA256()
    private var inflater: ZlibStream?
    private var scratch = [UInt8](repeating: 0, count: 1 << 18)
    private let trailerLimit: Int

    /// The number of archive bytes consumed so far.
    public private(set) var bytesConsumed: Int64 = 0

    private enum State {
        case header(LocalHeader.Collector)
        case data(EntryDecoder)
        case trailer([UInt8])
        case failed
        case finished
    }

    /// Creates a reader for a pack whose entries the manifest describes.
    ///
    /// - Parameters:
    ///   - entries: the pack's distinct entries in archive order (``VersionManifest/expectedEntries(inPack:)``).
    ///   - archiveSHA256: the pack id, to check the whole archive's hash at the end; `nil` skips it.
    ///   - sink: where verified entry contents go.
    public init(entries: [PackEntryExpectation], archiveSHA256: String? = nil, sink: any PackEntrySink) {
        expected = entries.sorted { $0.headerOffset < $1.headerOffset }
        self.archiveSHA256 = archiveSHA256
        self.sink = sink
        trailerLimit = (1 << 20) + entries.count * (ZipFormat.centralHeaderSize + 4096 + 512)
    }

    /// Consumes the next bytes of the archive.
    ///
    /// - Throws: ``FormatError``; after an error the reader refuses further input.
    public func consume(_ bytes: UnsafeRawBufferPointer) throws {
        if case .failed = state {
            throw FormatError(.invalidOperation, "The reader already failed; start again with a new reader.", field: nil)
        }
        do {
            archiveHash.update(bytes)
            var offset = 0
            while offset < bytes.count {
                let used = try step(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                offset += used
                bytesConsumed += Int64(used)
            }
        } catch {
            state = .failed
            throw error
        }
    }

    /// Consumes the next bytes of the archive.
    public func consume(_ data: Data) throws {
        try data.withUnsafeBytes { try consume($0) }
    }

    /// Checks that the archive is complete: every entry, the central directory and the hash.
    public func finish() throws {
        do {
            guard case .trailer(let trailer) = state else {
                if case .finished = state { return }
                let missing = nextEntry < expected.count ? " before entry '\(expected[nextEntry].name)' was complete" : ""
                throw FormatError(.truncated, "The pack ended after \(bytesConsumed) bytes\(missing). Download it again.", field: nil)
            }
            try finishTrailer(trailer)
            if let archiveSHA256 {
                let digest = archiveHash.finalize()
                guard digest == archiveSHA256 else {
                    throw FormatError(.hashMismatch, "The pack's SHA-256 is \(digest), not \(archiveSHA256); it is corrupt or not the pack the manifest names. Download it again.", field: nil)
                }
            }
            state = .finished
        } catch {
            state = .failed
            throw error
        }
    }

    // MARK: - States

    /// Advances the state machine with `input`; returns how many bytes it used (at least one).
    /// ``bytesConsumed`` counts the bytes before `input` while a step runs.
    private func step(_ input: UnsafeRawBufferPointer) throws -> Int {
        switch state {
        case .header(var collector):
            state = .failed  // releases the buffer so appending does not copy it
            return try readHeader(&collector, input)
        case .data(var decoder):
            let used = try decoder.feed(input, scratch: &scratch, sink: sink)
            if decoder.remainingInput == 0 {
                try decoder.finish()
                try sink.endEntry(decoder.expected)
                nextEntry += 1
                state = .header(LocalHeader.Collector())
            } else {
                state = .data(decoder)
            }
            return used
        case .trailer(var buffer):
            guard buffer.count + input.count <= trailerLimit else {
                throw FormatError(.malformedArchive, "The archive's trailing records are far larger than its entries need.", field: nil)
            }
            state = .failed  // releases the buffer so appending does not copy it
            buffer.append(contentsOf: input)
            state = .trailer(buffer)
            return input.count
        case .failed, .finished:
            throw FormatError(.malformedArchive, "The archive has bytes after its end record.", field: nil)
        }
    }

    private func readHeader(_ collector: inout LocalHeader.Collector, _ input: UnsafeRawBufferPointer) throws -> Int {
        let (used, progress) = collector.collect(input)
        switch progress {
        case .incomplete:
            state = .header(collector)
        case .otherRecord(let signature):
            if signature == ZipFormat.centralHeaderSignature || signature == ZipFormat.endOfCentralDirectorySignature
                || signature == ZipFormat.zip64EndSignature {
                guard nextEntry == expected.count else {
                    throw FormatError(.unexpectedEntry, "The archive lacks entry '\(expected[nextEntry].name)' that the manifest lists.", field: expected[nextEntry].name)
                }
                state = .trailer(collector.bytes)
            } else if signature == ZipFormat.dataDescriptorSignature {
                throw FormatError(.unsupportedFeature, "The archive uses data descriptors; packs must not.", field: nil)
            } else {
                throw FormatError(.malformedArchive, "Unexpected bytes at offset \(bytesConsumed + Int64(used) - 4); this is not a valid pack.", field: nil)
            }
        case .complete:
            try beginEntry(header: LocalHeader.parse(collector.bytes, entry: "entry \(nextEntry + 1)"),
                           at: bytesConsumed + Int64(used) - Int64(collector.bytes.count))
        }
        return used
    }

    private func beginEntry(header: LocalHeader, at offset: Int64) throws {
        let name = try header.checkedName()
        guard seenNames.insert(name).inserted else {
            throw FormatError(.duplicateEntry, "Entry '\(name)' appears twice in the archive.", field: name)
        }
        guard nextEntry < expected.count else {
            throw FormatError(.unexpectedEntry, "Entry '\(name)' is not in the manifest; the pack was refused.", field: name)
        }
        let entry = expected[nextEntry]
        guard entry.name == name else {
            let known = expected.contains { $0.name == name }
            throw FormatError(
                known ? .entryMismatch : .unexpectedEntry,
                known ? "Entry '\(name)' is out of place: the manifest expects '\(entry.name)' here."
                      : "Entry '\(name)' is not in the manifest; the pack was refused.",
                field: name)
        }
        guard offset == entry.headerOffset else {
            throw FormatError(.entryMismatch, "Entry '\(name)' starts at offset \(offset); the manifest says \(entry.headerOffset).", field: name)
        }
        let decoder = try EntryDecoder(header: header, expected: entry) {
            if let inflater { return inflater }
            let stream = try ZlibStream(.inflate)
            inflater = stream
            return stream
        }
        try sink.beginEntry(entry)
        if decoder.remainingInput == 0 {
            try decoder.finish()
            try sink.endEntry(entry)
            nextEntry += 1
            state = .header(LocalHeader.Collector())
        } else {
            state = .data(decoder)
        }
    }

    private func finishTrailer(_ trailer: [UInt8]) throws {
        let (records, end) = try CentralDirectory.parseRecords(trailer, limit: expected.count)
        try CentralDirectory.check(records, against: expected)
        let directoryOffset = bytesConsumed - Int64(trailer.count)
        let tail = Array(trailer[end...])
        let eocd = try CentralDirectory.parseEnd(tail, tailOffset: directoryOffset + Int64(end))
        guard eocd.entryCount == Int64(records.count), eocd.directoryOffset == directoryOffset,
              eocd.directorySize == Int64(end) else {
            throw FormatError(.malformedArchive, "The end record disagrees with the central directory.", field: nil)
        }
    }
}
