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

/// Receives one request's bytes of a pack archive (a byte range, or the whole archive) and turns
/// them into verified entry files in `staging/<id>.d/`, in one pass: each entry is inflated when
/// deflated, hashed once against the manifest, and written once. No raw copy of the archive is kept.
///
/// A retry within the same transfer continues where the bytes stopped (the reader's state is intact);
/// a response that starts over (offset 0) first removes what this sink wrote. When the transfer
/// fails, completed entries stay for a later attempt, and so does a cut entry unless its bytes were
/// wrong (`integrity`). So that a killed process keeps what it received, the entry being written is
/// handed to the file system after every write, and a deflated entry's archive bytes are kept as
/// they arrive (``CutEntryParts``); a fetch that starts with such held bytes (`heldPrefix`) runs them
/// through the reader before the downloaded range.
///
/// `@unchecked Sendable`: the engine calls a sink's methods one at a time, in order, from one task
/// (``TransferSink``'s contract), and the installer reads the state only after the transfer ended.
final class EntryRangeSink: TransferSink, @unchecked Sendable {
    let packID: String
    let range: Range<Int64>
    let targets: [PackRangeReader.Target]
    let isWholeArchive: Bool
    /// Every entry of the pack, for the central directory check of a whole archive.
    let allEntries: [PackEntryExpectation]
    let folder: URL
    let journal: StagingJournal
    let syncFiles: Bool
    let source: URL
    /// Archive bytes before `range` taken from the first target's part (`PackFetchPlan.Fetch.heldPrefix`).
    let heldPrefix: Int64
    private let parts: CutEntryParts?
    private let partWriter: CutEntryPartWriter?
    /// Called with the number of new bytes each time some arrive; bytes of a response that starts
    /// over count only past the most this sink ever received, so progress counts each byte once.
    private let received: @Sendable (Int64) -> Void
    /// Called with the retry when an attempt failed, and with `nil` when the next one is answered.
    private let stalled: @Sendable (TransferRetry?) -> Void
    private var reader: PackRangeReader?
    private var extractor: JournalingExtractor?
    private var consumed: Int64 = 0
    /// The most bytes this sink received in one response (`consumed`'s high-water mark).
    private var reported: Int64 = 0
    /// Whether every target was verified and written.
    private(set) var isVerified = false
    /// The first archive problem the reader reported, kept as the cause of the transfer's failure.
    private(set) var formatFailure: ResourceError?

    init(packID: String, fetch: PackFetchPlan.Fetch, allEntries: [PackEntryExpectation], folder: URL, journal: StagingJournal,
         parts: CutEntryParts?, syncFiles: Bool, source: URL, received: @escaping @Sendable (Int64) -> Void,
         stalled: @escaping @Sendable (TransferRetry?) -> Void = { _ in }) {
        self.packID = packID
        range = fetch.range
        heldPrefix = parts == nil ? 0 : fetch.heldPrefix
        self.parts = parts
        // A whole local archive needs no parts: it is read again at no cost.
        partWriter = parts.flatMap { source.isFileURL ? nil
            : CutEntryPartWriter(parts: $0, targets: fetch.targets, rangeEnd: fetch.range.upperBound, heldPrefix: fetch.heldPrefix) }
        targets = fetch.targets
        isWholeArchive = fetch.isWholeArchive
        self.allEntries = allEntries
        self.folder = folder
        self.journal = journal
        self.syncFiles = syncFiles
        self.source = source
        self.received = received
        self.stalled = stalled
    }

    func begin(_ head: TransferResponseHead) async throws {
        stalled(nil)
        if !source.isFileURL { try journal.record(head.validators) }
        // A retry within the transfer continues the same bytes: the reader is where they stopped.
        if reader != nil, head.offset > 0, head.offset == consumed { return }
        guard head.offset == 0 else {
            throw ResourceError(.storageFailure, "The transfer resumed at byte \(head.offset) of a range this sink holds \(consumed) bytes of.", url: source)
        }
        // First response, or the body starts over: drop what an earlier response of this sink wrote.
        extractor?.removeWritten()
        partWriter?.restart()
        let extractor = try wrap { try JournalingExtractor(folder: folder, syncFiles: syncFiles, journal: journal, parts: partWriter) }
        self.extractor = extractor
        // A whole archive brings its central directory along: check it as a full read would.
        let reader = try wrap {
            try PackRangeReader(range: (range.lowerBound - heldPrefix)..<range.upperBound, targets: targets, sink: extractor,
                                checkingDirectoryOf: isWholeArchive ? allEntries : nil)
        }
        self.reader = reader
        consumed = 0
        if heldPrefix > 0 { try feedHeldPrefix(to: reader) }
    }

    func write(_ bytes: Data) async throws {
        guard let reader, extractor != nil else { throw ResourceError(.storageFailure, "Pack bytes arrived before the response began.", url: source) }
        // Kept before they are unpacked: a process killed from here on still has them.
        partWriter?.append(bytes, at: range.lowerBound + consumed)
        // The extractor writes through: what was received is in the file system before the next
        // bytes are taken, so a killed process keeps it for a resume.
        try wrap { try reader.consume(bytes) }
        consumed += Int64(bytes.count)
        if consumed > reported {
            received(consumed - reported)
            reported = consumed
        }
    }

    func retrying(_ retry: TransferRetry) async {
        stalled(retry)
    }

    /// Runs the first target's kept bytes (its part) through the reader, as if they had just arrived.
    private func feedHeldPrefix(to reader: PackRangeReader) throws(ResourceError) {
        guard let parts, let first = targets.first?.entry else { return }
        let path = parts.path(of: first)
        let descriptor = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreFailure.posix("open '\(path)'") }
        defer { Glibc.close(descriptor) }
        var remaining = heldPrefix
        var chunk = [UInt8](repeating: 0, count: 256 << 10)
        while remaining > 0 {
            let wanted = Int(min(Int64(chunk.count), remaining))
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, wanted) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else {
                // The part lost bytes since the plan was made: the entry starts over next time.
                unlink(path)
                throw ResourceError(.storageFailure, "The kept bytes of '\(first.name)' in staging are shorter than planned; try again.", url: source)
            }
            try wrap { try reader.consume(Data(chunk[..<count])) }
            remaining -= Int64(count)
        }
    }

    func finish() async throws {
        guard let reader else { throw ResourceError(.storageFailure, "The pack download ended before it began.", url: source) }
        try wrap {
            try reader.finish()
            // The completed files were flushed to stable storage on another thread while the
            // next ones arrived; they count only once every flush is done.
            try extractor?.base.finishWrites()
        }
        isVerified = true
    }

    func fail(_ error: ResourceError) async {
        close(keepingCurrentEntry: error.code != .integrity)
    }

    /// Closes the entry being written: kept for a later resume, or removed when its bytes were wrong.
    func close(keepingCurrentEntry: Bool) {
        partWriter?.close(keeping: keepingCurrentEntry)
        guard let extractor else { return }
        if keepingCurrentEntry { extractor.base.closeKeepingExtracted() } else { extractor.base.removeCurrentEntry() }
    }

    /// Runs `body`, turning format errors into `integrity` errors the engine reports as they are.
    private func wrap<T>(_ body: () throws -> T) throws(ResourceError) -> T {
        do { return try body() } catch {
            let mapped = ResourceError.installing(packID, url: source, error)
            if mapped.code == .integrity, formatFailure == nil { formatFailure = mapped }
            throw mapped
        }
    }
}

/// A ``DirectoryExtractor`` that also journals where each entry's data starts, so a later attempt
/// can continue an entry cut in the middle.
final class JournalingExtractor: PackRangeSink {
    let base: DirectoryExtractor
    let journal: StagingJournal
    /// Told when an entry is verified, so its kept archive bytes go.
    let parts: CutEntryPartWriter?
    /// Entries this extractor began or resumed, so a response that starts over can remove them.
    private var written: [String] = []

    init(folder: URL, syncFiles: Bool, journal: StagingJournal, parts: CutEntryPartWriter?) throws {
        base = try DirectoryExtractor(destination: folder, syncFiles: syncFiles, writesThrough: true)
        self.journal = journal
        self.parts = parts
    }

    func entryDataStarts(_ entry: PackEntryExpectation, at dataOffset: Int64) throws {
        if entry.method == .stored, journal.dataOffset(of: entry.name) != dataOffset {
            try journal.recordDataOffset(dataOffset, of: entry.name)
        }
    }

    func beginEntry(_ entry: PackEntryExpectation) throws {
        written.append(entry.name)
        try base.beginEntry(entry)
    }

    func resumeEntry(_ entry: PackEntryExpectation, heldBytes: Int64) throws {
        written.append(entry.name)
        try base.resumeEntry(entry, heldBytes: heldBytes)
    }

    func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws { try base.writeEntryData(bytes) }

    func endEntry(_ entry: PackEntryExpectation) throws {
        try base.endEntry(entry)
        parts?.finished(entry)
    }

    /// Removes every entry file this extractor wrote (complete or not).
    func removeWritten() {
        base.removeCurrentEntry()
        for name in written { unlink(base.destination.appending(path: name).path) }
        written.removeAll()
    }
}
