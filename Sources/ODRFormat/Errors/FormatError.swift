/// An error in a catalog, a version manifest or a pack archive.
///
/// Every error carries a stable ``code`` that programs can switch on, a ``message`` that says what
/// went wrong and what to do about it, the ``field`` (a JSON path or an entry name) it concerns,
/// and, where another layer failed first, the underlying ``cause``.
///
/// ```swift
/// do {
///     let manifest = try VersionManifest.decode(from: data)
/// } catch where error.code == .danglingReference {
///     print(error.field ?? "", error.message)
/// }
/// ```
public struct FormatError: Error, CustomStringConvertible, Sendable {
    /// A stable identifier for a kind of format error.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // MARK: Catalogs and manifests

        /// The JSON could not be parsed, or a required key is missing or of the wrong type.
        public static let malformedJSON = Code(rawValue: "malformed-json")
        /// The file declares a format version this library does not understand.
        public static let unsupportedFormatVersion = Code(rawValue: "unsupported-format-version")
        /// A value is out of its allowed range (a negative size, a priority outside 0...1, ...).
        public static let invalidValue = Code(rawValue: "invalid-value")
        /// A path is not a clean relative path (absolute, `..`, `.`, empty components, backslashes, NUL).
        public static let invalidPath = Code(rawValue: "invalid-path")
        /// The same path, tag, pack or version appears twice.
        public static let duplicate = Code(rawValue: "duplicate")
        /// Something refers to a pack, tag or version that does not exist.
        public static let danglingReference = Code(rawValue: "dangling-reference")

        // MARK: Pack archives

        /// The bytes are not a ZIP archive we can read (bad signature, inconsistent directory).
        public static let malformedArchive = Code(rawValue: "malformed-archive")
        /// An entry name is absolute, has `..` components, backslashes or NUL bytes.
        public static let unsafeEntryName = Code(rawValue: "unsafe-entry-name")
        /// An entry is a symbolic link, device or other special file.
        public static let unsupportedEntryType = Code(rawValue: "unsupported-entry-type")
        /// An entry uses a compression method, encryption or flag we do not support.
        public static let unsupportedFeature = Code(rawValue: "unsupported-feature")
        /// Two entries have the same name.
        public static let duplicateEntry = Code(rawValue: "duplicate-entry")
        /// The archive holds an entry the manifest does not list, or lacks one it lists.
        public static let unexpectedEntry = Code(rawValue: "unexpected-entry")
        /// An entry's local header disagrees with the manifest (method, sizes, offset).
        public static let entryMismatch = Code(rawValue: "entry-mismatch")
        /// An entry inflates to more bytes than declared (a decompression bomb) or fewer.
        public static let sizeMismatch = Code(rawValue: "size-mismatch")
        /// The archive ended before all declared bytes arrived.
        public static let truncated = Code(rawValue: "truncated")
        /// An entry's or the archive's SHA-256 differs from the manifest's.
        public static let hashMismatch = Code(rawValue: "hash-mismatch")
        /// The compressed data of an entry is corrupt.
        public static let corruptData = Code(rawValue: "corrupt-data")

        // MARK: Keys

        /// A key file that is not an `odrpack key generate` key of the expected kind (a public key
        /// where a private one is needed, or the other way round), or whose key bytes are invalid.
        public static let invalidKey = Code(rawValue: "invalid-key")
        /// A catalog is unsigned, or lacks enough valid signatures by the trusted keys, or its key
        /// rotations do not lead from the trusted keys to the ones that signed it.
        public static let untrustedSignature = Code(rawValue: "untrusted-signature")

        // MARK: Writing and files

        /// Entries were added out of order, after finishing, or the writer was misused.
        public static let invalidOperation = Code(rawValue: "invalid-operation")
        /// A file could not be read, written or renamed.
        public static let io = Code(rawValue: "io")
    }

    /// What kind of error this is; stable across releases.
    public var code: Code
    /// What went wrong and what to do about it.
    public var message: String
    /// The field (JSON path such as `packs[2].id`) or archive entry the error concerns.
    public var field: String?
    /// The lower-level error that caused this one, if any.
    public var cause: (any Error & Sendable)?

    public init(_ code: Code, _ message: String, field: String? = nil, cause: (any Error & Sendable)? = nil) {
        self.code = code
        self.message = message
        self.field = field
        self.cause = cause
    }

    public var description: String {
        var text = "[\(code)]"
        if let field { text += " \(field):" }
        text += " \(message)"
        if let cause { text += " (cause: \(cause))" }
        return text
    }
}
