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

/// What a later attempt needs to continue a pack assembled in `staging/<id>.d/`, beyond the files
/// themselves: where each started entry's data begins in the archive, and the validators (`ETag`,
/// `Last-Modified`) of the archive the bytes came from.
///
/// The file, `staging/<id>.journal`, is a list of lines appended as the install goes:
///
/// ```
/// validators {"entityTag":"\"5f1c-2000000\""}
/// data 4096 Levels/Level3/music.ogg
/// chunks 12 Levels/world.pak
/// ```
///
/// A `chunks` line says that the first so many chunks of a chunked entry being assembled from held
/// and fetched chunks are written and verified (docs/STORE.md, "Chunked files"); the latest line
/// of an entry counts.
///
/// Completed entries need no line: a verified entry is a read-only (0444) file of its full size,
/// flushed before it was made read-only when the store writes synchronously. The journal is never
/// flushed: losing it costs only bytes (a cut entry restarts from its header), never correctness,
/// since a resumed entry's held bytes are hashed again before the rest is appended.
///
/// The file is outside input like any other (a crash mid-line, a damaged disk, someone's editor):
/// each line is parsed into a ``DataLine`` or validators, and a line that does not parse (a negative
/// or non-decimal offset, a name that is not a clean relative path, validators that could not be
/// sent as a header) is ignored, so its entry is fetched again from its header. Offsets are checked
/// against the entry's place in the archive where the plan uses them (`PackFetchPlan` (ODRFormat)).
/// A journal larger than ``maximumBytes`` is ignored whole.
package final class StagingJournal: Sendable {
    let url: URL
    private let state = Locked(State())

    /// Far more than one line per entry of the largest pack needs.
    static let maximumBytes = 32 << 20

    private struct State {
        var dataOffsets: [String: Int64] = [:]
        var chunksDone: [String: Int] = [:]
        var validators = TransferValidators()
    }

    /// One `data <offset> <name>` line: where entry `name`'s data starts in the archive.
    struct DataLine: Equatable {
        var dataOffset: Int64
        var name: String

        /// Parses a line (without its newline); `nil` unless the offset is a non-negative decimal
        /// that fits in 64 bits and the name a clean relative path.
        init?(_ line: Substring) {
            guard line.hasPrefix("data ") else { return nil }
            let fields = line.dropFirst(5).split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard fields.count == 2, !fields[0].isEmpty, fields[0].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let offset = Int64(fields[0]) else { return nil }
            let name = String(fields[1])
            guard RelativePath.isClean(name) else { return nil }
            self.init(dataOffset: offset, name: name)
        }

        init(dataOffset: Int64, name: String) {
            self.dataOffset = dataOffset
            self.name = name
        }
    }

    /// One `chunks <count> <name>` line: the first `count` chunks of entry `name` are written.
    struct ChunksLine: Equatable {
        var count: Int
        var name: String

        /// Parses a line (without its newline); `nil` unless the count is a decimal that fits in
        /// an `Int` and the name a clean relative path.
        init?(_ line: Substring) {
            guard line.hasPrefix("chunks ") else { return nil }
            let fields = line.dropFirst(7).split(separator: " ", maxSplits: 1, omittingEmptySubsequences: false)
            guard fields.count == 2, !fields[0].isEmpty, fields[0].utf8.allSatisfy({ (0x30...0x39).contains($0) }),
                  let count = Int(fields[0]) else { return nil }
            let name = String(fields[1])
            guard RelativePath.isClean(name) else { return nil }
            self.count = count
            self.name = name
        }
    }

    package init(url: URL) {
        self.url = url
        guard let text = Self.readText(url) else { return }
        state.withLock { state in
            for line in text.split(separator: "\n") {
                if let data = DataLine(line) {
                    state.dataOffsets[data.name] = data.dataOffset
                } else if let chunks = ChunksLine(line) {
                    state.chunksDone[chunks.name] = chunks.count
                } else if line.hasPrefix("validators "),
                          let decoded = try? JSONDecoder().decode(TransferValidators.self, from: Data(line.dropFirst(11).utf8)),
                          decoded.isSendable {
                    state.validators = decoded
                }
            }
        }
    }

    /// The journal's text, or `nil` when it is missing, not a regular file, or too large to be one.
    private static func readText(_ url: URL) -> String? {
        let descriptor = open(url.path, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_CLOEXEC)
        guard descriptor >= 0 else { return nil }
        defer { close(descriptor) }
        var info = stat()
        guard fstat(descriptor, &info) == 0, info.st_mode & S_IFMT == S_IFREG, info.st_size <= maximumBytes else { return nil }
        var bytes = [UInt8](repeating: 0, count: Int(info.st_size))
        var filled = 0
        while filled < bytes.count {
            let count = bytes[filled...].withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
            if count < 0, errno == EINTR { continue }
            guard count > 0 else { break }
            filled += count
        }
        return String(decoding: bytes[..<filled], as: UTF8.self)
    }

    /// The validators of the archive the staged bytes came from (empty when unknown).
    package var validators: TransferValidators { state.withLock { $0.validators } }

    /// Where entry `name`'s data starts in the archive, if an attempt got that far.
    func dataOffset(of name: String) -> Int64? { state.withLock { $0.dataOffsets[name] } }

    /// How many chunks of entry `name` an earlier attempt wrote and verified, if it recorded any.
    func chunksDone(of name: String) -> Int? { state.withLock { $0.chunksDone[name] } }

    /// Records that the first `count` chunks of entry `name` are written and verified.
    func recordChunksDone(_ count: Int, of name: String) throws(ResourceError) {
        guard count >= 0, RelativePath.isClean(name) else { return }
        state.withLock { $0.chunksDone[name] = count }
        try append("chunks \(count) \(name)\n")
    }

    /// Records the validators of a response, when they differ from the recorded ones.
    func record(_ validators: TransferValidators) throws(ResourceError) {
        guard !validators.isEmpty else { return }
        let changed = state.withLock { state in
            defer { state.validators = validators }
            return state.validators != validators
        }
        guard changed, let json = try? JSONEncoder().encode(validators) else { return }
        try append("validators \(String(decoding: json, as: UTF8.self))\n")
    }

    /// Records where an entry's data starts (a name that could not be read back is not recorded).
    func recordDataOffset(_ offset: Int64, of name: String) throws(ResourceError) {
        guard offset >= 0, RelativePath.isClean(name) else { return }
        state.withLock { $0.dataOffsets[name] = offset }
        try append("data \(offset) \(name)\n")
    }

    /// Forgets everything: the archive changed, so nothing staged from it can be continued.
    func reset() {
        state.withLock { $0 = State() }
        unlink(url.path)
    }

    private func append(_ line: String) throws(ResourceError) {
        let descriptor = StoreFiles.openFile(url.path, O_WRONLY | O_APPEND | O_CREAT)
        guard descriptor >= 0 else { throw StoreFailure.posix("open '\(url.path)'") }
        defer { close(descriptor) }
        let bytes = Array(line.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw StoreFailure.posix("append to '\(url.path)'") }
    }
}
