#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension FileChunk {
    /// The marker a full flush ends with: an empty stored block (`00 00 FF FF`).
    static let flushMarker: [UInt8] = [0x00, 0x00, 0xFF, 0xFF]

    /// Inflates one chunk of a deflated entry on its own: the chunk's ``storedSize`` bytes, cut
    /// from the entry's data at the sum of the earlier chunks' stored sizes.
    ///
    /// A chunk other than the last must end at a full flush (the stream goes on after it); the
    /// last must end the stream. Either must inflate to exactly ``size`` bytes, whose SHA-256 the
    /// caller checks against ``sha256``.
    ///
    /// - Parameter last: whether this is the file's last chunk.
    /// - Throws: ``FormatError`` `corrupt-data` when the bytes are not deflate data or do not end
    ///   where they should (not at a flush point, or not at the stream's end for the last chunk);
    ///   `size-mismatch` when they inflate to more or fewer than ``size`` bytes.
    public func inflate(_ stored: some ContiguousBytes, last: Bool) throws(FormatError) -> Data {
        let expected = Int(size)
        let outcome: Result<Data, FormatError> = stored.withUnsafeBytes { raw in
            Result { () throws(FormatError) -> Data in
                guard raw.count == Int(storedSize) else {
                    throw FormatError(.sizeMismatch, "A chunk's stored bytes are \(raw.count), not the \(storedSize) its table says.", field: sha256)
                }
                guard last || raw.count >= 4 && raw.suffix(4).elementsEqual(Self.flushMarker) else {
                    throw FormatError(.corruptData, "Chunk \(sha256) does not end at a full flush, so it cannot be inflated on its own. Rebuild the catalog with this odrpack.", field: sha256)
                }
                var output = Data()
                output.reserveCapacity(expected)
                var scratch = [UInt8](repeating: 0, count: 1 << 16)
                let stream: ZlibStream
                do { stream = try ZlibStream(.inflate) } catch { throw (error as? FormatError) ?? FormatError(.io, "zlib could not start.") }
                var consumed = 0
                do {
                    consumed = try stream.process(raw, scratch: &scratch) { piece throws(FormatError) in
                        guard output.count + piece.count <= expected else {
                            throw FormatError(.sizeMismatch, "Chunk \(sha256) inflates to more than its \(expected) bytes.", field: sha256)
                        }
                        output.append(contentsOf: piece)
                    }
                } catch let error as FormatError {
                    throw error
                } catch {
                    throw FormatError(.corruptData, "Chunk \(sha256) is not deflate data that inflates on its own.", field: sha256)
                }
                guard consumed == raw.count, stream.ended == last else {
                    throw FormatError(
                        .corruptData,
                        last ? "The last chunk \(sha256) does not end the deflate stream." : "Chunk \(sha256) ends the deflate stream or leaves bytes after it, though it is not the last.",
                        field: sha256)
                }
                guard output.count == expected else {
                    throw FormatError(.sizeMismatch, "Chunk \(sha256) inflates to \(output.count) bytes, not \(expected).", field: sha256)
                }
                return output
            }
        }
        return try outcome.get()
    }
}

extension FileChunk {
    /// Checks every chunk of `file` against the pack archive at `url`: each chunk's stored bytes,
    /// cut at the running sum of stored sizes from the start of the entry's data, must give the
    /// chunk's bytes on their own (a stored chunk as they are, a deflated one inflated alone, see
    /// ``inflate(_:last:)``) with the chunk's SHA-256. Reads one chunk at a time.
    ///
    /// - Throws: ``FormatError`` `malformed-archive` when no local header is at the file's header
    ///   offset; `truncated` when a chunk runs past the archive; `hash-mismatch` naming the chunk;
    ///   the errors of ``inflate(_:last:)``; `io`.
    public static func verifyChunks(of file: FileRecord, inArchiveAt url: URL) throws(FormatError) {
        guard !file.chunks.isEmpty else { return }
        do {
            let archive = try ReadableFile(url)
            let header = try archive.read(count: ZipFormat.localHeaderSize, at: file.headerOffset)
            func u16(_ at: Int) -> Int { Int(header[at]) | Int(header[at + 1]) << 8 }
            guard header.count == ZipFormat.localHeaderSize,
                  header.prefix(4).elementsEqual([0x50, 0x4B, 0x03, 0x04]) else {
                throw FormatError(.malformedArchive, "No local header at offset \(file.headerOffset) for '\(file.path)'.", field: file.entry)
            }
            var offset = file.headerOffset + Int64(ZipFormat.localHeaderSize + u16(26) + u16(28))
            for (i, chunk) in file.chunks.enumerated() {
                let stored = try archive.read(count: Int(chunk.storedSize), at: offset)
                guard stored.count == Int(chunk.storedSize) else {
                    throw FormatError(.truncated, "Chunk \(i) of '\(file.path)' runs past the end of the archive.", field: file.entry)
                }
                offset += chunk.storedSize
                let content = file.method == .deflate ? try chunk.inflate(stored, last: i == file.chunks.count - 1) : Data(stored)
                let digest = ContentHash.sha256Hex(of: content)
                guard digest == chunk.sha256 else {
                    throw FormatError(
                        .hashMismatch,
                        "Chunk \(i) of '\(file.path)' has SHA-256 \(digest), but the manifest says \(chunk.sha256). Rebuild the catalog.",
                        field: "\(file.entry)#\(i)")
                }
            }
        } catch let error as FormatError {
            throw error
        } catch {
            throw FormatError(.io, "Could not read the chunks of '\(file.path)' from \(url.lastPathComponent).", field: file.entry, cause: error)
        }
    }
}
