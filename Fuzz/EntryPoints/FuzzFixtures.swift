#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
import ODRFormat
import ODRRuntime

/// Files for the targets whose production entry point reads a file: one private folder per
/// process, a fresh file per call (the replay test may run targets concurrently).
final class ScratchFile: Sendable {
    static let shared = ScratchFile()

    /// The process's folder, created once under the temporary directory and removed at exit by
    /// nobody: it holds at most the files of calls under way.
    let folder: URL

    private init() {
        folder = FileManager.default.temporaryDirectory.appending(path: "odr-fuzz-\(getpid())-\(UUID().uuidString)")
        // Creating a folder in the temporary directory does not fail on a working machine; if it
        // does, every call below fails with an `io` error rather than trapping.
        try? FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
    }

    /// Writes `bytes` to a new file, runs `body` with its URL, then removes it.
    func withFile<T>(holding bytes: UnsafeRawBufferPointer, _ body: (URL) throws -> T) throws -> T {
        var template = Array(folder.appending(path: "input-XXXXXX").path.utf8CString)
        let descriptor = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard descriptor >= 0 else { throw FormatError(.io, "Could not create a scratch file in '\(folder.path)'.") }
        let path = String(decoding: template.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        defer { unlink(path) }
        var written = 0
        while written < bytes.count {
            let count = write(descriptor, bytes.baseAddress! + written, bytes.count - written)
            guard count > 0 else {
                close(descriptor)
                throw FormatError(.io, "Could not write the scratch file '\(path)'.")
            }
            written += count
        }
        close(descriptor)
        return try body(URL(filePath: path))
    }
}

/// The pack the `journal` target plans: four entries, two of them stored and cut in the middle in
/// staging, one deflated and cut (never resumable), one complete. The fuzzed journal says where
/// the cut entries' data starts, which decides what the next fetch asks for.
///
/// ```
/// offset  entry     method   size   stored  staged
/// 0       a.bin     stored   1000   1000    300 bytes
/// 1035    b/c.bin   stored   5000   5000    10 bytes
/// 6072    d.txt     deflate  20000  300     50 bytes
/// 6407    e.bin     stored   100    100     complete (read-only)
/// ```
final class JournalFixture: Sendable {
    static let shared = JournalFixture()

    let entries: [PackEntryExpectation] = [
        .init(name: "a.bin", method: .stored, storedSize: 1000, size: 1000, headerOffset: 0, sha256: digest("a")),
        .init(name: "b/c.bin", method: .stored, storedSize: 5000, size: 5000, headerOffset: 1035, sha256: digest("b")),
        .init(name: "d.txt", method: .deflate, storedSize: 300, size: 20000, headerOffset: 6072, sha256: digest("d")),
        .init(name: "e.bin", method: .stored, storedSize: 100, size: 100, headerOffset: 6407, sha256: digest("e")),
    ]
    /// The last entry's end, then the central directory (4 records and their names) and end record.
    let archiveBytes: Int64 = 6542 + 4 * 46 + 22 + 22
    /// The staging folder, `staging/<id>.d/` of a pack in the store.
    let folder: URL

    private init() {
        folder = ScratchFile.shared.folder.appending(path: "staging.d")
        let staged: [(String, Int, mode_t)] = [("a.bin", 300, 0o644), ("b/c.bin", 10, 0o644), ("d.txt", 50, 0o644), ("e.bin", 100, 0o444)]
        for (name, count, mode) in staged {
            let url = folder.appending(path: name)
            // As for ScratchFile: a failure here leaves the entries missing, which plans a full fetch.
            try? FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try? Data(repeating: 0x61, count: count).write(to: url)
            chmod(url.path, mode)
        }
    }

    /// Reads `journal` as the installer reads `staging/<id>.journal`, plans the pack's fetch from it
    /// and the staged files, and opens a range reader for every request of the plan.
    func plan(journal bytes: UnsafeRawBufferPointer) throws {
        try ScratchFile.shared.withFile(holding: bytes) { url in
            let journal = StagingJournal(url: url)
            let staged = StagedEntries.look(in: folder, entries: entries, journal: journal, parts: nil, hashing: false)
            let plan = PackFetchPlan.make(entries: entries, archiveBytes: archiveBytes, complete: staged.complete,
                                          partial: staged.partial, heldPrefixes: staged.heldPrefixes)
            for fetch in plan.fetches {
                _ = try PackRangeReader(range: fetch.range, targets: fetch.targets, sink: DiscardingRangeSink(),
                                        checkingDirectoryOf: fetch.isWholeArchive ? entries : nil)
            }
            _ = journal.validators
        }
    }

    private static func digest(_ letter: Character) -> String { String(repeating: letter, count: 64) }
}

extension ResponseHeaders {
    /// Takes one line as the transfer's curl header callback does (``TransferSession``).
    mutating func receive(_ bytes: UnsafeRawBufferPointer) {
        take(line: Substring(String(decoding: bytes, as: UTF8.self)))
    }
}
