#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
import Foundation
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
/// ```
///
/// Completed entries need no line: a verified entry is a read-only (0444) file of its full size,
/// flushed before it was made read-only when the store writes synchronously. The journal is never
/// flushed: losing it costs only bytes (a cut entry restarts from its header), never correctness,
/// since a resumed entry's held bytes are hashed again before the rest is appended.
package final class StagingJournal: Sendable {
    let url: URL
    private let state = Locked(State())

    private struct State {
        var dataOffsets: [String: Int64] = [:]
        var validators = TransferValidators()
    }

    package init(url: URL) {
        self.url = url
        guard let text = try? String(contentsOf: url, encoding: .utf8) else { return }
        state.withLock { state in
            for line in text.split(separator: "\n") {
                if line.hasPrefix("data ") {
                    let fields = line.dropFirst(5).split(separator: " ", maxSplits: 1)
                    if fields.count == 2, let offset = Int64(fields[0]) { state.dataOffsets[String(fields[1])] = offset }
                } else if line.hasPrefix("validators "),
                          let decoded = try? JSONDecoder().decode(TransferValidators.self, from: Data(line.dropFirst(11).utf8)) {
                    state.validators = decoded
                }
            }
        }
    }

    /// The validators of the archive the staged bytes came from (empty when unknown).
    package var validators: TransferValidators { state.withLock { $0.validators } }

    /// Where entry `name`'s data starts in the archive, if an attempt got that far.
    func dataOffset(of name: String) -> Int64? { state.withLock { $0.dataOffsets[name] } }

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

    /// Records where an entry's data starts.
    func recordDataOffset(_ offset: Int64, of name: String) throws(ResourceError) {
        state.withLock { $0.dataOffsets[name] = offset }
        try append("data \(offset) \(name)\n")
    }

    /// Forgets everything: the archive changed, so nothing staged from it can be continued.
    func reset() {
        state.withLock { $0 = State() }
        unlink(url.path)
    }

    private func append(_ line: String) throws(ResourceError) {
        let descriptor = open(url.path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0o644)
        guard descriptor >= 0 else { throw StoreFailure.posix("open '\(url.path)'") }
        defer { close(descriptor) }
        let bytes = Array(line.utf8)
        let written = bytes.withUnsafeBytes { write(descriptor, $0.baseAddress, $0.count) }
        guard written == bytes.count else { throw StoreFailure.posix("append to '\(url.path)'") }
    }
}
