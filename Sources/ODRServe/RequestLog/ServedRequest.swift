/// One request the server answered, as tests read it from ``CatalogServer/requests()``.
public struct ServedRequest: Sendable, Hashable, CustomStringConvertible {
    /// How the response ended.
    public enum Outcome: Sendable, Hashable {
        /// The response is still being sent.
        case inProgress
        /// Every byte of the response was handed to the connection.
        case completed
        /// The connection closed before the whole response was sent: a fault cut it, the client
        /// went away, or the server stopped or went offline.
        case aborted
    }

    /// Arrival order, from 0, over the server's lifetime.
    public var sequence: Int
    /// The request method, such as `GET` or `HEAD`.
    public var method: String
    /// The request target as received, query included (`/packs/a.zip`).
    public var target: String
    /// The `Range` header, if any.
    public var range: String?
    /// The `If-Range` header, if any.
    public var ifRange: String?
    /// The `If-None-Match` header, if any.
    public var ifNoneMatch: String?
    /// The status sent; 0 while the response is not chosen yet, or when the connection was dropped
    /// without a response.
    public var status: Int
    /// The Content-Length announced, or nil when there was none.
    public var contentLength: Int?
    /// Body bytes handed to the connection (for a truncated body: fewer than ``contentLength``).
    public var bytesSent: Int
    /// Faults the conditioner applied, whether scheduled by a test or drawn at random.
    public var faults: [Fault]
    /// How the response ended.
    public var outcome: Outcome
    /// The client's address and port: requests with the same value shared one connection.
    public var connection: String
    /// From the request's arrival to the end of its response.
    public var duration: Duration

    /// The path part of ``target``, without the query.
    public var path: String {
        target.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? target
    }

    public var description: String {
        var text = "#\(sequence) \(method) \(target)"
        if let range { text += " [\(range)]" }
        text += " -> \(status) \(bytesSent)"
        if let contentLength { text += "/\(contentLength)" }
        text += " bytes"
        if !faults.isEmpty { text += " faults: " + faults.map(\.description).joined(separator: ", ") }
        if outcome != .completed { text += " (\(outcome))" }
        return text
    }
}
