#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Raw DEFLATE (RFC 1951) of a whole buffer, for the metadata files of split catalogs: any static
/// host serves them as plain files and the reader inflates them itself, never relying on
/// `Content-Encoding`.
enum WholeDeflate {
    /// The compression level metadata files are written with; deterministic for a given zlib.
    static let level: Int32 = 9

    /// `data`, deflated.
    static func deflate(_ data: Data) throws(FormatError) -> Data {
        do {
            let stream = try ZlibStream(.deflate, level: level)
            var scratch = [UInt8](repeating: 0, count: 64 * 1024)
            var output = Data()
            _ = try data.withUnsafeBytes { input in
                try stream.process(input, finish: true, scratch: &scratch) { output.append(contentsOf: $0) }
            }
            return output
        } catch {
            throw (error as? FormatError) ?? FormatError(.io, "zlib could not compress the metadata.", cause: error)
        }
    }

    /// `data` inflated, refusing more than `limit` bytes of output (a decompression bomb) and any
    /// byte after the end of the deflate stream.
    ///
    /// - Throws: ``FormatError`` `size-mismatch` past `limit`, `corrupt-data` for data zlib cannot
    ///   inflate, a stream that ends early or bytes after its end; `file` names the file in messages.
    static func inflate(_ data: Data, limit: Int, file: String) throws(FormatError) -> Data {
        var output = Data()
        var overLimit = false
        do {
            let stream = try ZlibStream(.inflate)
            var scratch = [UInt8](repeating: 0, count: 64 * 1024)
            let consumed = try data.withUnsafeBytes { input in
                try stream.process(input, scratch: &scratch) { piece in
                    guard piece.count <= limit - output.count else {
                        overLimit = true
                        throw FormatError(.sizeMismatch, "")
                    }
                    output.append(contentsOf: piece)
                }
            }
            guard stream.ended, consumed == data.count else {
                throw FormatError(.corruptData, "\(file) ends before its compressed data does, or has bytes after it. Fetch it again, or rebuild the catalog.", field: file)
            }
        } catch {
            if overLimit {
                throw FormatError(.sizeMismatch, "\(file) inflates to more than \(limit) bytes, more than any metadata file of its size may hold; it was crafted or damaged. Fetch it again, or rebuild the catalog.", field: file)
            }
            if let error = error as? FormatError, error.field == file { throw error }
            throw FormatError(.corruptData, "\(file) is not valid compressed metadata. Fetch it again, or rebuild the catalog.", field: file, cause: error)
        }
        return output
    }
}
