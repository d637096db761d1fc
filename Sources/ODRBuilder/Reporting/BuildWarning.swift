/// Something a build did that its author should know about, without failing the build.
public struct BuildWarning: Codable, Sendable, Equatable, CustomStringConvertible {
    /// A stable kind of warning.
    public struct Code: RawRepresentable, Codable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public init(from decoder: any Decoder) throws { rawValue = try decoder.singleValueContainer().decode(String.self) }
        public func encode(to encoder: any Encoder) throws {
            var container = encoder.singleValueContainer()
            try container.encode(rawValue)
        }
        public var description: String { rawValue }

        /// Files matched no rule and were left out (`"untagged": "warn"`).
        public static let untaggedFiles = Code(rawValue: "untaggedFiles")
        /// A tag's rules matched no file.
        public static let emptyTag = Code(rawValue: "emptyTag")
        /// A tag set was larger than the pack size limit and was split into parts.
        public static let splitPack = Code(rawValue: "splitPack")
        /// A single file is larger than the pack size limit (allowed by `--allow-oversize`).
        public static let oversizeFile = Code(rawValue: "oversizeFile")
        /// Initial-install plus prefetch tags need more than their budget.
        public static let budgetExceeded = Code(rawValue: "budgetExceeded")
        /// A symbolic link or special file was skipped.
        public static let skippedFile = Code(rawValue: "skippedFile")
        /// Large files were stored uncompressed although most of their bytes compress well
        /// (`odrpack report` samples them).
        public static let storedCompressible = Code(rawValue: "storedCompressible")
        /// The `base` tag, which every client installs first, grew by more than
        /// `limits.baseGrowthWarning` since the previous version (``BaseGrowth``).
        public static let baseGrew = Code(rawValue: "baseGrew")
        /// Files were deflated although it saves under 10%.
        public static let deflatedPoorly = Code(rawValue: "deflatedPoorly")
    }

    /// The kind of warning.
    public var code: Code
    /// What happened, for humans.
    public var message: String

    /// Creates a warning.
    public init(_ code: Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "warning [\(code)]: \(message)" }
}
