/// The headers of the latest response of an exchange, as curl's header callback delivers them.
///
/// Redirects and `100 Continue` produce several header blocks; each status line starts a new one so
/// only the final response's headers remain.
package struct ResponseHeaders: Sendable, Equatable {
    var entityTag: String?
    var lastModified: String?
    var contentRange: ContentRange?
    var contentLength: Int64?

    package init() {}

    var validators: TransferValidators {
        TransferValidators(entityTag: entityTag, lastModified: lastModified)
    }

    /// Takes one raw header line (with its CRLF).
    package mutating func take(line raw: Substring) {
        // "\r\n" is one Character in Swift, so match by property, not by "\r".
        let line = raw.trimmingSuffix { $0.isNewline }
        if line.hasPrefix("HTTP/") {
            self = ResponseHeaders()
            return
        }
        guard let colon = line.firstIndex(of: ":") else { return }
        let name = line[..<colon].lowercased()
        let value = String(line[line.index(after: colon)...].trimmingPrefix(while: \.isWhitespace)
            .trimmingSuffix { $0.isWhitespace })
        switch name {
        case "etag": entityTag = value
        case "last-modified": lastModified = value
        case "content-range": contentRange = ContentRange(value)
        case "content-length": contentLength = Int64(value)
        default: break
        }
    }
}

/// A parsed `Content-Range: bytes first-last/total` value (total may be `*`).
struct ContentRange: Sendable, Equatable {
    var first: Int64
    var last: Int64
    var total: Int64?

    init(first: Int64, last: Int64, total: Int64?) {
        self.first = first
        self.last = last
        self.total = total
    }

    init?(_ value: String) {
        guard value.hasPrefix("bytes ") else { return nil }
        let spec = value.dropFirst("bytes ".count)
        let halves = spec.split(separator: "/", maxSplits: 1)
        guard halves.count == 2 else { return nil }
        let bounds = halves[0].split(separator: "-", maxSplits: 1)
        guard bounds.count == 2, let first = Int64(bounds[0]), let last = Int64(bounds[1]), first <= last else { return nil }
        let total: Int64?
        if halves[1] == "*" {
            total = nil
        } else {
            guard let value = Int64(halves[1]), value > last else { return nil }
            total = value
        }
        self.init(first: first, last: last, total: total)
    }
}

extension Substring {
    fileprivate func trimmingSuffix(while predicate: (Character) -> Bool) -> Substring {
        var end = endIndex
        while end > startIndex, predicate(self[index(before: end)]) { end = index(before: end) }
        return self[startIndex..<end]
    }
}
