#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat

/// Downloads, verifies and installs packs into a ``ResourceStore``, crash-safely.
///
/// Each pack streams from the transport through the format's verifying reader into `staging/`
/// (inflating and hashing as it arrives, so installing costs about what downloading costs), files
/// that share an entry become hard links, everything is flushed, the folder is renamed into
/// `packs/`, and only then is the row committed. A pack that does not match its manifest is refused
/// with `integrity` (the ``FormatError`` as cause) and leaves nothing behind. Packs present in a
/// bundled catalog directory install from disk.
///
/// ```swift
/// let installer = PackInstaller(store: store, transport: engine)
/// let summary = try await installer.install(try snapshot.packs(forTags: ["level3"]), from: snapshot)
/// ```
public struct PackInstaller: Sendable {
    public let store: ResourceStore
    public let transport: any Transport
    /// A catalog directory shipped with the app; its `packs/<id>.zip` are read instead of downloaded.
    public var bundledCatalog: URL?
    /// How many packs download and unpack at once.
    public var maximumConcurrentInstalls: Int = 2
    /// The transfer priority of the downloads.
    public var priority: TransferPriority = .normal

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
            if installed.contains(pack.id), FileManager.default.fileExists(atPath: store.packURL(id: pack.id).path) {
                summary.alreadyInstalled.append(pack.id)
            } else {
                pending.append(pack)
            }
        }
        let tracker = ProgressTracker(total: pending.reduce(0) { $0 + $1.archiveBytes }, packs: pending.count, report: progress)
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

    private func installOne(_ pack: PackRecord, snapshot: CatalogSnapshot, tracker: ProgressTracker) async throws(ResourceError) -> PackOutcome {
        let lock = try await FileLock.lock(store.lockPath(for: pack.id))
        defer { lock.unlock() }
        let destination = store.packURL(id: pack.id)
        if try store.pack(id: pack.id)?.isInstalled == true, FileManager.default.fileExists(atPath: destination.path) {
            tracker.finished(pack)
            return PackOutcome(id: pack.id, kind: .alreadyInstalled)
        }
        // A folder without a committed row is what a crash between rename and commit leaves.
        ResourceStore.removeTree(destination)

        let bundled = bundledCatalog.map { $0.appending(path: pack.archivePath) }
            .flatMap { FileManager.default.fileExists(atPath: $0.path) ? $0 : nil }
        let source = bundled ?? snapshot.packURL(id: pack.id)
        let rawURL = store.stagingURL.appending(path: "\(pack.id).zip")
        let entries = snapshot.lookup.expectedEntries(inPack: pack.id)
        let sink = PackInstallSink(
            pack: pack, entries: entries, source: source,
            extraction: store.stagingURL.appending(path: "\(pack.id).d", directoryHint: .isDirectory),
            raw: source.isFileURL ? nil : rawURL, syncFiles: store.synchronousWrites,
            progress: { tracker.received($0, of: pack) })
        var request = TransferRequest(url: source, priority: priority)
        request.expectedSize = pack.archiveBytes
        let result: TransferResult
        do {
            result = try await transport.download(request, into: sink)
        } catch {
            sink.discard(keepingRaw: error.code != .integrity)
            throw sink.formatFailure ?? error
        }
        guard sink.isVerified else {
            sink.discard(keepingRaw: false)
            throw ResourceError(.integrity, "Pack \(pack.id.prefix(12)) was not verified completely; it was refused.", url: source)
        }
        do throws(ResourceError) {
            try linkSharedFiles(of: pack, in: snapshot.lookup, at: sink.extraction)
            CrashPoint.unpack.reached()
            if store.synchronousWrites { try syncDirectories(below: sink.extraction) }
            guard rename(sink.extraction.path, destination.path) == 0 else {
                throw StoreFailure.posix("move pack \(pack.id.prefix(12)) into packs/")
            }
            if store.synchronousWrites { try syncDirectory(store.packsURL.path) }
        } catch {
            sink.discard(keepingRaw: true)
            throw error
        }
        CrashPoint.afterRename.reached()
        do {
            try store.recordInstall(pack, entries: entries, reason: bundled != nil ? "bundled" : "downloaded")
        } catch {
            ResourceStore.removeTree(destination)
            throw error
        }
        sink.discard(keepingRaw: false)
        tracker.finished(pack)
        return PackOutcome(id: pack.id, kind: bundled != nil ? .fromBundle : .downloaded,
                           downloaded: bundled != nil ? 0 : result.bytes - result.resumedBytes, resumed: result.resumedBytes)
    }

    /// Hard-links every path whose content is another path's entry, so games find every file by its own path.
    private func linkSharedFiles(of pack: PackRecord, in lookup: ManifestIndex, at folder: URL) throws(ResourceError) {
        for file in lookup.files(inPack: pack.id) where file.path != file.entry {
            let target = folder.appending(path: file.path)
            do {
                try FileManager.default.createDirectory(at: target.deletingLastPathComponent(), withIntermediateDirectories: true)
            } catch {
                throw ResourceError(.storageFailure, "Could not create the folder of '\(file.path)' in staging.",
                                    cause: StoreFailure(description: "\(error)"))
            }
            if link(folder.appending(path: file.entry).path, target.path) != 0, errno != EEXIST {
                throw StoreFailure.posix("link '\(file.path)' to '\(file.entry)'")
            }
        }
    }

    /// Flushes the folder entries (names) of `root` and its subfolders; the files were flushed when written.
    private func syncDirectories(below root: URL) throws(ResourceError) {
        var folders = [root.path]
        if let walker = FileManager.default.enumerator(atPath: root.path) {
            while let relative = walker.nextObject() as? String {
                if (walker.fileAttributes?[.type] as? FileAttributeType) == .typeDirectory { folders.append(root.path + "/" + relative) }
            }
        }
        for folder in folders { try syncDirectory(folder) }
    }

    private func syncDirectory(_ path: String) throws(ResourceError) {
        let descriptor = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
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

    func add(to summary: inout InstallSummary) {
        switch kind {
        case .downloaded: summary.installed.append(id)
        case .fromBundle: summary.installed.append(id); summary.fromBundle.append(id)
        case .alreadyInstalled: summary.alreadyInstalled.append(id)
        }
        summary.downloadedBytes += downloaded
        summary.resumedBytes += resumed
    }
}

/// Sums the progress of packs installing at once and reports it, at most every 64 KiB of change.
private final class ProgressTracker: Sendable {
    private struct State {
        var received: [String: Int64] = [:]
        var completedPacks = 0
        var lastReported: Int64 = -1
    }
    private let total: Int64
    private let packs: Int
    private let callback: @Sendable (InstallProgress) -> Void
    private let state = Locked(State())

    init(total: Int64, packs: Int, report: @escaping @Sendable (InstallProgress) -> Void) {
        self.total = total
        self.packs = packs
        callback = report
    }

    func received(_ bytes: Int64, of pack: PackRecord) {
        update { $0.received[pack.id] = bytes }
    }

    func finished(_ pack: PackRecord) {
        update {
            $0.received[pack.id] = pack.archiveBytes
            $0.completedPacks += 1
            $0.lastReported = -1
        }
    }

    func report() { update { _ in } }

    private func update(_ change: (inout State) -> Void) {
        let snapshot: InstallProgress? = state.withLock { state in
            change(&state)
            let completed = min(total, state.received.values.reduce(0, +))
            guard state.lastReported < 0 || completed - state.lastReported >= 1 << 16 || completed == total else { return nil }
            state.lastReported = completed
            return InstallProgress(completedBytes: completed, totalBytes: total, completedPacks: state.completedPacks, totalPacks: packs)
        }
        if let snapshot { callback(snapshot) }
    }
}
