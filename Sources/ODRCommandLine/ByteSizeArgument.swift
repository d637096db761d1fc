import ArgumentParser
import ODRFormat

/// A byte size on the command line, written as everywhere else (`1048576`, `100MB`, `100 MiB`,
/// `256k`): ``ODRFormat/ByteSize`` parses it, and a refusal lists the forms it accepts.
///
/// Give an option the transform, so that a refusal says what is accepted (ArgumentParser's own
/// message for a failed `init?(argument:)` does not):
/// `@Option(transform: ByteSizeArgument.bytes) var cacheBudget: Int64?`, or, to keep the size as
/// written for `--help`, `@Option(transform: ByteSizeArgument.init(parsing:)) var disk = ByteSizeArgument("8GiB")`.
public struct ByteSizeArgument: ExpressibleByArgument, CustomStringConvertible, Sendable {
    /// The size in bytes.
    public var bytes: Int64
    /// As written, so `--help` shows a default as `8GiB`.
    private var text: String

    public init?(argument: String) {
        guard let bytes = ByteSize.parse(argument) else { return nil }
        self.bytes = bytes
        text = argument
    }

    /// A size written in the source (a default); traps on a malformed literal, a programming error.
    public init(_ literal: StaticString) {
        guard let value = ByteSizeArgument(argument: "\(literal)") else { preconditionFailure("not a byte size: \(literal)") }
        self = value
    }

    /// Parses `text`; a `ValidationError` listing the accepted forms when it is not a size.
    public init(parsing text: String) throws {
        guard let value = ByteSizeArgument(argument: text) else { throw Self.refusal }
        self = value
    }

    /// The bytes `text` denotes; a `ValidationError` listing the accepted forms when it is not a size.
    public static func bytes(_ text: String) throws -> Int64 {
        try ByteSizeArgument(parsing: text).bytes
    }

    /// Bytes as an `Int` (for APIs that count in `Int`), with the same forms and refusal.
    public static func intBytes(_ text: String) throws -> Int {
        guard let value = Int(exactly: try bytes(text)) else { throw refusal }
        return value
    }

    private static var refusal: ValidationError { ValidationError("expected \(ByteSize.acceptedForms)") }

    public var description: String { text }
    public var defaultValueDescription: String { text }
    public static var defaultCompletionKind: CompletionKind { .default }
}
