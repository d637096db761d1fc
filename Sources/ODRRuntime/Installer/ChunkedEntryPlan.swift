#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// How a chunked entry is assembled: which chunks an earlier attempt wrote already, which the
/// store holds on disk (in any installed file), and which byte ranges of the archive carry the rest.
///
/// Pure: the installer gathers the facts (the journal, the verified prefix of the entry's work file,
/// the store's held-chunk index) and carries the plan out in ``PackInstaller``'s chunked assembly
/// (docs/STORE.md, "Chunked files"). An entry with no chunk done and none held has no plan
/// (``make(entry:chunks:done:held:policy:)`` returns `nil`): it downloads as any other entry.
///
/// Chunks inside one request are all taken from the downloaded bytes, held or not: merging two
/// missing neighbours across a held chunk (``RangePolicy/merge(_:)``) means its bytes arrive anyway.
struct ChunkedEntryPlan: Sendable {
    /// One chunk with where it lives in the file and in the archive.
    struct Chunk: Sendable, Hashable {
        /// Its first byte in the file.
        var fileOffset: Int64
        /// Its bytes in the archive (compressed, for a deflated entry).
        var archive: Range<Int64>
        /// Its uncompressed size.
        var size: Int64
        var sha256: String
    }

    /// One range request and the chunks it carries.
    struct Fetch: Sendable, Hashable {
        var range: Range<Int64>
        var chunks: Range<Int>
    }

    let entry: PackEntryExpectation
    let chunks: [Chunk]
    /// How many chunks from the start an earlier attempt wrote and verified.
    let done: Int
    /// Where to read each chunk taken from disk, by position.
    let held: [Int: ResourceStore.HeldChunk]
    /// The requests, in archive order.
    let fetches: [Fetch]

    /// The archive bytes the fetches download.
    var fetchBytes: Int64 { fetches.reduce(0) { $0.clampedAdding(Int64($1.range.count)) } }
    /// Archive bytes of the chunks taken from disk (what they would have cost to download).
    var heldBytes: Int64 { held.keys.reduce(0) { $0.clampedAdding(Int64(chunks[$1].archive.count)) } }
    /// Archive bytes of the chunks an earlier attempt wrote.
    var resumedBytes: Int64 { chunks[..<done].reduce(0) { $0.clampedAdding(Int64($1.archive.count)) } }
    /// Whether the entry is the last chunk's: it ends the deflate stream.
    func isLast(_ index: Int) -> Bool { index == chunks.count - 1 }

    /// The chunks of `entry` with their file and archive positions; `nil` when the table does not
    /// tile the entry (a manifest that skipped validation) or a sum overflows.
    static func locate(_ table: [FileChunk], in entry: PackEntryExpectation) -> [Chunk]? {
        guard !table.isEmpty, let dataOffset = entry.predictedDataOffset else { return nil }
        var chunks: [Chunk] = []
        chunks.reserveCapacity(table.count)
        var fileOffset: Int64 = 0
        var archiveOffset = dataOffset
        for chunk in table {
            let (fileEnd, overflow) = fileOffset.addingReportingOverflow(chunk.size)
            let (archiveEnd, overflow2) = archiveOffset.addingReportingOverflow(chunk.storedSize)
            guard !overflow, !overflow2, chunk.size > 0, chunk.storedSize > 0 else { return nil }
            chunks.append(Chunk(fileOffset: fileOffset, archive: archiveOffset..<archiveEnd, size: chunk.size, sha256: chunk.sha256))
            (fileOffset, archiveOffset) = (fileEnd, archiveEnd)
        }
        guard fileOffset == entry.size, archiveOffset - dataOffset == entry.storedSize else { return nil }
        return chunks
    }

    /// Plans the assembly of `entry` from its chunk table.
    ///
    /// - Parameters:
    ///   - done: chunks an earlier attempt wrote and verified (the work file's checked prefix).
    ///   - held: chunks the store holds, by SHA-256.
    ///   - policy: how the missing chunks' ranges merge.
    /// - Returns: `nil` when the entry is not chunked, its table does not tile it, or nothing of it
    ///   is done or held (it then downloads whole, as an unchunked entry does).
    static func make(
        entry: PackEntryExpectation, chunks table: [FileChunk], done: Int, held: [String: ResourceStore.HeldChunk], policy: RangePolicy
    ) -> ChunkedEntryPlan? {
        guard let chunks = locate(table, in: entry) else { return nil }
        let done = min(max(0, done), chunks.count)
        var sources: [Int: ResourceStore.HeldChunk] = [:]
        var missing: [Int] = []
        for index in done..<chunks.count {
            if let chunk = held[chunks[index].sha256], chunk.size == chunks[index].size {
                sources[index] = chunk
            } else {
                missing.append(index)
            }
        }
        guard done > 0 || !sources.isEmpty else { return nil }
        let fetches = policy.merge(missing.map { chunks[$0].archive }).map { request in
            Fetch(range: request.range, chunks: missing[request.spans.lowerBound]..<(missing[request.spans.upperBound - 1] + 1))
        }
        for fetch in fetches {
            for index in fetch.chunks { sources[index] = nil }
        }
        return ChunkedEntryPlan(entry: entry, chunks: chunks, done: done, held: sources, fetches: fetches)
    }
}
