import Foundation

/// One part of a `multipart/byteranges` body.
struct ByteRangePart: Equatable {
    var contentRange: String
    var body: Data
}

/// Splits a `multipart/byteranges` body on `boundary`, strictly: every part must carry a
/// Content-Range and the body must end with the closing delimiter.
func parseByteRanges(_ body: Data, boundary: String) -> [ByteRangePart]? {
    let delimiter = Data("--\(boundary)".utf8)
    var parts: [ByteRangePart] = []
    // The first delimiter may come with its CRLF (RFC 2046: an empty preamble either way).
    let start = body.starts(with: Data("\r\n".utf8)) ? body.startIndex + 2 : body.startIndex
    var cursor = start
    guard let first = body.range(of: delimiter, in: cursor..<body.endIndex), first.lowerBound == start else {
        return nil
    }
    cursor = first.upperBound
    while true {
        if body[cursor...].starts(with: Data("--\r\n".utf8)) {
            return cursor + 4 == body.endIndex ? parts : nil
        }
        guard body[cursor...].starts(with: Data("\r\n".utf8)),
            let headEnd = body.range(of: Data("\r\n\r\n".utf8), in: cursor..<body.endIndex)
        else { return nil }
        let head = String(decoding: body[(cursor + 2)..<headEnd.lowerBound], as: UTF8.self)
        guard let next = body.range(of: Data("\r\n".utf8) + delimiter, in: headEnd.upperBound..<body.endIndex) else {
            return nil
        }
        let contentRange = head.split(separator: "\r\n")
            .first { $0.lowercased().hasPrefix("content-range:") }
            .map { $0.dropFirst("content-range:".count).trimmingCharacters(in: .whitespaces) }
        guard let contentRange else { return nil }
        parts.append(ByteRangePart(contentRange: contentRange, body: Data(body[headEnd.upperBound..<next.lowerBound])))
        cursor = next.upperBound
    }
}
