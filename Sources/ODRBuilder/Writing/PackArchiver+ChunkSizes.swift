import Foundation
import ODRFormat

/// Chunk sizes and reuse: an earlier pack's chunked entries were cut with the sizes of the build that
/// wrote it, which no manifest records. A pack is reused only when its chunk tables are the ones the
/// current ``PackWriter/Options/chunkSizes`` cut, so a build with other sizes (`limits.chunkSizes`)
/// writes the pack again, with the bytes a clean build would write (deflate flushes at the new cuts).
extension PackArchiver {
    /// The first of `candidates` (earlier packs with the planned entries) whose chunked entries were
    /// cut as the current sizes cut them.
    func reusableSource(for entries: [PackPlan.Entry], among candidates: [WrittenPackSource]) throws(BuildError) -> WrittenPackSource? {
        for candidate in candidates {
            // An entry a rule compresses one way must have been written that way.
            let methodsAsNow = entries.allSatisfy { entry in
                entry.method.map { candidate.entries[entry.name]?.method == $0 } ?? true
            }
            if methodsAsNow, try cutsAsNow(entries, of: candidate) { return candidate }
        }
        return nil
    }

    /// Whether every chunked entry of `source` (the earlier pack planned `entries` would reuse) was cut
    /// where the current sizes cut it: from the build cache's table for these sizes when it has one,
    /// otherwise by running FastCDC over the file (no compression, no hashing).
    func cutsAsNow(_ entries: [PackPlan.Entry], of source: WrittenPackSource) throws(BuildError) -> Bool {
        for entry in entries where isChunked(entry.size) {
            guard let earlier = source.entries[entry.name]?.chunks, !earlier.isEmpty else { return false }
            let sizes = if let known = knownChunkTables[entry.sha256] { known.map(\.size) } else { try Self.cutSizes(of: entry.source, with: options.chunkSizes) }
            guard sizes == earlier.map(\.size) else { return false }
        }
        return true
    }

    /// The sizes of the chunks FastCDC with `parameters` cuts the file at `url` into.
    static func cutSizes(of url: URL, with parameters: FastCDC.Parameters) throws(BuildError) -> [Int64] {
        var chunker = FastCDC(parameters)
        var sizes: [Int64] = []
        do {
            let handle = try FileHandle(forReadingFrom: url)
            defer { try? handle.close() }
            while let block = try handle.read(upToCount: 1 << 20), !block.isEmpty {
                block.withUnsafeBytes { chunker.consume($0) { sizes.append($0) } }
            }
        } catch {
            throw BuildError(.assetsUnreadable, "cannot read the file to check its chunks; check its permissions and build again",
                             file: url.path, cause: error)
        }
        if let last = chunker.finish() { sizes.append(last) }
        return sizes
    }
}
