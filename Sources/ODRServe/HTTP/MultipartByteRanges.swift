/// The body of a 206 answer to several ranges: one `multipart/byteranges` part per range, in the
/// order they were asked (RFC 9110, section 14.6).
struct MultipartByteRanges {
    let boundary: String
    let parts: [BodyPart]

    /// The Content-Type of the whole response.
    var contentType: String { "multipart/byteranges; boundary=\(boundary)" }

    init(ranges: [ClosedRange<Int>], size: Int, contentType: String) {
        // Random, so no file can contain it by accident; not a conditioner decision, so not seeded.
        let boundary = "odr-byteranges-" + String(UInt64.random(in: .min ... .max), radix: 16)
        var parts: [BodyPart] = []
        for range in ranges {
            // Every delimiter, the first too, is CRLF "--" boundary, as nginx and Apache send it: zsync
            // 0.6 reads a line before each delimiter and loops forever on a body that starts with
            // "--" (RFC 2046 allows both).
            let header = "\r\n--\(boundary)\r\n" + "Content-Type: \(contentType)\r\n"
                + "Content-Range: bytes \(range.lowerBound)-\(range.upperBound)/\(size)\r\n\r\n"
            parts.append(BodyPart(header: header, range: range))
        }
        parts.append(BodyPart(header: "\r\n--\(boundary)--\r\n", range: nil))
        self.boundary = boundary
        self.parts = parts
    }
}

/// A piece of a response body: literal text, then a range of the file, either optional.
struct BodyPart {
    let header: String?
    let range: ClosedRange<Int>?

    var length: Int { (header?.utf8.count ?? 0) + (range?.count ?? 0) }
}

/// How a response body is assembled from the file.
enum BodyLayout {
    case whole(size: Int)
    case single(ClosedRange<Int>)
    case multipart(MultipartByteRanges)

    var parts: [BodyPart] {
        switch self {
        case .whole(let size): size == 0 ? [] : [BodyPart(header: nil, range: 0...(size - 1))]
        case .single(let range): [BodyPart(header: nil, range: range)]
        case .multipart(let multipart): multipart.parts
        }
    }

    var length: Int {
        switch self {
        case .whole(let size): size
        case .single(let range): range.count
        case .multipart(let multipart): multipart.parts.reduce(0) { $0 + $1.length }
        }
    }
}
