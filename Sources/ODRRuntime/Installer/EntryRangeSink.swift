#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat

/// Receives one request's bytes of a pack archive (a byte range, or the whole archive) and turns
/// them into verified entry files in `staging/<id>.d/`, in one pass: each entry is inflated when
/// deflated, hashed once against the manifest, and written once. No raw copy of the archive is kept.
///
/// A retry within the same transfer continues where the bytes stopped (the reader's state is intact);
/// a response that starts over (offset 0) first removes what this sink wrote. When the transfer
/// fails, completed entries stay for a later attempt, and so does a cut entry unless its bytes were
/// wrong (`integrity`).
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
    /// Called with the number of new bytes each time some arrive.
    private let received: @Sendable (Int64) -> Void
    private var reader: PackRangeReader?
    private var extractor: JournalingExtractor?
    private var consumed: Int64 = 0
    /// Whether every target was verified and written.
    private(set) var isVerified = false
    /// The first archive problem the reader reported, kept as the cause of the transfer's failure.
    private(set) var formatFailure: ResourceError?

    init(packID: String, fetch: PackFetchPlan.Fetch, allEntries: [PackEntryExpectation], folder: URL, journal: StagingJournal,
         syncFiles: Bool, source: URL, received: @escaping @Sendable (Int64) -> Void) {
        self.packID = packID
        range = fetch.range
        targets = fetch.targets
        isWholeArchive = fetch.isWholeArchive
        self.allEntries = allEntries
        self.folder = folder
        self.journal = journal
        self.syncFiles = syncFiles
        self.source = source
        self.received = received
    }

    func begin(_ head: TransferResponseHead) async throws {
        if !source.isFileURL { try journal.record(head.validators) }
        // A retry within the transfer continues the same bytes: the reader is where they stopped.
        if reader != nil, head.offset > 0, head.offset == consumed { return }
        guard head.offset == 0 else {
            throw ResourceError(.storageFailure, "The transfer resumed at byte \(head.offset) of a range this sink holds \(consumed) bytes of.", url: source)
        }
        // First response, or the body starts over: drop what an earlier response of this sink wrote.
        extractor?.removeWritten()
        let extractor = try wrap { try JournalingExtractor(folder: folder, syncFiles: syncFiles, journal: journal) }
        self.extractor = extractor
        // A whole archive brings its central directory along: check it as a full read would.
        reader = try wrap {
            try PackRangeReader(range: range, targets: targets, sink: extractor, checkingDirectoryOf: isWholeArchive ? allEntries : nil)
        }
        consumed = 0
    }

    func write(_ bytes: Data) async throws {
        guard let reader else { throw ResourceError(.storageFailure, "Pack bytes arrived before the response began.", url: source) }
        try wrap { try reader.consume(bytes) }
        consumed += Int64(bytes.count)
        received(Int64(bytes.count))
    }

    func finish() async throws {
        guard let reader else { throw ResourceError(.storageFailure, "The pack download ended before it began.", url: source) }
        try wrap { try reader.finish() }
        isVerified = true
    }

    func fail(_ error: ResourceError) async {
        close(keepingCurrentEntry: error.code != .integrity)
    }

    /// Closes the entry being written: kept for a later resume, or removed when its bytes were wrong.
    func close(keepingCurrentEntry: Bool) {
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
    /// Entries this extractor began or resumed, so a response that starts over can remove them.
    private var written: [String] = []

    init(folder: URL, syncFiles: Bool, journal: StagingJournal) throws {
        base = try DirectoryExtractor(destination: folder, syncFiles: syncFiles)
        self.journal = journal
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

    func endEntry(_ entry: PackEntryExpectation) throws { try base.endEntry(entry) }

    /// Removes every entry file this extractor wrote (complete or not).
    func removeWritten() {
        base.removeCurrentEntry()
        for name in written { unlink(base.destination.appending(path: name).path) }
        written.removeAll()
    }
}
