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

/// Chunked entries (docs/STORE.md, "Chunked files"): an entry with a chunk table of which the store
/// holds some chunks (in any installed file) is assembled from those and byte ranges of the archive
/// carrying the others, rather than downloaded whole.
extension PackInstaller {
    /// A chunked entry to assemble: its plan, and (when installing) its work file opened with what
    /// an earlier attempt wrote checked.
    struct ChunkedEntry {
        var plan: ChunkedEntryPlan
        var writer: ChunkedEntryWriter?
    }

    /// The chunk tables of the pack's chunked entries, by entry name.
    func chunkTables(of pack: PackRecord, in lookup: ManifestIndex) -> [String: [FileChunk]] {
        var tables: [String: [FileChunk]] = [:]
        for file in lookup.files(inPack: pack.id) where !file.chunks.isEmpty && tables[file.entry] == nil {
            tables[file.entry] = file.chunks
        }
        return tables
    }

    /// Plans the chunked entries among `missing` that the store holds chunks of, or that an earlier
    /// attempt began; the others download as usual.
    ///
    /// - Parameter opening: open each entry's work file and hash again what it holds (the install
    ///   itself); otherwise trust the journal and the file's size (a size estimate).
    func chunkedEntries(
        _ missing: [PackEntryExpectation], tables: [String: [FileChunk]], of pack: PackRecord, journal: StagingJournal,
        policy: RangePolicy, source: URL, opening: Bool
    ) throws(ResourceError) -> [ChunkedEntry] {
        // A local archive is read whole; without ranges nothing can be taken piecewise.
        guard policy.usesRanges, reusesInstalledFiles, !tables.isEmpty else { return [] }
        let candidates = missing.filter { tables[$0.name] != nil }
        guard !candidates.isEmpty else { return [] }
        let held = try store.heldChunks(withSHA256: candidates.flatMap { tables[$0.name]!.map(\.sha256) }, excluding: pack.id)
        var result: [ChunkedEntry] = []
        for entry in candidates {
            let table = tables[entry.name]!
            guard let located = ChunkedEntryPlan.locate(table, in: entry) else { continue }
            let url = ChunkedEntryWriter.workURL(staging: store.stagingURL, packID: pack.id, entry: entry)
            var writer: ChunkedEntryWriter?
            var done = 0
            if opening {
                // Only an entry that can use something opens (and creates) a work file.
                guard ChunkedEntryWriter.recordedChunks(at: url, chunks: located, journal: journal, entry: entry) > 0
                        || table.contains(where: { held[$0.sha256] != nil }) else { continue }
                let opened = try ChunkedEntryWriter(url: url, packID: pack.id, entry: entry, chunks: located, journal: journal,
                                                    syncFiles: store.synchronousWrites, source: source)
                done = opened.done
                writer = opened
            } else {
                done = ChunkedEntryWriter.recordedChunks(at: url, chunks: located, journal: journal, entry: entry)
            }
            guard let plan = ChunkedEntryPlan.make(entry: entry, chunks: table, done: done, held: held, policy: policy) else {
                writer?.discard()
                continue
            }
            result.append(ChunkedEntry(plan: plan, writer: writer))
        }
        return result
    }

    /// Assembles a chunked entry into `folder` in one pass, in chunk order: chunks written before
    /// are kept, held ones copied from disk (checked as they are read; one that does not match is
    /// fetched on its own instead), and the missing ones asked of the peers by their SHA-256
    /// (``chunkFromPeers(_:of:peers:traffic:received:)``), then the rest of each of the plan's ranges
    /// downloaded, from the origins as entry ranges are (see
    /// ``downloadFromOrigins(_:of:into:traffic:check:)``), which adds what they move to `traffic`.
    ///
    /// - Returns: the requests made.
    func assembleChunked(
        _ item: ChunkedEntry, of pack: PackRecord, from source: URL, into folder: URL, journal: StagingJournal, traffic: Locked<PackTraffic>,
        received: @escaping @Sendable (Int64) -> Void, receivedFromPeer: @escaping @Sendable (Int64) -> Void,
        stalled: @escaping @Sendable (TransferRetry?) -> Void
    ) async throws(ResourceError) -> Int {
        guard let writer = item.writer else { return 0 }
        defer { writer.close() }
        let plan = item.plan
        var fetches = plan.fetches[...]
        var requests = 0
        func download(_ fetch: ChunkedEntryPlan.Fetch) async throws(ResourceError) {
            // Peers first, chunk by chunk: the first chunk none of them delivers sends the rest of
            // the fetch to the origins, as one range.
            var first = fetch.chunks.lowerBound
            if let peers, !source.isFileURL {
                while first < fetch.chunks.upperBound, writer.done == first,
                      try await chunkFromPeers(writer, of: source, peers: peers, traffic: traffic, received: receivedFromPeer) {
                    first += 1
                }
            }
            guard first < fetch.chunks.upperBound else { return }
            let rest = first == fetch.chunks.lowerBound ? fetch
                : ChunkedEntryPlan.Fetch(range: plan.chunks[first].archive.lowerBound..<fetch.range.upperBound, chunks: first..<fetch.chunks.upperBound)
            let sink = ChunkRangeSink(writer: writer, fetch: rest, journal: journal, source: source, received: received, stalled: stalled)
            // A refused chunk blames the origin that sent it: the next attempt asks another.
            _ = try await downloadFromOrigins(rangeRequest(for: pack, source: source, range: rest.range, journal: journal),
                                                       of: pack, into: sink, traffic: traffic)
            requests += 1
        }
        while writer.done < plan.chunks.count {
            let index = writer.done
            if let fetch = fetches.first, fetch.chunks.lowerBound <= index {
                fetches.removeFirst()
                guard fetch.chunks.contains(index) else { continue }
                try await download(fetch)
            } else if let held = plan.held[index], try writer.copyHeld(held) {
                continue
            } else {
                // Not held after all (a damaged or vanished installed file): this chunk travels.
                try await download(ChunkedEntryPlan.Fetch(range: plan.chunks[index].archive, chunks: index..<(index + 1)))
            }
        }
        try writer.finish(into: folder)
        return requests
    }

    /// A request for `range` of the pack's archive (the whole of it for `nil`), with the origins and
    /// the validators the staged bytes came with.
    func rangeRequest(for pack: PackRecord, source: URL, range: Range<Int64>?, journal: StagingJournal) -> TransferRequest {
        let origins = source.isFileURL ? nil : self.origins
        var request = origins?.request(for: pack.archivePath, priority: priority) ?? TransferRequest(url: source, priority: priority)
        if let range {
            request.byteRange = range
            request.expectedSize = Int64(range.count)
            // Validators of one origin guard nothing on another; the hashes guard all.
            let validators = journal.validators
            if !validators.isEmpty, request.alternateURLs.isEmpty { request.ifRange = validators }
        } else {
            request.expectedSize = pack.archiveBytes
        }
        return request
    }

    /// Whether an earlier attempt wrote chunks of one of the pack's chunked entries (kept when the
    /// attempt failed, so the next one continues from them).
    func holdsChunkedWork(of pack: PackRecord) -> Bool {
        let folder = store.stagingURL.appending(path: "\(pack.id).chunked", directoryHint: .isDirectory).path
        return ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains { name in
            var info = stat()
            return lstat(folder + "/" + name, &info) == 0 && info.st_mode & S_IFMT == S_IFREG && info.st_size > 0
        }
    }

    /// Removes the work files of the pack's chunked entries.
    func discardChunkedWork(of pack: PackRecord) {
        ResourceStore.removeTree(store.stagingURL.appending(path: "\(pack.id).chunked", directoryHint: .isDirectory))
    }
}
