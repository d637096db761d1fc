import Foundation
import ODRFormat

/// The chunked files of a version, and what moving to it from an earlier one costs chunk by chunk.
public struct ChunkSummary: Codable, Sendable, Equatable {
    /// Distinct chunked entries (files at or over `limits.chunkThreshold`).
    public var files: Int
    /// Their chunks.
    public var chunks: Int
    /// Their uncompressed bytes.
    public var bytes: Int64
    /// Against the version compared with: chunks whose content it does not hold anywhere.
    public var changedChunks: Int
    /// And their stored bytes: what a client holding that version fetches for the chunked files.
    public var bytesToMove: Int64
    /// Whether there was a version to compare with; `false` on a first build, where every chunk
    /// counts as changed and the text report says nothing of changes.
    public var againstPrevious: Bool?

    /// Summarizes `manifest`'s chunked files, against the chunks of `previous` when given (else
    /// every chunk counts as changed).
    public init(of manifest: VersionManifest, against previous: VersionManifest?) {
        let held = Self.heldChunks(in: previous)
        var seen = Set<String>()
        files = 0
        chunks = 0
        bytes = 0
        changedChunks = 0
        bytesToMove = 0
        againstPrevious = previous != nil
        for file in manifest.files where !file.chunks.isEmpty && seen.insert(file.pack + "/" + file.entry).inserted {
            files += 1
            chunks += file.chunks.count
            bytes = bytes.clampedAdding(file.size)
            let moved = Self.toMove(file, holding: held)
            changedChunks += moved.chunks
            bytesToMove = bytesToMove.clampedAdding(moved.bytes)
        }
    }

    /// The digests of every chunk of `manifest`'s files: what a client holding it can reuse.
    public static func heldChunks(in manifest: VersionManifest?) -> Set<String> {
        Set((manifest?.files ?? []).lazy.flatMap(\.chunks).map(\.sha256))
    }

    /// What reaching `file` costs a client holding the chunks `held`: the chunks it lacks and their
    /// stored bytes; for a file without chunks, its whole entry (one "chunk").
    public static func toMove(_ file: FileRecord, holding held: Set<String>) -> (chunks: Int, bytes: Int64) {
        guard !file.chunks.isEmpty else { return (1, file.storedSize) }
        var count = 0, bytes: Int64 = 0
        var counted = Set<String>()
        for chunk in file.chunks where !held.contains(chunk.sha256) && counted.insert(chunk.sha256).inserted {
            count += 1
            bytes = bytes.clampedAdding(chunk.storedSize)
        }
        return (count, bytes)
    }
}
