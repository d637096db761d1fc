import Foundation
import ODRFormat

/// Unpacks a pack while it downloads: each chunk goes to the raw partial file (for a later resume)
/// and through a ``PackStreamReader`` into a ``DirectoryExtractor`` in `staging/`, hashing as it goes.
///
/// When a download resumes (in this process or after a crash), the reader must see the archive from
/// its first byte: ``begin(_:)`` starts a fresh reader and extraction folder and replays the held
/// bytes from the partial file before the new ones arrive.
///
/// `@unchecked Sendable`: the engine calls a sink's methods one at a time, in order, from one task
/// (``TransferSink``'s contract), and the installer reads the state only after the transfer has
/// ended; so the mutable state is never accessed concurrently.
final class PackInstallSink: TransferSink, @unchecked Sendable {
    let pack: PackRecord
    let entries: [PackEntryExpectation]
    /// `staging/<id>.d/`: where entries are extracted.
    let extraction: URL
    /// `staging/<id>.zip`: the raw archive, kept for resuming; `nil` for local sources.
    let raw: FileSink?
    let syncFiles: Bool
    /// Where the archive comes from, for error messages.
    let source: URL
    private let progress: @Sendable (Int64) -> Void
    private var reader: PackStreamReader?
    private var extractor: DirectoryExtractor?
    private var received: Int64 = 0
    private var crashArmed = CrashPoint.isArmed
    /// Whether every entry and the archive hash were verified.
    private(set) var isVerified = false
    /// The first archive problem the reader reported, kept as the cause of the transfer's failure.
    private(set) var formatFailure: ResourceError?

    init(pack: PackRecord, entries: [PackEntryExpectation], source: URL, extraction: URL, raw: URL?, syncFiles: Bool,
         progress: @escaping @Sendable (Int64) -> Void) {
        self.pack = pack
        self.source = source
        self.entries = entries
        self.extraction = extraction
        self.raw = raw.map { FileSink(url: $0) }
        self.syncFiles = syncFiles
        self.progress = progress
    }

    func resumePoint() -> TransferResumePoint? { raw?.resumePoint() }

    func readHeldBytes(count: Int64, _ consume: (UnsafeRawBufferPointer) throws -> Void) async throws {
        guard let raw else { throw ResourceError(.storageFailure, "A local pack has no held bytes.") }
        try await raw.readHeldBytes(count: count, consume)
    }

    func begin(_ head: TransferResponseHead) async throws {
        try await raw?.begin(head)
        discardExtraction()
        extractor = try wrap { try DirectoryExtractor(destination: extraction, syncFiles: syncFiles) }
        let reader = PackStreamReader(entries: entries, archiveSHA256: pack.id, sink: extractor!)
        self.reader = reader
        received = head.offset
        if head.offset > 0, let raw {
            try await raw.readHeldBytes(count: head.offset) { bytes in try wrap { try reader.consume(bytes) } }
        }
        progress(received)
    }

    func write(_ bytes: Data) async throws {
        try await raw?.write(bytes)
        guard let reader else { throw ResourceError(.storageFailure, "Pack bytes arrived before the response began.") }
        try wrap { try reader.consume(bytes) }
        received += Int64(bytes.count)
        progress(received)
        if crashArmed, received * 2 >= pack.archiveBytes, received >= CrashPoint.downloadMinimumBytes {
            crashArmed = false
            CrashPoint.download.reached()
        }
    }

    func finish() async throws {
        guard let reader else { throw ResourceError(.storageFailure, "The pack download ended before it began.") }
        try wrap { try reader.finish() }
        isVerified = true
        try await raw?.finish()
    }

    func fail(_ error: ResourceError) async {
        await raw?.fail(error)
        discardExtraction()
    }

    /// Removes everything this sink wrote to `staging/` (raw bytes too unless `keepingRaw`).
    func discard(keepingRaw: Bool) {
        discardExtraction()
        if !keepingRaw, let raw {
            ResourceStore.removeTree(raw.url)
            ResourceStore.removeTree(raw.resumeInfoURL)
        }
    }

    private func discardExtraction() {
        extractor?.removeExtracted()
        extractor = nil
        reader = nil
        ResourceStore.removeTree(extraction)
    }

    /// Runs `body`, turning format errors into `integrity` errors the engine reports as they are.
    private func wrap<T>(_ body: () throws -> T) throws(ResourceError) -> T {
        do { return try body() } catch {
            let mapped = ResourceError.installing(pack.id, url: source, error)
            if mapped.code == .integrity, formatFailure == nil { formatFailure = mapped }
            throw mapped
        }
    }
}
