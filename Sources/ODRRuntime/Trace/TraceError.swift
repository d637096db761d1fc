/// A trace file that cannot be read, or written while recording.
public struct TraceError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier for the kind of problem.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        /// A line is not a JSON object of the trace format.
        public static let malformedLine = Code(rawValue: "malformed-line")
        /// A line's `event` is not one this version knows.
        public static let unknownEvent = Code(rawValue: "unknown-event")
        /// A field has a value outside its range (a negative time, a priority outside 0...1).
        public static let invalidValue = Code(rawValue: "invalid-value")
        /// The trace file cannot be created or written (a missing directory, no permission, a full disk).
        public static let writeFailed = Code(rawValue: "write-failed")
    }

    public var code: Code
    /// What is wrong and what to do about it.
    public var message: String
    /// The 1-based line of the problem, when reading a whole trace.
    public var line: Int?
    /// The decoder's own error, if any.
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, line: Int? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.line = line
        self.cause = cause
    }

    public var description: String {
        var text = "[\(code)]"
        if let line { text += " line \(line):" }
        text += " \(message)"
        if let cause { text += " (cause: \(cause))" }
        return text
    }
}
