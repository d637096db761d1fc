/// An error of the development catalog server, with a code to match and a message that says what to do.
public struct ServeError: Error, CustomStringConvertible, Sendable {
    /// What went wrong, as a stable string a caller can match on.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }

        /// The catalog directory does not exist or is not a directory.
        public static let catalogNotFound = Code(rawValue: "catalog-not-found")
        /// The server could not listen on the requested host and port.
        public static let bindFailed = Code(rawValue: "bind-failed")
        /// A network condition is out of range.
        public static let invalidConditions = Code(rawValue: "invalid-conditions")
        /// The share server could not announce itself by DNS-SD (no bus, no Avahi, a refusal; the
        /// cause is a ``PeerDiscoveryError``).
        public static let announceFailed = Code(rawValue: "announce-failed")
        /// The server was already stopped.
        public static let stopped = Code(rawValue: "stopped")

        public var description: String { rawValue }
    }

    /// What went wrong.
    public var code: Code
    /// What happened and what to do about it, for humans.
    public var message: String
    /// The underlying error, when there is one.
    public var cause: (any Error)?

    /// Creates an error with a code, a message for humans and an optional underlying cause.
    public init(_ code: Code, _ message: String, cause: (any Error)? = nil) {
        self.code = code
        self.message = message
        self.cause = cause
    }

    public var description: String {
        if let cause { return "\(message) (\(code): \(cause))" }
        return "\(message) (\(code))"
    }
}
