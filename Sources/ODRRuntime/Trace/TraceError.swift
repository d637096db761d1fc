/// A trace file that cannot be read, or written while recording.
public struct TraceError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier for the kind of problem.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        /// The stable string, such as `malformed-line`.
        public var rawValue: String
        /// Wraps a raw value; use the static members rather than spelling the string.
        public init(rawValue: String) { self.rawValue = rawValue }
        /// The raw value, as messages show it.
        public var description: String { rawValue }

        /// A line is not a JSON object of the trace format.
        public static let malformedLine = Code(rawValue: "malformed-line")
        /// A line's `event` is not one this version knows (a newer recorder wrote it: a reader from
        /// before hints were traced refuses `hint` and `hint-end` lines with it).
        public static let unknownEvent = Code(rawValue: "unknown-event")
        /// A field has a value outside its range (a negative time, a priority or a hint's likelihood
        /// outside 0...1), or, on replay, the events do not fit together (a tag the catalog lacks,
        /// an end of a request or hint that never began).
        public static let invalidValue = Code(rawValue: "invalid-value")
        /// The trace file cannot be created or written (a missing directory, no permission, a full disk).
        public static let writeFailed = Code(rawValue: "write-failed")
    }

    /// What kind of problem this is; stable across releases.
    public var code: Code
    /// What is wrong and what to do about it.
    public var message: String
    /// The 1-based line of the problem, when reading a whole trace.
    public var line: Int?
    /// The decoder's own error, if any.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(_ code: Code, _ message: String, line: Int? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.line = line
        self.cause = cause
    }

    /// `[code]`, the line when known, the message, and the cause when there is one.
    public var description: String {
        var text = "[\(code)]"
        if let line { text += " line \(line):" }
        text += " \(message)"
        if let cause { text += " (cause: \(cause))" }
        return text
    }
}
