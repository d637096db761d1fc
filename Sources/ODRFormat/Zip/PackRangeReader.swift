#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Reads one byte range of a pack, as fetched by an HTTP range request, and hands the entries it
/// was asked for, verified, to a sink.
///
/// A range runs from an entry's local header to another entry's header or to the archive's end.
/// Neighbouring ranges may be merged, so a range can hold entries nobody asked for and, at its end,
/// the central directory; the reader skips those bytes without looking at them. Each wanted entry is
/// checked as ``PackStreamReader`` checks it: its local header against the manifest (name, method,
/// sizes, flags), its inflated size, and its SHA-256. A stored entry that an earlier attempt cut off
/// continues where its written bytes end (``Resume``). The archive's SHA-256 is not checked on this
/// path; the central directory is checked only when the range runs to the archive's end and the
/// caller asks for it (`checkingDirectoryOf`), as the installer does for a whole-archive download.
/// Any problem throws a ``FormatError`` and the reader stops.
///
/// ```swift
/// let extractor = try DirectoryExtractor(destination: staging)
/// let reader = try PackRangeReader(range: first.headerOffset..<next.headerOffset,
///                                  targets: [.init(entry: first)], sink: extractor)
/// do {
///     for try await chunk in rangeDownload { try reader.consume(chunk) }
///     try reader.finish()
/// } catch {
///     extractor.closeKeepingExtracted()  // a later attempt resumes the partial entry
///     throw error
/// }
/// ```
public final class PackRangeReader {
    /// An entry to extract from the range.
    public struct Target: Sendable {
        /// What the manifest says the entry is.
        public var entry: PackEntryExpectation
        /// Where an earlier attempt stopped, to continue the entry instead of starting it.
        public var resume: Resume?

        public init(entry: PackEntryExpectation, resume: Resume? = nil) {
            self.entry = entry
            self.resume = resume
        }

        /// The archive offset where the reader takes the entry up.
        /// Clamped: a resume read from a damaged journal must fail the range check, not trap.
        var start: Int64 { resume.map { $0.dataOffset.clampedAdding($0.heldBytes) } ?? entry.headerOffset }
    }

    /// How far an earlier attempt got with a stored entry.
    public struct Resume: Sendable {
        /// The archive offset of the entry's first data byte (``PackRangeSink/entryDataStarts(_:at:)``).
        public var dataOffset: Int64
        /// How many of its bytes are already written.
        public var heldBytes: Int64
        /// The SHA-256 state after those bytes, hashed from what was written, so that the final check
        /// covers every byte of the file.
        public var heldHash: StreamingSHA256

        public init(dataOffset: Int64, heldBytes: Int64, heldHash: StreamingSHA256) {
            self.dataOffset = dataOffset
            self.heldBytes = heldBytes
            self.heldHash = heldHash
        }
    }

    private let range: Range<Int64>
    private let targets: [Target]
    private let sink: any PackRangeSink
    private var state: State = .skipping
    private var nextTarget = 0
    private var inflater: ZlibStream?
    /// Inflate output; allocated with the inflate stream, as stored entries never need it.
    private var scratch: [UInt8] = []
    /// Hashes deflated entries' inflated bytes on a second core while this reader inflates and
    /// writes the next ones; made with the first deflated entry.
    private var hasher: BackgroundSHA256?
    /// Inflate output at a time.
    private static let scratchBytes = 1 << 18

    /// Every entry of the pack, when the range ends at the archive's end and the central directory
    /// and end records there must be checked (no symbolic links or devices, nothing unlisted).
    private let directoryEntries: [PackEntryExpectation]?
    /// Where the trailing records can start at the earliest: the last entry's header and data, with
    /// no extra field. The bytes from there on are kept for the check.
    private let trailerStart: Int64
    private var trailer: [UInt8] = []
    private let trailerLimit: Int

    /// The number of bytes consumed so far, counted from the start of the range.
    public private(set) var bytesConsumed: Int64 = 0
    /// The names of the entries verified and ended so far, in archive order.
    public private(set) var completed: [String] = []

    private enum State {
        /// Between targets, or after the last one.
        case skipping
        case header(LocalHeader.Collector)
        case data(EntryDecoder)
        case failed
        case finished
    }

    /// Creates a reader for the bytes of `range` of a pack.
    ///
    /// - Parameters:
    ///   - range: the archive offsets the bytes cover.
    ///   - targets: the entries to extract, in any order; each starts inside the range (its local
    ///     header, or for a resumed entry its first byte not yet written).
    ///   - sink: where verified entry contents go.
    /// - Throws: `invalid-operation` for a range that starts below 0, a target outside the range, two
    ///   targets at one offset, or a resume that is impossible (a deflated entry, more bytes held than
    ///   the entry has, a data offset that is not inside the range).
    ///   - directoryEntries: every entry of the pack, to check the central directory and end
    ///     records at the range's end against them; `nil` (the default) ignores those bytes.
    public init(range: Range<Int64>, targets: [Target], sink: any PackRangeSink,
                checkingDirectoryOf directoryEntries: [PackEntryExpectation]? = nil) throws {
        guard range.lowerBound >= 0 else {
            throw FormatError(.invalidOperation, "The range \(range.lowerBound)..<\(range.upperBound) starts before the archive does.", field: nil)
        }
        let sorted = targets.sorted { $0.entry.headerOffset < $1.entry.headerOffset }
        for (index, target) in sorted.enumerated() {
            let name = target.entry.name
            if index > 0 {
                let previous = sorted[index - 1]
                guard previous.entry.headerOffset < target.entry.headerOffset, previous.start <= target.entry.headerOffset else {
                    throw FormatError(.invalidOperation, "Entries '\(previous.entry.name)' and '\(name)' overlap; each entry can be a target once.", field: name)
                }
            }
            if let resume = target.resume {
                // Refuses a deflated entry or an impossible count now rather than halfway through the range.
                _ = try EntryDecoder(resuming: target.entry, heldBytes: resume.heldBytes, heldHash: resume.heldHash)
                guard resume.dataOffset >= target.entry.headerOffset.clampedAdding(Int64(ZipFormat.localHeaderSize + name.utf8.count)) else {
                    throw FormatError(.invalidOperation, "Entry '\(name)' cannot have its data at \(resume.dataOffset), inside its own header.", field: name)
                }
            }
            let inside = target.resume == nil ? range.contains(target.start)
                                              : (range.lowerBound...range.upperBound).contains(target.start)
            guard inside else {
                throw FormatError(.invalidOperation, "Entry '\(name)' starts at \(target.start), outside the range \(range.lowerBound)..<\(range.upperBound).", field: name)
            }
        }
        self.range = range
        self.targets = sorted
        self.sink = sink
        self.directoryEntries = directoryEntries?.sorted { $0.headerOffset < $1.headerOffset }
        trailerStart = directoryEntries?.map {
            $0.headerOffset.clampedAdding(Int64(ZipFormat.localHeaderSize + $0.name.utf8.count)).clampedAdding($0.storedSize)
        }.max() ?? range.upperBound
        trailerLimit = (1 << 20) + (directoryEntries?.count ?? 0) * (ZipFormat.centralHeaderSize + 4096 + 512)
    }

    /// Consumes the next bytes of the range.
    ///
    /// - Throws: ``FormatError``; `malformed-archive` for bytes beyond the range's end. After an
    ///   error the reader refuses further input.
    public func consume(_ bytes: UnsafeRawBufferPointer) throws {
        try checkUsable()
        do {
            guard Int64(bytes.count) <= range.upperBound - position else {
                throw FormatError(.malformedArchive, "More bytes arrived than the range \(range.lowerBound)..<\(range.upperBound) holds; the server did not answer the range request.", field: nil)
            }
            try beginDueTargets()
            var offset = 0
            while offset < bytes.count {
                let used = try step(UnsafeRawBufferPointer(rebasing: bytes[offset...]))
                offset += used
                bytesConsumed += Int64(used)
                try beginDueTargets()
            }
        } catch {
            state = .failed
            throw error
        }
    }

    /// Consumes the next bytes of the range.
    public func consume(_ data: Data) throws {
        try data.withUnsafeBytes { try consume($0) }
    }

    /// Checks that every target was verified and ended; the rest of the range may be missing.
    ///
    /// - Throws: `truncated`, naming the first entry that is not complete.
    public func finish() throws {
        if case .finished = state { return }
        try checkUsable()
        do {
            try beginDueTargets()
            guard case .skipping = state, nextTarget == targets.count else {
                let name = targets[nextTarget].entry.name
                throw FormatError(.truncated, "The range ended after \(bytesConsumed) of its \(range.count) bytes, before entry '\(name)' was complete. Fetch the rest again.", field: name)
            }
            if let directoryEntries { try checkTrailer(against: directoryEntries) }
            state = .finished
        } catch {
            state = .failed
            throw error
        }
    }

    // MARK: - States

    /// The archive offset of the next byte.
    private var position: Int64 { range.lowerBound + bytesConsumed }

    private func checkUsable() throws {
        switch state {
        case .failed:
            throw FormatError(.invalidOperation, "The reader already failed; start again with a new reader.", field: nil)
        case .finished:
            throw FormatError(.invalidOperation, "The reader already finished.", field: nil)
        default:
            break
        }
    }

    /// Advances the state machine with `input`; returns how many bytes it used (at least one, since
    /// ``beginDueTargets()`` ran first). ``bytesConsumed`` counts the bytes before `input`.
    private func step(_ input: UnsafeRawBufferPointer) throws -> Int {
        switch state {
        case .skipping:
            guard nextTarget < targets.count else {
                keepTrailerBytes(of: input)
                return input.count
            }
            return Int(min(Int64(input.count), targets[nextTarget].start - position))
        case .header(var collector):
            state = .failed  // releases the buffer so appending does not copy it
            let (used, progress) = collector.collect(input)
            switch progress {
            case .incomplete:
                state = .header(collector)
            case .otherRecord:
                let entry = targets[nextTarget].entry
                throw FormatError(.malformedArchive, "There is no local header at offset \(entry.headerOffset), where the manifest puts entry '\(entry.name)'.", field: entry.name)
            case .complete:
                try beginEntry(header: collector.bytes, dataOffset: position + Int64(used))
            }
            return used
        case .data(var decoder):
            let used = try decoder.feed(input, scratch: &scratch, sink: sink)
            if decoder.remainingInput == 0 {
                try complete(decoder)
            } else {
                state = .data(decoder)
            }
            return used
        case .failed, .finished:
            throw FormatError(.invalidOperation, "The reader cannot take more bytes.", field: nil)
        }
    }

    /// Takes up every target that starts at the current position; a resumed entry whose bytes are
    /// all held completes without any input.
    private func beginDueTargets() throws {
        while case .skipping = state, nextTarget < targets.count {
            let target = targets[nextTarget]
            guard target.start >= position else {
                throw FormatError(.entryMismatch, "Entry '\(target.entry.name)' starts at offset \(target.start) by the manifest, but the entry before it runs until \(position).", field: target.entry.name)
            }
            guard target.start == position else { return }
            if let resume = target.resume {
                let decoder = try EntryDecoder(resuming: target.entry, heldBytes: resume.heldBytes, heldHash: resume.heldHash)
                try sink.resumeEntry(target.entry, heldBytes: resume.heldBytes)
                try proceed(with: decoder)
            } else {
                state = .header(LocalHeader.Collector())
            }
        }
    }

    private func beginEntry(header bytes: [UInt8], dataOffset: Int64) throws {
        let entry = targets[nextTarget].entry
        let header = try LocalHeader.parse(bytes, entry: entry.name)
        let name = try header.checkedName()
        guard name == entry.name else {
            throw FormatError(.entryMismatch, "The entry at offset \(entry.headerOffset) is '\(name)'; the manifest puts '\(entry.name)' there.", field: entry.name)
        }
        let decoder = try EntryDecoder(header: header, expected: entry, inflater: reusableInflater, hasher: reusableHasher)
        try sink.entryDataStarts(entry, at: dataOffset)
        try sink.beginEntry(entry)
        try proceed(with: decoder)
    }

    private func proceed(with decoder: EntryDecoder) throws {
        if decoder.remainingInput == 0 {
            try complete(decoder)
        } else {
            state = .data(decoder)
        }
    }

    private func complete(_ decoder: EntryDecoder) throws {
        try decoder.finish()
        try sink.endEntry(decoder.expected)
        completed.append(decoder.expected.name)
        nextTarget += 1
        state = .skipping
    }

    /// Keeps the bytes of `input` (at ``position``) that may belong to the trailing records.
    private func keepTrailerBytes(of input: UnsafeRawBufferPointer) {
        guard directoryEntries != nil else { return }
        let skip = Int(max(0, min(Int64(input.count), trailerStart - position)))
        guard skip < input.count else { return }
        trailer.append(contentsOf: input[skip...])
    }

    /// Checks the central directory and end records at the end of the archive.
    private func checkTrailer(against entries: [PackEntryExpectation]) throws {
        guard bytesConsumed == Int64(range.count) else {
            throw FormatError(.truncated, "The pack ended after \(position) of its \(range.upperBound) bytes, before its central directory. Download it again.", field: nil)
        }
        guard trailer.count <= trailerLimit else {
            throw FormatError(.malformedArchive, "The archive's trailing records are far larger than its entries need.", field: nil)
        }
        let end = try CentralDirectory.parseEnd(trailer, tailOffset: trailerStart)
        // Both are non-negative: the subtractions cannot overflow where a sum of declared sizes could.
        let start = end.directoryOffset - trailerStart
        guard start >= 0, start <= Int64(trailer.count), end.directorySize <= Int64(trailer.count) - start else {
            throw FormatError(.malformedArchive, "The end record puts the central directory at \(end.directoryOffset), where no entry's data can have ended.", field: nil)
        }
        let directory = Array(trailer[Int(start)..<Int(start + end.directorySize)])
        let (records, parsed) = try CentralDirectory.parseRecords(directory, limit: entries.count)
        guard parsed == directory.count, end.entryCount == Int64(records.count) else {
            throw FormatError(.malformedArchive, "The end record disagrees with the central directory.", field: nil)
        }
        try CentralDirectory.check(records, against: entries)
    }

    private func reusableHasher() -> BackgroundSHA256 {
        if let hasher { return hasher }
        // Pieces the size of the inflater's scratch (``reusableInflater()``): one copy per output.
        let made = BackgroundSHA256(pieceBytes: Self.scratchBytes)
        hasher = made
        return made
    }

    private func reusableInflater() throws -> ZlibStream {
        if let inflater { return inflater }
        let stream = try ZlibStream(.inflate)
        inflater = stream
        scratch = [UInt8](repeating: 0, count: Self.scratchBytes)
        return stream
    }
}
