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

/// Peers (docs/STORE.md, "Local network peers"): before a pack's plan is made, each entry the
/// store does not hold is asked of the peers by its SHA-256; what they deliver, checked against the
/// manifest's digest by the transport, lands in `staging/<id>.d/` as a verified entry, so the plan
/// that follows fetches from the origins only what no peer had.
///
/// A stored (uncompressed) entry cut in the middle when a peer dies stays in staging with a journal
/// line, as a cut range from an origin does: the origins continue it from its last byte, so a dying
/// peer costs nothing fetched twice. A cut deflated entry cannot be continued from archive bytes
/// and is fetched again whole from the origins.
extension PackInstaller {
    /// What the peers delivered for one pack.
    struct PeerRound: Sendable {
        /// Entries complete and verified from a peer.
        var complete: Set<String> = []
        /// Stored entries a peer cut in the middle, left for the origins to continue.
        var partial: Set<String> = []
        /// Bytes of the verified entries (uncompressed: what the peers sent for them).
        var verifiedBytes: Int64 = 0
        /// Entries handed to the origins during the round, no peer having sent a byte within
        /// ``PeerSet/hedgeSeconds`` (the origins' range requests for them: ``hedgeRequests``).
        var handedToOrigins: Set<String> = []
        /// The range requests the origins were sent for ``handedToOrigins`` during the round.
        var hedgeRequests = 0
    }

    /// Asks the peers for `missing` (at most ``maximumConcurrentPeerRequests`` at once); every byte
    /// received goes to `traffic` under the peer that sent it. Never throws for a peer's failure:
    /// the peer is dropped and the origins serve the entry. Throws only for local problems
    /// (`storage-failure`, `out-of-space`) and cancellation.
    ///
    /// When no peer has sent a byte within ``PeerSet/hedgeSeconds`` of the round's first request
    /// to a peer (a wait for a turn at the peer does not count), every entry not
    /// yet requested from a peer is handed to `origins` (which fetches it into the same folder,
    /// while the requests already sent go on: ``PeerRoundHedge`` keeps the two apart), and the round
    /// ends when both have. `origins` throwing anything but a local problem or cancellation is
    /// ignored: the pack's plan, which follows, fetches what is still missing.
    func fetchFromPeers(
        _ missing: [PackEntryExpectation], of pack: PackRecord, from source: URL, peers: PeerSet, into folder: URL, journal: StagingJournal,
        traffic: Locked<PackTraffic>, received: @escaping @Sendable (Int64) -> Void,
        origins: @escaping @Sendable ([PackEntryExpectation]) async throws(ResourceError) -> Int = { _ in 0 }
    ) async throws(ResourceError) -> PeerRound {
        guard !missing.isEmpty, peers.hasLivePeers else { return PeerRound() }
        try StoreFiles.makeFolder(folder.path)
        let round = Locked(PeerRound())
        let hedge = PeerRoundHedge()
        let syncFiles = store.synchronousWrites
        let fromPeer: @Sendable (Int64) -> Void = { bytes in
            hedge.peerSent()
            received(bytes)
        }
        let one: @Sendable (PackEntryExpectation) async throws(ResourceError) -> Void = { entry throws(ResourceError) in
            for peer in peers.live {
                if Task.isCancelled { throw ResourceError(.cancelled, "The install was cancelled.") }
                // Handed to the origins while it waited for its turn: they write it.
                if hedge.isHandedOver(entry.name) { return }
                try StoreFiles.makeFolders(above: entry.name, below: folder.path)
                let sink = PeerEntrySink(path: folder.appending(path: entry.name).path, entry: entry, journal: journal,
                                         syncFiles: syncFiles, received: fromPeer)
                do throws(ResourceError) {
                    guard try await download(sha256: entry.sha256, size: entry.size, from: peer, of: peers, into: sink, traffic: traffic,
                                             following: source, claim: { hedge.ask(entry.name) }) else {
                        continue
                    }
                    round.withLock {
                        $0.complete.insert(entry.name)
                        $0.verifiedBytes = $0.verifiedBytes.clampedAdding(entry.size)
                    }
                    return
                } catch {
                    if let local = sink.localFailure { throw local }
                    if error.code == .cancelled { throw error }
                    // 404: this peer does not hold the file; 503: it is busy. The next one may
                    // serve it. Any other failure dropped the peer (`download`).
                    if error.code == .resourceUnavailable || error.isPeerBusy { continue }
                    // A cut stored entry is continued by the origins from its last byte.
                    if sink.keptBytes > 0 {
                        round.withLock { _ = $0.partial.insert(entry.name) }
                        return
                    }
                }
            }
        }
        let concurrency = max(1, maximumConcurrentPeerRequests)
        let askPeers: @Sendable () async throws -> Void = {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var queue = missing[...]
                for _ in 0..<concurrency {
                    guard let next = queue.popFirst() else { break }
                    group.addTask { try await one(next) }
                }
                while try await group.next() != nil {
                    guard peers.hasLivePeers else { break }
                    while let next = queue.popFirst() {
                        guard hedge.isHandedOver(next.name) else {
                            group.addTask { try await one(next) }
                            break
                        }
                    }
                }
                try await group.waitForAll()
            }
        }
        let delay = peers.hedgeSeconds
        do {
            // Children: the peers' requests (`true` when they end) and the hedge's timer, which
            // then fetches from the origins what no peer was asked.
            try await withThrowingTaskGroup(of: Bool.self) { group in
                group.addTask {
                    try await askPeers()
                    return true
                }
                if delay.isFinite {
                    group.addTask {
                        // The delay counts from the round's first request (``PeerRoundHedge``).
                        for await _ in hedge.firstAsk {}
                        do { try await Task.sleep(for: .seconds(delay)) } catch { return false }
                        guard let handed = hedge.hedge(missing), !handed.isEmpty else { return false }
                        do throws(ResourceError) {
                            let requests = try await origins(handed)
                            round.withLock { $0.hedgeRequests = requests }
                        } catch where error.code == .cancelled || error.code == .storageFailure || error.code == .outOfSpace {
                            throw error
                        } catch {
                            // The pack's plan fetches what this left missing, with its own failovers.
                        }
                        return false
                    }
                }
                while let peersDone = try await group.next() {
                    // The peers are done and the timer has not fired: it never will.
                    if peersDone, !hedge.close() { group.cancelAll() }
                }
            }
        } catch let error as ResourceError {
            throw error
        } catch {
            throw ResourceError(.cancelled, "The install was cancelled.", cause: error)
        }
        let handed = hedge.handedOver
        return round.withLock {
            $0.handedToOrigins = handed
            return $0
        }
    }

    /// The entries of `missing` worth asking peers for: not chunked with chunks the store holds
    /// (those assemble from disk), nothing of them staged.
    func entriesForPeers(_ missing: [PackEntryExpectation], tables: [String: [FileChunk]], of pack: PackRecord) throws(ResourceError)
        -> [PackEntryExpectation] {
        let chunked = missing.filter { tables[$0.name] != nil }
        guard !chunked.isEmpty, reusesInstalledFiles else { return missing }
        let held = try store.heldChunks(withSHA256: chunked.flatMap { tables[$0.name]!.map(\.sha256) }, excluding: pack.id)
        return missing.filter { entry in
            guard let table = tables[entry.name] else { return true }
            return !table.contains { held[$0.sha256] != nil }
        }
    }
}

extension PackInstaller {
    /// Asks the live peers, in order, for the next chunk of `writer`'s entry by its SHA-256 and
    /// writes it when one delivers it (the transport checks its size and digest, the writer again).
    /// A 404 moves on to the next peer; any other failure drops the peer for the rest of the install.
    ///
    /// - Returns: whether the chunk was written; `false` sends it to the origins.
    /// - Throws: only for local problems (`storage-failure`) and cancellation.
    func chunkFromPeers(
        _ writer: ChunkedEntryWriter, of source: URL, peers: PeerSet, traffic: Locked<PackTraffic>,
        received: @escaping @Sendable (Int64) -> Void
    ) async throws(ResourceError) -> Bool {
        guard writer.done < writer.chunks.count else { return false }
        let chunk = writer.chunks[writer.done]
        for peer in peers.live {
            if Task.isCancelled { throw ResourceError(.cancelled, "The install was cancelled.") }
            let sink = PeerChunkSink(size: chunk.size, received: received)
            do throws(ResourceError) {
                guard try await download(sha256: chunk.sha256, size: chunk.size, from: peer, of: peers, into: sink, traffic: traffic,
                                         following: source) else {
                    continue
                }
            } catch {
                if error.code == .cancelled { throw error }
                // 404: this peer does not hold the chunk; 503: it is busy. The next one may
                // serve it. Any other failure dropped the peer (`download`).
                continue
            }
            if try writer.appendFileBytes(sink.bytes) { return true }
            peers.markFailed(peer, reason: "\(ResourceError.Code.integrity.rawValue): a chunk did not match its SHA-256")
        }
        return false
    }
}

extension PackInstaller {
    /// Downloads the content `digest` of `size` bytes from `peer` into `sink`; what the peer sent,
    /// kept or refused, counts under it in `peers` and `traffic`.
    ///
    /// A failure that is the peer's (anything but a 404, a busy answer (``ResourceError/isPeerBusy``),
    /// cancellation or a local problem of `sink`) drops the peer before its turn at
    /// ``peerRequestGate`` passes on; a request that
    /// waited for that turn then finds the peer dropped and returns at once, so the requests queued
    /// behind one that found a peer silent go to the next peer or the origins without costing the
    /// peer's timeout again.
    ///
    /// - Returns: `false` when `peer` was dropped before the request could be made.
    /// - Parameters:
    ///   - packURL: the archive URL of the pack the content is for: the request runs at that pack's
    ///     priority in a manager (``TransferRequest/priorityURL``), as its origin ranges do.
    ///   - claim: called once the turn came and the peer is live, just before the request is made;
    ///     `false` (the entry went to the origins meanwhile) returns `false` without asking.
    func download(sha256 digest: String, size: Int64, from peer: URL, of peers: PeerSet, into sink: any PeerSink,
                  traffic: Locked<PackTraffic>, following packURL: URL, claim: () -> Bool = { true }) async throws(ResourceError) -> Bool {
        var request = peers.request(peer: peer, sha256: digest, size: size, priority: priority, following: packURL)
        request.failedAfterReceiving = { bytes in
            peers.addReceived(bytes, from: peer)
            traffic.withLock { $0.addPeer(bytes, from: peer) }
        }
        do {
            try await peerRequestGate?.acquire(peer)
        } catch {
            throw ResourceError(.cancelled, "The install was cancelled.")
        }
        defer { peerRequestGate?.release(peer) }
        guard peers.isLive(peer), claim() else { return false }
        do throws(ResourceError) {
            let result = try await transport.download(request, into: sink)
            peers.addReceived(result.receivedBytes, from: peer)
            traffic.withLock { $0.addPeer(result.receivedBytes, from: peer) }
            return true
        } catch {
            if sink.localFailure == nil, error.code != .cancelled, error.code != .resourceUnavailable, !error.isPeerBusy {
                peers.markFailed(peer, after: error)
            }
            throw error
        }
    }
}

extension ResourceError {
    /// Whether a peer answered that it is busy (HTTP 503, or 429): a share whose transfer slots are
    /// all taken, by this device or by others (a LAN party installing from one share). The entry
    /// goes to the next peer or the origins, and the peer stays: its slots free up as its bodies
    /// end. Dropping it, as any other failure does, made every device past a share's fourth
    /// transfer install everything else from the CDN.
    var isPeerBusy: Bool {
        guard let status = cause as? HTTPStatusError else { return false }
        return status.status == 503 || status.status == 429
    }
}

/// Where a peer's bytes go: a transfer sink that tells a problem of this machine (the disk) from
/// the peer's.
protocol PeerSink: TransferSink {
    /// The local problem the sink failed with, if any: then the peer is not to blame.
    var localFailure: ResourceError? { get }
}

/// Holds one chunk's bytes from a peer in memory: at most the chunk's size (16 MiB at most, the
/// format's limit), more is refused as it arrives.
final class PeerChunkSink: PeerSink, Sendable {
    private let size: Int64
    private let received: @Sendable (Int64) -> Void
    private let state = Locked(Data())

    init(size: Int64, received: @escaping @Sendable (Int64) -> Void) {
        self.size = size
        self.received = received
    }

    /// The bytes received.
    var bytes: Data { state.withLock { $0 } }

    /// Memory only: every failure is the peer's.
    var localFailure: ResourceError? { nil }

    func begin(_ head: TransferResponseHead) async throws {
        if let total = head.totalBytes, total != size {
            throw ResourceError(.integrity, "The peer announced \(total) bytes for a chunk of \(size); it was refused.")
        }
        guard head.offset == 0 else { throw ResourceError(.integrity, "The peer resumed a chunk at byte \(head.offset).") }
        state.withLock { $0.removeAll(keepingCapacity: true) }
    }

    func write(_ bytes: Data) async throws {
        try state.withLock { data throws(ResourceError) in
            guard Int64(bytes.count) <= size.clampedSubtracting(Int64(data.count)) else {
                throw ResourceError(.integrity, "The peer sent more than the chunk's \(size) bytes; they were refused.")
            }
            data.append(bytes)
        }
        received(Int64(bytes.count))
    }

    func finish() async throws {}

    func fail(_ error: ResourceError) async {
        state.withLock { $0 = Data() }
    }
}

extension PackTraffic {
    mutating func addPeer(_ bytes: Int64, from peer: URL) {
        guard bytes > 0 else { return }
        if let index = peerBytes.firstIndex(where: { $0.peer == peer }) {
            peerBytes[index].bytes = peerBytes[index].bytes.clampedAdding(bytes)
        } else {
            peerBytes.append((peer, bytes))
        }
    }

    /// Bytes received from every peer.
    var peerTotal: Int64 { peerBytes.map(\.bytes).clampedSum() }
}

/// Writes one entry's bytes from a peer into its staging file: the transport checks the size and
/// the digest; a verified entry is made read-only (flushed first when the store writes
/// synchronously), as one from the archive is. A stored entry records where its data starts in the
/// archive before its first byte, so a cut leaves a partial file the origins continue.
final class PeerEntrySink: PeerSink, Sendable {
    private struct State {
        var descriptor: Int32 = -1
        var written: Int64 = 0
        var localFailure: ResourceError?
        var finished = false
    }
    private let path: String
    private let entry: PackEntryExpectation
    private let journal: StagingJournal
    private let syncFiles: Bool
    private let received: @Sendable (Int64) -> Void
    private let state = Locked(State())

    init(path: String, entry: PackEntryExpectation, journal: StagingJournal, syncFiles: Bool, received: @escaping @Sendable (Int64) -> Void) {
        self.path = path
        self.entry = entry
        self.journal = journal
        self.syncFiles = syncFiles
        self.received = received
    }

    /// A problem of this machine (the disk), not of the peer.
    var localFailure: ResourceError? { state.withLock { $0.localFailure } }

    /// Bytes left in staging after a failure (a cut stored entry whose data offset the journal has).
    var keptBytes: Int64 { state.withLock { $0.finished ? 0 : $0.written } }

    private var resumable: Bool { entry.method == .stored && entry.predictedDataOffset != nil }

    func begin(_ head: TransferResponseHead) async throws {
        // A peer that announces another size (a huge or endless body) is refused before a byte is kept.
        if let total = head.totalBytes, total != entry.size {
            throw ResourceError(.integrity, "The peer announced \(total) bytes for '\(entry.name)', which has \(entry.size); it was refused.")
        }
        try state.withLock { state throws(ResourceError) in
            if state.descriptor < 0 {
                unlink(path)
                let descriptor = StoreFiles.openFile(path, O_WRONLY | O_CREAT | O_TRUNC)
                guard descriptor >= 0 else {
                    state.localFailure = StoreFailure.posix("create '\(entry.name)' in staging")
                    throw state.localFailure!
                }
                state.descriptor = descriptor
                if resumable, let offset = entry.predictedDataOffset {
                    do throws(ResourceError) { try journal.recordDataOffset(offset, of: entry.name) } catch {
                        state.localFailure = error
                        throw error
                    }
                }
            }
            guard ftruncate(state.descriptor, off_t(head.offset)) == 0, lseek(state.descriptor, off_t(head.offset), SEEK_SET) >= 0 else {
                state.localFailure = StoreFailure.posix("truncate '\(entry.name)' in staging")
                throw state.localFailure!
            }
            state.written = head.offset
        }
    }

    func write(_ bytes: Data) async throws {
        try state.withLock { state throws(ResourceError) in
            let ok = bytes.withUnsafeBytes { buffer -> Bool in
                var done = 0
                while done < buffer.count {
                    let count = posixWrite(state.descriptor, buffer.baseAddress! + done, buffer.count - done)
                    if count < 0, errno == EINTR { continue }
                    guard count > 0 else { return false }
                    done += count
                }
                return true
            }
            guard ok else {
                state.localFailure = StoreFailure.posix("write '\(entry.name)' in staging")
                throw state.localFailure!
            }
            state.written += Int64(bytes.count)
        }
        received(Int64(bytes.count))
    }

    func finish() async throws {
        try state.withLock { state throws(ResourceError) in
            if syncFiles, fsync(state.descriptor) != 0 {
                state.localFailure = StoreFailure.posix("flush '\(entry.name)' in staging")
                throw state.localFailure!
            }
            close(state.descriptor)
            state.descriptor = -1
            state.finished = true
            chmod(path, 0o444)
        }
    }

    func fail(_ error: ResourceError) async {
        state.withLock { state in
            if state.descriptor >= 0 {
                close(state.descriptor)
                state.descriptor = -1
            }
            // Wrong bytes, a deflated entry (its file cannot be continued from archive bytes), or
            // nothing: nothing stays. A cut stored entry stays for the origins to continue.
            if error.code == .integrity || !resumable || state.written <= 0 || state.written >= entry.size || state.localFailure != nil {
                unlink(path)
                state.written = 0
            }
        }
    }
}

private func posixWrite(_ descriptor: Int32, _ buffer: UnsafeRawPointer, _ count: Int) -> Int {
#if canImport(Glibc)
    Glibc.write(descriptor, buffer, count)
#else
    Musl.write(descriptor, buffer, count)
#endif
}
