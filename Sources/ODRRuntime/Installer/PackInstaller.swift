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

/// Downloads, verifies and installs packs into a ``ResourceStore``, crash-safely, moving only
/// the bytes the store lacks.
///
/// Installing a pack is a plan over its entries (`PackFetchPlan` (ODRFormat)):
/// - an entry already complete in `staging/` from an earlier attempt is kept;
/// - an entry whose content (SHA-256) an installed pack holds, of any version, is hard-linked from
///   it (copied where linking is not possible) after hashing the link, so nothing travels;
/// - the rest arrive as byte ranges of the archive (neighbours merged, see `RangePolicy` (ODRFormat)), or as
///   one plain GET of the whole archive when that costs less. An entry cut in the middle continues
///   from its last byte on disk (a deflated one from its kept archive bytes, see `CutEntryParts`).
///
/// Every byte that becomes a file streams once from the network into its entry's file in
/// `staging/<id>.d/`: inflated when deflated, hashed against the manifest, its local header checked.
/// Then files that share an entry become hard links, everything is flushed, the folder is renamed
/// into `packs/`, and only then is the row committed. A pack that does not match its manifest is
/// refused with `integrity` (the `FormatError` (ODRFormat) as cause); the next attempt fetches only the entry
/// that failed. Packs present in a bundled catalog directory install from disk.
///
/// ```swift
/// let installer = PackInstaller(store: store, transport: engine)
/// let summary = try await installer.install(try snapshot.packs(forTags: ["level3"]), from: snapshot)
/// print(summary.downloadedBytes, summary.reusedBytes)
/// ```
public struct PackInstaller: Sendable {
    /// The store the packs are installed into.
    public let store: ResourceStore
    /// What downloads pack bytes: a ``TransferEngine`` in an app, a stand-in in tests.
    public let transport: any Transport
    /// A catalog directory shipped with the app; its `packs/<id>.zip` are read instead of downloaded.
    public var bundledCatalog: URL?
    /// How many packs download and unpack at once.
    public var maximumConcurrentInstalls: Int = 2
    /// How many range requests of one pack run at once.
    public var maximumConcurrentRanges: Int = 4
    /// The transfer priority of the downloads.
    public var priority: TransferPriority = .normal
    /// When ranges are used and how they merge.
    public var rangePolicy = RangePolicy()
    /// Whether files the store already holds are reused for entries with the same content.
    public var reusesInstalledFiles = true
    /// Whether a reused file is hashed before it counts (on by default). Off, the store's own
    /// invariants stand guard (read-only files, repair, `odr verify`), and a file changed behind the
    /// store's back would spread into the new pack.
    public var verifiesReusedFiles = true
    /// The origins that serve the catalog, when there are several (see ``OriginSet``): each request
    /// starts at the first origin not avoided and fails over to the others, continuing where it
    /// stopped; bytes that fail verification make the installer fetch the refused entries again
    /// from the next origin. `nil` (the default) downloads from the snapshot's URL only.
    public var origins: OriginSet?
    /// Other devices' stores on the local network to ask first for each entry (see ``PeerSet``);
    /// `nil` (the default) asks none. A peer that fails or lies is dropped for the rest of the
    /// install; every byte from a peer is verified against the manifest's digest.
    public var peers: PeerSet?
    /// How many entries are asked of peers at once.
    public var maximumConcurrentPeerRequests: Int = 4
    /// Limits the requests to each peer over several installers at once (a manager's, which
    /// installs several packs at once); `nil` (the default): only ``maximumConcurrentPeerRequests``.
    public var peerRequestGate: PeerRequestGate?
    /// Called with the pack's id each time one of its downloads moves to another origin (the
    /// manager turns it into ``ResourceManagerEvent/originSwitched(from:to:reason:)`` and a log line).
    public var originSwitched: (@Sendable (String, TransferOriginSwitch) -> Void)?

    /// Creates an installer into `store` that downloads with `transport` what `bundledCatalog` lacks.
    public init(store: ResourceStore, transport: any Transport, bundledCatalog: URL? = nil) {
        self.store = store
        self.transport = transport
        self.bundledCatalog = bundledCatalog
    }

    /// Installs every pack of `packs` that is not installed yet.
    ///
    /// Safe to run from several processes on one store: each pack is installed under its own file
    /// lock, and a process that finds a pack installed by another one skips it.
    ///
    /// - Throws: ``ResourceError``: transfer errors, `integrity` for a pack that does not match the
    ///   manifest, `storage-failure` or `out-of-space` for local problems. Packs installed before
    ///   the failure stay installed.
    public func install(
        _ packs: [PackRecord], from snapshot: CatalogSnapshot,
        progress: @escaping @Sendable (InstallProgress) -> Void = { _ in }
    ) async throws(ResourceError) -> InstallSummary {
        let installed = try store.installedPackIDs()
        var summary = InstallSummary()
        var pending: [PackRecord] = []
        for pack in packs {
            if installed.contains(pack.id), FileManager.default.fileExists(atPath: store.packURL(id: pack.id).path),
               try store.isInstalled(pack.id, asIn: snapshot) {
                summary.alreadyInstalled.append(pack.id)
            } else {
                pending.append(pack)
            }
        }
        if !pending.isEmpty { try snapshot.requireUnexpired() }
        let tracker = ProgressTracker(planned: try downloadBytes(of: pending, in: snapshot), report: progress)
        tracker.report()
        do {
            try await withThrowingTaskGroup(of: PackOutcome.self) { group in
                var queue = pending[...]
                func startNext() {
                    guard let pack = queue.popFirst() else { return }
                    group.addTask { try await installOne(pack, snapshot: snapshot, tracker: tracker) }
                }
                for _ in 0..<max(1, maximumConcurrentInstalls) { startNext() }
                while let outcome = try await group.next() {
                    outcome.add(to: &summary)
                    startNext()
                }
            }
        } catch {
            throw ResourceError.installing("(several)", url: snapshot.catalogURL, error)
        }
        return summary
    }

    /// The bytes installing `pack` adds to the disk, in blocks as `du` counts them: its files less
    /// those the store holds already, which become hard links to them, each rounded up to whole
    /// blocks, and its folders (0 for an installed pack). What the cache budget and the free-space
    /// check reserve for an install, so that an update of one file of a large pack does not need
    /// room for a second copy of it.
    ///
    /// Without the pack's file records, the estimate is its installed size and half a block per entry.
    public func newDiskBytes(of pack: PackRecord, in snapshot: CatalogSnapshot) throws(ResourceError) -> Int64 {
        if try store.pack(id: pack.id)?.isInstalled == true { return 0 }
        let block = store.blockSize()
        let entries = snapshot.lookup.expectedEntries(inPack: pack.id)
        guard !entries.isEmpty else {
            let (slack, overflow) = Int64(max(pack.entryCount, 0)).multipliedReportingOverflow(by: block / 2)
            return [pack.installedBytes, overflow ? .max : slack].clampedSum()
        }
        let held = reusesInstalledFiles ? try store.installedFiles(withSHA256: entries.map(\.sha256), excluding: pack.id) : [:]
        // Entries of one content are one file (the installer links them), as are those held already.
        var seen: Set<String> = []
        let new = entries.lazy.filter { held[$0.sha256] == nil && seen.insert($0.sha256).inserted }.map(\.size)
        return DiskBlocks.bytes(ofFileSizes: Array(new),
                                folders: DiskBlocks.folderCount(ofEntryNames: entries.lazy.map(\.name)), blockSize: block)
    }

    /// The archive bytes installing each pack would download now: nothing for an installed pack,
    /// and nothing for entries kept in staging or held by installed files.
    ///
    /// The figures are the plans' (ranges included, with what merging adds), computed without
    /// hashing anything: a reused file that turns out to be damaged, or a server that ignores
    /// ranges, makes the real download larger.
    ///
    /// - Returns: bytes by pack id.
    public func downloadBytes(of packs: [PackRecord], in snapshot: CatalogSnapshot) throws(ResourceError) -> [String: Int64] {
        let installed = try store.installedPackIDs()
        var result: [String: Int64] = [:]
        var pending: [(pack: PackRecord, entries: [PackEntryExpectation], staged: StagedEntries, journal: StagingJournal)] = []
        for pack in packs where result[pack.id] == nil {
            guard !installed.contains(pack.id) else {
                result[pack.id] = 0
                continue
            }
            let entries = snapshot.lookup.expectedEntries(inPack: pack.id)
            let journal = StagingJournal(url: journalURL(of: pack))
            let staged = StagedEntries.look(in: stagingFolder(of: pack), entries: entries, journal: journal,
                                            parts: parts(of: pack, in: snapshot.lookup), hashing: false)
            pending.append((pack, entries, staged, journal))
            result[pack.id] = pack.archiveBytes
        }
        let reusable = reusesInstalledFiles
            ? Set(try store.installedFiles(withSHA256: pending.flatMap { item in
                item.entries.lazy.filter { !item.staged.complete.contains($0.name) }.map(\.sha256) }).keys)
            : []
        for item in pending {
            let source = source(of: item.pack, in: snapshot).url
            let policy = policy(for: source)
            // Chunked entries the store holds chunks of count only their missing chunks' ranges.
            let missing = item.entries.filter { !item.staged.complete.contains($0.name) && !reusable.contains($0.sha256) }
            let chunked = try chunkedEntries(missing, tables: chunkTables(of: item.pack, in: snapshot.lookup), of: item.pack,
                                             journal: item.journal, policy: policy, source: source, opening: false)
            // Packs not installed have no files among these, so none is offered its own.
            let plan = PackFetchPlan.make(
                entries: item.entries, archiveBytes: item.pack.archiveBytes, complete: item.staged.complete.union(chunked.map(\.plan.entry.name)),
                partial: item.staged.partial, heldPrefixes: item.staged.heldPrefixes, held: reusable, policy: policy)
            result[item.pack.id] = chunked.reduce(plan.fetchBytes) { $0.clampedAdding($1.plan.fetchBytes) }
        }
        return result
    }

    private func installOne(_ pack: PackRecord, snapshot: CatalogSnapshot, tracker: ProgressTracker) async throws(ResourceError) -> PackOutcome {
        let lock = try await FileLock.lock(store.lockPath(for: pack.id))
        defer { lock.unlock() }
        let destination = try store.packFolder(id: pack.id)
        if try store.pack(id: pack.id)?.isInstalled == true, FileManager.default.fileExists(atPath: destination.path) {
            if try store.isInstalled(pack.id, asIn: snapshot) {
                tracker.finished(pack)
                return PackOutcome(id: pack.id, kind: .alreadyInstalled)
            }
            // Installed with other contents than this version lists for the id (a catalog that
            // reuses a pack id for other files): those bytes must not serve this version. Removed
            // as a purge would, unless a request holds them.
            guard try store.removeInstalledPackLocked(id: pack.id, event: .repair, reason: "installed with other contents than version \(snapshot.version) lists") != nil else {
                throw ResourceError(.integrity, "Pack \(pack.id.prefix(12)) is installed with other contents than version \(snapshot.version) lists, and a request holds it, so it cannot be installed again now. End the requests of the older version, then fetch again.",
                                    url: snapshot.catalogURL)
            }
        }
        // A folder without a committed row is what a crash between rename and commit leaves.
        ResourceStore.removeTree(destination)

        let (source, isBundled) = source(of: pack, in: snapshot)
        let folder = stagingFolder(of: pack)
        let journal = StagingJournal(url: journalURL(of: pack))
        let entries = snapshot.lookup.expectedEntries(inPack: pack.id)
        var outcome = PackOutcome(id: pack.id, kind: isBundled ? .fromBundle : .downloaded)
        let parts = parts(of: pack, in: snapshot.lookup)
        let chunkTables = chunkTables(of: pack, in: snapshot.lookup)
        do {
            try await assemble(pack, entries: entries, chunkTables: chunkTables, from: source, into: folder, journal: journal, parts: parts,
                               policy: policy(for: source), tracker: tracker, outcome: &outcome)
        } catch {
            // A full disk leaves nothing. Otherwise (network, cancel, a refused entry) verified
            // entries stay for the next attempt, which fetches only the rest; with none, nothing stays.
            let staged = StagedEntries.look(in: folder, entries: entries, journal: journal, parts: parts, hashing: false)
            if error.code == .outOfSpace
                || staged.complete.isEmpty && staged.partial.isEmpty && staged.heldPrefixes.isEmpty && !holdsChunkedWork(of: pack) {
                discardStaging(of: pack)
            }
            throw error
        }
        if isBundled { outcome.downloaded = 0 }
        outcome.report = InstallSummary.PackReport(
            id: pack.id, archiveBytes: pack.archiveBytes, downloadedBytes: outcome.downloaded, entries: entries.count,
            fetchedEntries: outcome.fetchedFiles, reusedEntries: outcome.reusedFiles)
        // Every entry is verified: kept archive bytes have no use left, and must not move into packs/.
        parts?.removeAll()
        discardChunkedWork(of: pack)
        do throws(ResourceError) {
            try linkSharedFiles(of: pack, in: snapshot.lookup, at: folder)
            CrashPoint.unpack.reached()
            if store.synchronousWrites { try syncDirectories(below: folder) }
            guard rename(folder.path, destination.path) == 0 else {
                throw StoreFailure.posix("move pack \(pack.id.prefix(12)) into packs/")
            }
            if store.synchronousWrites { try syncDirectory(store.packsURL.path) }
        } catch {
            if error.code == .outOfSpace { discardStaging(of: pack) }
            throw error
        }
        journal.reset()
        CrashPoint.afterRename.reached()
        do {
            // The log says what moved and which origins served it (`odr log`): the pack's size is
            // the line's byte figure, which is not what travelled.
            let origins = (outcome.servedBy.isEmpty ? [snapshot.catalogURL] : outcome.servedBy).map(\.absoluteString).joined(separator: ", ")
            let tags = snapshot.lookup.pack(id: pack.id)?.tags ?? []
            let tagsText = tags.isEmpty ? "" : "tags \(tags.joined(separator: ", ")): "
            let peerTotal = outcome.peerBytes.map(\.bytes).clampedSum()
            let peerList = outcome.peerBytes.map { "\($0.peer.absoluteString) \($0.bytes)" }.joined(separator: ", ")
            let peersText = outcome.peerBytes.isEmpty ? "" : "; \(peerTotal) bytes from peers (\(peerList))"
            let reason = isBundled ? tagsText + "bundled"
                : "\(tagsText)\(outcome.downloaded) bytes received, \(outcome.reused) reused from the store, \(outcome.resumed) resumed; downloaded from \(origins)\(peersText)"
            try store.recordInstall(pack, entries: entries, chunks: chunkTables, reason: reason)
        } catch {
            ResourceStore.removeTree(destination)
            throw error
        }
        tracker.finished(pack)
        return outcome
    }

    /// Fills `folder` with every entry of the pack, verified: kept, reused, then fetched.
    private func assemble(
        _ pack: PackRecord, entries: [PackEntryExpectation], chunkTables: [String: [FileChunk]], from source: URL, into folder: URL,
        journal: StagingJournal, parts: CutEntryParts?, policy initialPolicy: RangePolicy, tracker: ProgressTracker, outcome: inout PackOutcome
    ) async throws(ResourceError) {
        var policy = initialPolicy
        // Refused bytes send the next attempt to another origin, once per other origin.
        var integrityFailovers = 0
        // What travelled in every round: a round that fails still moved bytes.
        let traffic = Locked(PackTraffic())
        // Peers first, once per install, for what neither staging nor the store holds.
        var peerRound = PeerRound()
        var peerRetried = false
        if let peers, peers.hasLivePeers, !source.isFileURL {
            let staged = StagedEntries.look(in: folder, entries: entries, journal: journal, parts: parts, hashing: false)
            var missing = entries.filter { !staged.complete.contains($0.name) && staged.partial[$0.name] == nil && staged.heldPrefixes[$0.name] == nil }
            if reusesInstalledFiles {
                let held = try store.installedFiles(withSHA256: missing.map(\.sha256), excluding: pack.id)
                missing = missing.filter { held[$0.sha256] == nil }
            }
            missing = try entriesForPeers(missing, tables: chunkTables, of: pack)
            if !missing.isEmpty {
                tracker.plan(pack, bytes: missing.reduce(Int64(0)) { $0.clampedAdding($1.size) }, held: 0)
                // What no peer was asked when the round is hedged (no peer byte within
                // `PeerSet.hedgeSeconds`) goes to the origins at once, every other entry counted
                // as complete so that no range writes an entry a peer may be writing.
                let names = Set(entries.map(\.name))
                let hedgePolicy = policy
                peerRound = try await fetchFromPeers(missing, of: pack, from: source, peers: peers, into: folder, journal: journal, traffic: traffic,
                                                     received: { tracker.received($0, of: pack, fromPeer: true) }) { handed throws(ResourceError) in
                    let plan = PackFetchPlan.make(entries: entries, archiveBytes: pack.archiveBytes,
                                                  complete: names.subtracting(handed.map(\.name)), policy: hedgePolicy)
                    try await fetch(plan.fetches, of: pack, entries: entries, from: source, into: folder,
                                    journal: journal, parts: parts, tracker: tracker, traffic: traffic)
                    return plan.fetches.count
                }
            }
        }
        while true {
            // A folder made just now is empty: a fresh install has no entry to look for or remove.
            let fresh = try StoreFiles.makeFolder(folder.path)
            let staged = fresh ? StagedEntries() : StagedEntries.look(in: folder, entries: entries, journal: journal, parts: parts,
                                                                      hashing: true, flush: store.synchronousWrites)
            var complete = staged.complete
            outcome.reusedFiles = 0
            outcome.reused = 0
            if reusesInstalledFiles {
                let missing = entries.filter { !complete.contains($0.name) }
                let sources = try store.installedFiles(withSHA256: missing.map(\.sha256), excluding: pack.id)
                for entry in missing {
                    guard let file = sources[entry.sha256], try reuse(file, as: entry, in: folder) else { continue }
                    complete.insert(entry.name)
                    outcome.reusedFiles += 1
                    outcome.reused += entry.storedSize
                }
            }
            // Chunked entries of which the store holds chunks are assembled from those and ranges.
            let chunked = try chunkedEntries(entries.filter { !complete.contains($0.name) }, tables: chunkTables, of: pack,
                                             journal: journal, policy: policy, source: source, opening: true)
            let plan = PackFetchPlan.make(entries: entries, archiveBytes: pack.archiveBytes, complete: complete.union(chunked.map(\.plan.entry.name)),
                                        partial: staged.partial, heldPrefixes: staged.heldPrefixes, policy: policy)
            // Partial entries count only when the plan continues them (their journal line fit).
            // Entries the peers delivered are staged complete: they count as received from peers, not resumed.
            let fromPeers = entries.filter { peerRound.complete.contains($0.name) && staged.complete.contains($0.name) }
                .reduce(Int64(0)) { $0.clampedAdding($1.storedSize) }
            // So are the entries the origins fetched during a hedged peer round: received, not resumed.
            let hedged = entries.filter { peerRound.handedToOrigins.contains($0.name) && staged.complete.contains($0.name) }
            let fromHedge = hedged.reduce(Int64(0)) { $0.clampedAdding($1.storedSize) }
            outcome.resumed = chunked.reduce(staged.completeBytes.clampedSubtracting(fromPeers).clampedSubtracting(fromHedge) + plan.resumedBytes) {
                $0.clampedAdding($1.plan.resumedBytes)
            }
            outcome.reused = chunked.reduce(outcome.reused) { $0.clampedAdding($1.plan.heldBytes) }
            let chunkBytes = chunked.reduce(Int64(0)) { $0.clampedAdding($1.plan.fetchBytes) }
            tracker.plan(pack, bytes: plan.fetchBytes.clampedAdding(chunkBytes),
                         held: outcome.resumed.clampedAdding(outcome.reused).clampedAdding(fromPeers).clampedAdding(fromHedge))
            // Whatever a fetch writes afresh must not meet a stale partial file (a fresh folder has none).
            for fetch in fresh ? [] : plan.fetches {
                for target in fetch.targets where target.resume == nil {
                    unlink(folder.appending(path: target.entry.name).path)
                }
            }
            do {
                try await fetch(plan.fetches, of: pack, entries: entries, from: source, into: folder,
                                journal: journal, parts: parts, tracker: tracker, traffic: traffic)
                outcome.requests = plan.fetches.count + peerRound.hedgeRequests
                for item in chunked {
                    outcome.requests += try await assembleChunked(item, of: pack, from: source, into: folder, journal: journal, traffic: traffic,
                                                                  received: { tracker.received($0, of: pack) },
                                                                  receivedFromPeer: { tracker.received($0, of: pack, fromPeer: true) },
                                                                  stalled: { tracker.stalled($0, of: pack) })
                }
                let moved = traffic.withLock { $0 }
                outcome.downloaded = moved.receivedBytes
                outcome.resumed = outcome.resumed.clampedAdding(moved.continuedBytes)
                outcome.servedBy = moved.origins
                outcome.peerBytes = moved.peerBytes
                outcome.fetchedFiles = plan.fetchedEntries + chunked.count + peerRound.complete.count + hedged.count
                return
            } catch where error.code == .integrity && !peerRound.partial.isEmpty && !peerRetried {
                // A peer's cut entry was continued from an origin and the whole failed its digest:
                // the peer's prefix may have been wrong. Every entry a peer cut that is not
                // verified yet leaves staging; one more round fetches them from the origins.
                peerRetried = true
                for entry in entries where peerRound.partial.contains(entry.name) {
                    let path = folder.appending(path: entry.name).path
                    var info = stat()
                    if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_mode & 0o222 == 0, Int64(info.st_size) == entry.size {
                        continue
                    }
                    unlink(path)
                }
                peerRound.partial = []
            } catch where error.code == .integrity && !source.isFileURL && integrityFailovers + 1 < (origins?.origins.count ?? 0) {
                // The fetch marked the origin that served the refused bytes as failed: the next
                // round asks another one, for what is not verified yet.
                integrityFailovers += 1
                if plan.fetches.contains(where: \.isWholeArchive) && Self.condemnsArchive(error) { discardStaging(of: pack) }
            } catch where error.code == .integrity && plan.fetches.contains(where: \.isWholeArchive) && Self.condemnsArchive(error) {
                // The archive as a whole is not what the manifest describes (its central directory
                // lists a link, or entries the manifest lacks): nothing taken from it is kept. A
                // single damaged entry condemns only itself, as with ranges.
                discardStaging(of: pack)
                throw error
            } catch where error.code == .rangeNotSupported && policy.usesRanges {
                // The server ignores ranges, or the archive changed since the staged bytes came
                // (If-Range): start this pack over with one plain GET, keeping nothing staged.
                discardStaging(of: pack)
                journal.reset()
                policy.usesRanges = false
            }
        }
    }

    /// Whether an integrity failure is about the archive's structure rather than one entry's bytes.
    private static func condemnsArchive(_ error: ResourceError) -> Bool {
        guard let format = error.cause as? FormatError else { return true }
        return [.malformedArchive, .unsupportedEntryType, .duplicateEntry, .unexpectedEntry, .unsupportedFeature].contains(format.code)
    }

    /// Runs the plan's requests, a few at a time; what they move goes to `traffic`.
    private func fetch(
        _ fetches: [PackFetchPlan.Fetch], of pack: PackRecord, entries: [PackEntryExpectation], from source: URL, into folder: URL,
        journal: StagingJournal, parts: CutEntryParts?, tracker: ProgressTracker, traffic: Locked<PackTraffic>
    ) async throws(ResourceError) {
        guard !fetches.isEmpty else { return }
        let syncFiles = store.synchronousWrites
        let one: @Sendable (PackFetchPlan.Fetch) async throws(ResourceError) -> Void = { fetch throws(ResourceError) in
            let sink = EntryRangeSink(packID: pack.id, fetch: fetch, allEntries: entries, folder: folder, journal: journal,
                                      parts: parts, syncFiles: syncFiles, source: source, received: { tracker.received($0, of: pack) },
                                      stalled: { tracker.stalled($0, of: pack) })
            let request = rangeRequest(for: pack, source: source, range: fetch.isWholeArchive ? nil : fetch.range, journal: journal)
            do throws(ResourceError) {
                _ = try await downloadFromOrigins(request, of: pack, into: sink, traffic: traffic) { _ throws(ResourceError) in
                    guard sink.isVerified else {
                        throw ResourceError(.integrity, "Pack \(pack.id.prefix(12)) was not verified completely; it was refused.", url: source)
                    }
                }
            } catch {
                sink.close(keepingCurrentEntry: error.code != .integrity)
                throw sink.formatFailure ?? error
            }
        }
        do {
            try await withThrowingTaskGroup(of: Void.self) { group in
                var queue = fetches[...]
                for _ in 0..<max(1, maximumConcurrentRanges) {
                    guard let next = queue.popFirst() else { break }
                    group.addTask { try await one(next) }
                }
                while try await group.next() != nil {
                    if let next = queue.popFirst() { group.addTask { try await one(next) } }
                }
            }
        } catch {
            throw ResourceError.installing(pack.id, url: source, error)
        }
    }

    /// Places installed `file` in `folder` as `entry` (a hard link, or a copy across file systems)
    /// and checks it; `false` (and nothing left behind) when it is not the entry's content.
    private func reuse(_ file: URL, as entry: PackEntryExpectation, in folder: URL) throws(ResourceError) -> Bool {
        let target = folder.appending(path: entry.name)
        try StoreFiles.makeFolders(above: entry.name, below: folder.path)
        unlink(target.path)
        if link(file.path, target.path) != 0 {
            // The source pack was purged meanwhile: fetch the entry instead.
            if errno == ENOENT { return false }
            guard errno == EXDEV || errno == EPERM || errno == EMLINK else { throw StoreFailure.posix("link '\(entry.name)' from an installed pack") }
            do {
                try FileManager.default.copyItem(at: file, to: target)
            } catch {
                unlink(target.path)
                if let error = error as? CocoaError, error.code == .fileNoSuchFile || error.code == .fileReadNoSuchFile { return false }
                throw ResourceError(.storageFailure, "Could not copy '\(entry.name)' from an installed pack.", cause: StoreFailure(description: "\(error)"))
            }
            // A copy is new data: flushed like a downloaded entry (a link shares flushed data).
            if store.synchronousWrites { try syncFile(target.path) }
            chmod(target.path, 0o444)
        }
        // The link is ours: a purge of the source pack cannot take it away while it is checked.
        var info = stat()
        guard lstat(target.path, &info) == 0, info.st_mode & S_IFMT == S_IFREG, Int64(info.st_size) == entry.size,
              !verifiesReusedFiles || (try? ContentHash.sha256Hex(ofFileAt: target)) == entry.sha256 else {
            unlink(target.path)
            return false
        }
        return true
    }

    private func source(of pack: PackRecord, in snapshot: CatalogSnapshot) -> (url: URL, isBundled: Bool) {
        if let bundled = bundledCatalog.map({ $0.appending(path: pack.archivePath) }), FileManager.default.fileExists(atPath: bundled.path) {
            return (bundled, true)
        }
        return (snapshot.packURL(id: pack.id), false)
    }

    /// Ranges pay off over a network; a local archive is read whole.
    private func policy(for source: URL) -> RangePolicy {
        var policy = rangePolicy
        if source.isFileURL { policy.usesRanges = false }
        return policy
    }

    private func stagingFolder(of pack: PackRecord) -> URL {
        store.stagingURL.appending(path: "\(pack.id).d", directoryHint: .isDirectory)
    }

    private func journalURL(of pack: PackRecord) -> URL { store.stagingURL.appending(path: "\(pack.id).journal") }

    private func parts(of pack: PackRecord, in lookup: ManifestIndex) -> CutEntryParts? {
        CutEntryParts(stagingFolder: stagingFolder(of: pack), paths: lookup.files(inPack: pack.id).lazy.flatMap { [$0.path, $0.entry] })
    }

    private func discardStaging(of pack: PackRecord) {
        ResourceStore.removeTree(stagingFolder(of: pack))
        ResourceStore.removeTree(journalURL(of: pack))
        discardChunkedWork(of: pack)
    }

    /// Hard-links every path whose content is another path's entry, so games find every file by its own path.
    private func linkSharedFiles(of pack: PackRecord, in lookup: ManifestIndex, at folder: URL) throws(ResourceError) {
        for file in lookup.files(inPack: pack.id) where file.path != file.entry {
            let target = folder.appending(path: file.path)
            try StoreFiles.makeFolders(above: file.path, below: folder.path)
            let entry = folder.appending(path: file.entry)
            guard link(entry.path, target.path) != 0 else { continue }
            guard errno == EEXIST else { throw StoreFailure.posix("link '\(file.path)' to '\(file.entry)'") }
            // Already there: a link made by an earlier attempt (same inode) is fine. Anything else
            // (another entry of the pack, a folder of a path below this one) would be served in
            // place of the entry, so the pack is refused.
            var existing = stat(), original = stat()
            guard lstat(target.path, &existing) == 0, lstat(entry.path, &original) == 0,
                  existing.st_mode & S_IFMT == S_IFREG, existing.st_ino == original.st_ino, existing.st_dev == original.st_dev else {
                throw ResourceError(.invalidCatalog, "Pack \(pack.id.prefix(12)): the path '\(file.path)' (content of entry '\(file.entry)') is already taken by another entry or folder of the pack, so the manifest is inconsistent and the pack cannot be installed. Rebuild the catalog with a current odrpack.")
            }
        }
    }

    /// Flushes the folder entries (names) of `root` and its subfolders; the files were flushed when written.
    private func syncDirectories(below root: URL) throws(ResourceError) {
        var folders = [root.path]
        for relative in (try? FileManager.default.subpathsOfDirectory(atPath: root.path)) ?? [] {
            // lstat: a symbolic link to a folder is not one of the pack's folders.
            var info = stat()
            let path = root.path + "/" + relative
            if lstat(path, &info) == 0, info.st_mode & S_IFMT == S_IFDIR { folders.append(path) }
        }
        for folder in folders { try syncDirectory(folder) }
    }

    private func syncDirectory(_ path: String) throws(ResourceError) {
        try syncFile(path, flags: O_DIRECTORY)
    }

    private func syncFile(_ path: String, flags: Int32 = 0) throws(ResourceError) {
        let descriptor = open(path, O_RDONLY | flags | O_CLOEXEC)
        guard descriptor >= 0 else { throw StoreFailure.posix("open '\(path)'") }
        defer { close(descriptor) }
        guard fsync(descriptor) == 0 else { throw StoreFailure.posix("flush '\(path)'") }
    }
}

/// What happened to one pack of an install.
private struct PackOutcome: Sendable {
    enum Kind { case downloaded, fromBundle, alreadyInstalled }
    var id: String
    var kind: Kind
    var downloaded: Int64 = 0
    var resumed: Int64 = 0
    var reused: Int64 = 0
    var reusedFiles = 0
    var fetchedFiles = 0
    var requests = 0
    var report: InstallSummary.PackReport?
    /// The origins that served bytes, when the catalog has several (in the order they served).
    var servedBy: [URL] = []
    /// Bytes received from each peer (in the order they first sent).
    var peerBytes: [(peer: URL, bytes: Int64)] = []

    func add(to summary: inout InstallSummary) {
        switch kind {
        case .downloaded: summary.installed.append(id)
        case .fromBundle: summary.installed.append(id); summary.fromBundle.append(id)
        case .alreadyInstalled: summary.alreadyInstalled.append(id)
        }
        summary.downloadedBytes += downloaded
        summary.resumedBytes += resumed
        summary.reusedBytes += reused
        summary.reusedFiles += reusedFiles
        summary.fetchedFiles += fetchedFiles
        summary.requests += requests
        for (peer, bytes) in peerBytes {
            summary.peerBytes = summary.peerBytes.clampedAdding(bytes)
            summary.bytesByPeer[peer.absoluteString, default: 0] = summary.bytesByPeer[peer.absoluteString, default: 0].clampedAdding(bytes)
        }
        if let report { summary.packs.append(report) }
    }
}

/// Sums the progress of packs installing at once and reports it as bytes arrive: at least every
/// ``byteStep`` or ``interval`` while they do (a change the interval held back is reported when it is
/// up), and at once when a plan is made, a pack finishes or a transfer stalls. Totals are what the
/// plans download, so a delta update's progress runs to its own size; ``InstallProgress/heldBytes``
/// says what the plans found already there.
private final class ProgressTracker: Sendable {
    /// Report at least this often in bytes while they arrive: a loading bar moves every 16 KiB.
    static let byteStep: Int64 = 16 << 10
    /// ... and in time: a bar moves at least every 100 ms while bytes arrive, however slowly.
    static let interval: Duration = .milliseconds(100)

    private struct State {
        var planned: [String: Int64]
        var held: [String: Int64] = [:]
        var received: [String: Int64] = [:]
        /// Bytes received from peers, over all packs.
        var fromPeers: Int64 = 0
        /// Packs whose transfer waits to try again, with the latest retry.
        var stalls: [String: TransferRetry] = [:]
        var completedPacks = 0
        var last: InstallProgress?
        var lastTime: ContinuousClock.Instant?
        /// A report the interval held back is scheduled.
        var flushScheduled = false
    }
    private let packs: Int
    private let callback: @Sendable (InstallProgress) -> Void
    private let state: Locked<State>
    /// Held while a report is made and delivered, so reports reach the callback in order.
    private let order = Locked(())

    init(planned: [String: Int64], report: @escaping @Sendable (InstallProgress) -> Void) {
        packs = planned.count
        callback = report
        state = Locked(State(planned: planned))
    }

    /// The pack's plan is known: its bytes replace the estimate, and what it holds already is
    /// `held`. A new plan (after a server refused ranges) starts the pack's count over.
    func plan(_ pack: PackRecord, bytes: Int64, held: Int64) {
        update(now: true) { state in
            state.planned[pack.id] = bytes
            state.held[pack.id] = held
            state.received[pack.id] = 0
        }
    }

    func received(_ bytes: Int64, of pack: PackRecord, fromPeer: Bool = false) {
        var crash = false
        update { state in
            if fromPeer { state.fromPeers = state.fromPeers.clampedAdding(bytes) }
            let now = state.received[pack.id, default: 0].clampedAdding(bytes)
            state.received[pack.id] = now
            // The `download` crash point: half of the pack's planned bytes are in.
            let planned = state.planned[pack.id, default: pack.archiveBytes]
            crash = now.clampedAdding(now) >= planned && now >= CrashPoint.downloadMinimumBytes
        }
        if crash { CrashPoint.download.reached() }
    }

    /// A transfer of `pack` failed and waits to try again (`retry`), or got an answer again (`nil`).
    func stalled(_ retry: TransferRetry?, of pack: PackRecord) {
        update(now: true) { $0.stalls[pack.id] = retry }
    }

    func finished(_ pack: PackRecord) {
        update(now: true) {
            $0.received[pack.id] = $0.planned[pack.id, default: 0]
            $0.stalls[pack.id] = nil
            $0.completedPacks += 1
        }
    }

    func report() { update(now: true) { _ in } }

    /// Applies `change` and reports the result if it differs from the last report and is due:
    /// `now`, a step of bytes, the interval passed, or the last byte. Otherwise a report is
    /// scheduled for when the interval is up.
    private func update(now: Bool = false, _ change: (inout State) -> Void) {
        order.withLock { _ in
            let (snapshot, wait) = state.withLock { state -> (InstallProgress?, Duration?) in
                change(&state)
                let total = state.planned.values.clampedSum()
                let retry = state.stalls.values.max { $0.nextAttempt < $1.nextAttempt }
                let next = InstallProgress(completedBytes: min(total, state.received.values.clampedSum()), totalBytes: total,
                                           completedPacks: state.completedPacks, totalPacks: packs,
                                           heldBytes: state.held.values.clampedSum(), retry: retry, fromPeersBytes: state.fromPeers)
                guard next != state.last else { return (nil, nil) }
                let clock = ContinuousClock.now
                let due = state.lastTime.map { $0.advanced(by: Self.interval) } ?? clock
                let stepped = next.completedBytes.clampedSubtracting(state.last?.completedBytes ?? 0) >= Self.byteStep
                guard now || state.last == nil || stepped || clock >= due || next.completedBytes == total else {
                    if state.flushScheduled { return (nil, nil) }
                    state.flushScheduled = true
                    return (nil, clock.duration(to: due))
                }
                state.last = next
                state.lastTime = clock
                return (next, nil)
            }
            if let snapshot { callback(snapshot) }
            if let wait {
                Task { [weak self] in
                    try? await Task.sleep(for: wait)
                    self?.update { $0.flushScheduled = false }
                }
            }
        }
    }
}

/// What `staging/<id>.d/` already holds of a pack's entries from an earlier attempt.
package struct StagedEntries {
    /// Flushes (when asked) and makes read-only a staged file whose content was just checked.
    private static func markVerified(_ path: String, flush: Bool) {
        if flush {
            let descriptor = open(path, O_RDONLY | O_CLOEXEC)
            if descriptor >= 0 {
                fsync(descriptor)
                close(descriptor)
            }
        }
        chmod(path, 0o444)
    }

    /// Entries complete and verified: read-only files of their full size.
    package var complete: Set<String> = []
    /// Stored entries cut in the middle whose data offset the journal knows.
    package var partial: [String: PackRangeReader.Resume] = [:]
    /// Deflated entries cut in the middle whose archive bytes a part holds (``CutEntryParts``), by name.
    package var heldPrefixes: [String: Int64] = [:]
    /// Archive bytes the complete entries hold.
    var completeBytes: Int64 = 0

    /// Looks at the folder; anything else there for an entry (a cut deflated entry, a cut entry the
    /// journal does not place, something that is not a regular file) is removed when `hashing`
    /// (the install itself), and merely not counted otherwise (a size estimate). A cut deflated
    /// entry's kept archive bytes (`parts`) are reported in ``heldPrefixes`` instead.
    package static func look(in folder: URL, entries: [PackEntryExpectation], journal: StagingJournal, parts: CutEntryParts?,
                     hashing: Bool, flush: Bool = false) -> StagedEntries {
        var staged = StagedEntries()
        guard access(folder.path, F_OK) == 0 else { return staged }
        for entry in entries {
            let path = folder.appending(path: entry.name).path
            var info = stat()
            guard lstat(path, &info) == 0 else { continue }
            let size = Int64(info.st_size)
            let isFile = info.st_mode & S_IFMT == S_IFREG
            if isFile, info.st_mode & 0o222 == 0, size == entry.size {
                staged.complete.insert(entry.name)
                staged.completeBytes += entry.storedSize
                continue
            }
            // Full size but not yet read-only: the process stopped between writing the entry's last
            // byte and marking it verified (while flushing it, say). Check it now rather than
            // fetch it again.
            if isFile, size == entry.size, size > 0 {
                if !hashing || (try? StreamingSHA256.ofFile(atPath: path).finalize()) == entry.sha256 {
                    if hashing { Self.markVerified(path, flush: flush) }
                    staged.complete.insert(entry.name)
                    staged.completeBytes += entry.storedSize
                    continue
                }
            }
            if isFile, entry.method == .stored, size > 0, size < entry.size, let offset = journal.dataOffset(of: entry.name) {
                if !hashing {
                    staged.partial[entry.name] = PackRangeReader.Resume(dataOffset: offset, heldBytes: size, heldHash: StreamingSHA256())
                    continue
                }
                // The held bytes are hashed again: the rest of the entry is checked against the
                // manifest's digest together with them, so a damaged prefix fails that check.
                if let hash = try? StreamingSHA256.ofFile(atPath: path, bytes: size) {
                    staged.partial[entry.name] = PackRangeReader.Resume(dataOffset: offset, heldBytes: size, heldHash: hash)
                    continue
                }
            }
            if hashing { ResourceStore.removeTree(URL(filePath: path)) }
        }
        // A deflated entry's file cannot be continued, but its kept archive bytes can be run again.
        if let parts {
            for entry in entries where entry.method != .stored && !staged.complete.contains(entry.name) {
                if let held = parts.heldBytes(of: entry) { staged.heldPrefixes[entry.name] = held }
            }
        }
        return staged
    }
}
