import Hummingbird

/// The conditional request headers, evaluated in the order RFC 9110 (section 13.2.2) prescribes.
struct Preconditions {
    enum Outcome: Equatable {
        case notModified
        case preconditionFailed
    }

    private let ifMatch: String?
    private let ifUnmodifiedSince: String?
    private let ifNoneMatch: String?
    private let ifModifiedSince: String?

    init(_ headers: HTTPFields) {
        ifMatch = headers[.ifMatch]
        ifUnmodifiedSince = headers[.ifUnmodifiedSince]
        ifNoneMatch = headers[.ifNoneMatch]
        ifModifiedSince = headers[.ifModifiedSince]
    }

    /// What the conditions say for a GET or HEAD of `entity`: nil to send it.
    func evaluate(for entity: FileEntity) -> Outcome? {
        if let ifMatch {
            if !Self.list(ifMatch, contains: entity.etag, weak: false) { return .preconditionFailed }
        } else if let since = ifUnmodifiedSince.flatMap(HTTPDate.parse), entity.modifiedSeconds > since {
            return .preconditionFailed
        }
        if let ifNoneMatch {
            return Self.list(ifNoneMatch, contains: entity.etag, weak: true) ? .notModified : nil
        }
        if let since = ifModifiedSince.flatMap(HTTPDate.parse), entity.modifiedSeconds <= since {
            return .notModified
        }
        return nil
    }

    /// Whether an `If-Range` value still names `entity`: a strong match of its ETag, or exactly
    /// its modification date.
    static func ifRange(_ value: String, matches entity: FileEntity) -> Bool {
        let value = Substring(value).trimmingSpaces
        if value.hasPrefix("\"") || value.hasPrefix("W/") {
            return value == entity.etag
        }
        return HTTPDate.parse(String(value)) == entity.modifiedSeconds
    }

    /// Whether a comma-separated ETag list (or `*`) matches `etag`; the weak comparison ignores `W/`.
    private static func list(_ header: String, contains etag: String, weak: Bool) -> Bool {
        for item in header.split(separator: ",") {
            let tag = item.trimmingSpaces
            if tag == "*" { return true }
            if weak {
                if tag.trimmingWeakPrefix == Substring(etag).trimmingWeakPrefix { return true }
            } else if tag == etag {
                return true
            }
        }
        return false
    }
}

extension Substring {
    fileprivate var trimmingWeakPrefix: Substring {
        hasPrefix("W/") ? dropFirst(2) : self
    }
}
