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

/// The archive bytes of deflated entries while they download, kept in
/// `staging/<id>.d/.odr-parts/<header offset>` so that a later attempt can continue an entry cut in
/// the middle: an inflate stream cannot be resumed from its output, but it can be run again over
/// the kept input (`PackFetchPlan.Fetch.heldPrefix` (ODRFormat)), which is then checked with the
/// rest of the entry (local header, CRC, SHA-256) as if it had just arrived.
///
/// A part holds the bytes from the entry's local header on, contiguous; it is written before the
/// bytes are unpacked, so a process killed at any point keeps every byte it received. It is removed
/// when its entry is verified, when its bytes turn out wrong, and with the pack's staging folder; the
/// folder goes before the pack moves into `packs/`. File names come from manifest numbers, never from
/// the archive or the journal.
package struct CutEntryParts: Sendable {
    static let folderName = ".odr-parts"
    /// `staging/<id>.d/.odr-parts`.
    let folder: URL

    /// Parts for a pack assembled in `stagingFolder`; `nil` when one of the pack's paths would live
    /// in the parts folder (such a pack restarts cut deflated entries from their header).
    init?(stagingFolder: URL, paths: some Sequence<String>) {
        let prefix = Self.folderName + "/"
        guard !paths.contains(where: { $0 == Self.folderName || $0.hasPrefix(prefix) }) else { return nil }
        folder = stagingFolder.appending(path: Self.folderName, directoryHint: .isDirectory)
    }

    func path(of entry: PackEntryExpectation) -> String { folder.path + "/\(entry.headerOffset)" }

    /// The bytes the part of `entry` holds, or `nil` without a usable one (missing, empty, not a
    /// regular file).
    func heldBytes(of entry: PackEntryExpectation) -> Int64? {
        var info = stat()
        guard entry.method != .stored, lstat(path(of: entry), &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size > 0 else {
            return nil
        }
        return Int64(info.st_size)
    }

    /// Removes every part (the pack is complete, or its staging is discarded).
    func removeAll() { ResourceStore.removeTree(folder) }
}

/// Writes the parts of one fetch's deflated targets as their bytes arrive (see ``CutEntryParts``).
///
/// Keeping parts is best effort: a part that cannot be written is removed and its entry, if cut,
/// starts over next time; the download itself goes on. Used by one ``EntryRangeSink``, one call at a
/// time.
final class CutEntryPartWriter {
    private struct Part {
        var entry: PackEntryExpectation
        /// The span the part may hold: from the local header to the next entry's header (or the end).
        var end: Int64
        /// Bytes held when the fetch began (its held prefix), kept on a restart.
        var initial: Int64
        var held: Int64
        var descriptor: Int32 = -1
        var isDone = false
    }

    private let parts: CutEntryParts
    private var table: [Part]

    /// Parts for `targets` of a fetch whose range ends at `rangeEnd`; the first target holds
    /// `heldPrefix` bytes already.
    init(parts: CutEntryParts, targets: [PackRangeReader.Target], rangeEnd: Int64, heldPrefix: Int64) {
        self.parts = parts
        let deflated = targets.map(\.entry).filter { $0.method != .stored }.sorted { $0.headerOffset < $1.headerOffset }
        let starts = targets.map(\.entry.headerOffset).sorted()
        table = deflated.map { entry in
            let end = starts.first { $0 > entry.headerOffset } ?? rangeEnd
            let initial = entry.headerOffset == targets.first?.entry.headerOffset ? heldPrefix : 0
            return Part(entry: entry, end: max(entry.headerOffset, end), initial: initial, held: initial)
        }
    }

    /// Keeps the part of `bytes` (archive bytes from `offset`) that continues a deflated target's part.
    func append(_ bytes: Data, at offset: Int64) {
        let (chunkEnd, overflow) = offset.addingReportingOverflow(Int64(bytes.count))
        guard !overflow else { return }
        for index in table.indices where !table[index].isDone {
            let position = table[index].entry.headerOffset + table[index].held
            guard position >= offset, position < chunkEnd, position < table[index].end else { continue }
            let count = Int(min(chunkEnd, table[index].end) - position)
            let start = Int(position - offset)
            if !write(bytes[bytes.startIndex + start ..< bytes.startIndex + start + count], to: index) { drop(index) }
        }
    }

    /// The entry was verified: its part is no longer needed.
    func finished(_ entry: PackEntryExpectation) {
        guard let index = table.firstIndex(where: { $0.entry.headerOffset == entry.headerOffset }) else { return }
        drop(index)
    }

    /// The response starts over: parts go back to what the fetch began with.
    func restart() {
        for index in table.indices where !table[index].isDone {
            closeDescriptor(index)
            if table[index].initial == 0 {
                unlink(parts.path(of: table[index].entry))
            } else {
                truncate(parts.path(of: table[index].entry), off_t(table[index].initial))
            }
            table[index].held = table[index].initial
        }
    }

    /// Closes the files; parts of unfinished entries stay unless `keeping` is false (wrong bytes).
    func close(keeping: Bool) {
        for index in table.indices where !table[index].isDone {
            if keeping { closeDescriptor(index) } else { drop(index) }
        }
    }

    private func write(_ bytes: Data, to index: Int) -> Bool {
        if table[index].descriptor < 0 {
            let path = parts.path(of: table[index].entry)
            if table[index].held == 0 {
                guard (try? StoreFiles.makeFolder(parts.folder.path)) != nil else { return false }
                table[index].descriptor = StoreFiles.openFile(path, O_WRONLY | O_CREAT | O_TRUNC)
            } else {
                table[index].descriptor = open(path, O_WRONLY | O_APPEND | O_NOFOLLOW | O_CLOEXEC)
            }
            guard table[index].descriptor >= 0 else { return false }
        }
        let descriptor = table[index].descriptor
        let written = bytes.withUnsafeBytes { raw -> Bool in
            var offset = 0
            while offset < raw.count {
                let count = Glibc.write(descriptor, raw.baseAddress! + offset, raw.count - offset)
                if count < 0, errno == EINTR { continue }
                guard count > 0 else { return false }
                offset += count
            }
            return true
        }
        if written { table[index].held += Int64(bytes.count) }
        return written
    }

    private func drop(_ index: Int) {
        closeDescriptor(index)
        unlink(parts.path(of: table[index].entry))
        table[index].isDone = true
    }

    private func closeDescriptor(_ index: Int) {
        if table[index].descriptor >= 0 { Glibc.close(table[index].descriptor) }
        table[index].descriptor = -1
    }

    deinit {
        for part in table where part.descriptor >= 0 { Glibc.close(part.descriptor) }
    }
}
