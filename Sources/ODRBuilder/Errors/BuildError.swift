import Foundation
import ODRFormat

/// An error from building, inspecting or editing a catalog, with a stable code and a message that
/// says what to do.
///
/// Rules-file errors also name the file, the key (a dotted path such as `tags.level1.include[0]`)
/// and the offending value, so a build log points straight at the line to fix.
public struct BuildError: Error, CustomStringConvertible, Sendable {
    /// A stable, machine-readable error code such as `rules.unknownKey`.
    public struct Code: RawRepresentable, Hashable, Sendable, CustomStringConvertible {
        public var rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public var description: String { rawValue }

        // Rules file.
        /// The rules file is missing or cannot be read.
        public static let rulesUnreadable = Code(rawValue: "rules.unreadable")
        /// The rules file is not valid JSON, or not a JSON object.
        public static let rulesMalformed = Code(rawValue: "rules.malformed")
        /// `odrpack init` would replace an existing rules file (pass `--force`).
        public static let rulesExists = Code(rawValue: "rules.exists")
        /// `odrpack init` cannot write the rules file.
        public static let rulesUnwritable = Code(rawValue: "rules.unwritable")
        /// The rules file contains a key this version does not know.
        public static let unknownKey = Code(rawValue: "rules.unknownKey")
        /// A required key is absent.
        public static let missingKey = Code(rawValue: "rules.missingKey")
        /// A value has the wrong JSON type or an impossible value.
        public static let invalidValue = Code(rawValue: "rules.invalidValue")
        /// A glob pattern cannot be compiled.
        public static let invalidGlob = Code(rawValue: "rules.invalidGlob")
        /// A preservation priority lies outside 0...1.
        public static let priorityOutOfRange = Code(rawValue: "rules.priorityOutOfRange")
        /// A tag name is empty or contains characters tags may not use.
        public static let invalidTagName = Code(rawValue: "rules.invalidTagName")
        /// `initialInstall` or `prefetchOrder` names a tag that no rule defines.
        public static let undefinedTag = Code(rawValue: "rules.undefinedTag")
        /// A variant axis name or a declared variant value is empty, `.` or `..`, or uses characters
        /// names may not use (such as `/`).
        public static let invalidVariantName = Code(rawValue: "rules.invalidVariantName")

        // Scanning and planning.
        /// The assets directory does not exist or a file in it cannot be read.
        public static let assetsUnreadable = Code(rawValue: "scan.unreadable")
        /// Files match no rule and the rules say `"untagged": "error"`.
        public static let untaggedFiles = Code(rawValue: "plan.untaggedFiles")
        /// A single file is larger than the pack size limit and `--allow-oversize` was not given.
        public static let oversizeFile = Code(rawValue: "plan.oversizeFile")
        /// The build found no files to pack.
        public static let emptyBuild = Code(rawValue: "plan.empty")
        /// A file name marks a value its variant axis does not declare (`tree@4x.png`).
        public static let unknownVariantValue = Code(rawValue: "plan.unknownVariantValue")
        /// A file name marks two values of one variant axis (`tree@1x@2x.png`).
        public static let repeatedVariantAxis = Code(rawValue: "plan.repeatedVariantAxis")
        /// An unmarked file has marked variants beside it and its axis declares no `default`.
        public static let missingVariantDefault = Code(rawValue: "plan.missingVariantDefault")
        /// Two files are the same variant of one logical path (`tree.png` with default `1x`, and
        /// `tree@1x.png`).
        public static let duplicateVariant = Code(rawValue: "plan.duplicateVariant")
        /// A variant's logical path is also a folder of other files (`Levels@2x` beside
        /// `Levels/map.json`): a file and a folder cannot share a name.
        public static let variantPathConflict = Code(rawValue: "plan.variantPathConflict")

        // Catalog on disk.
        /// The catalog directory or one of its files cannot be read or written.
        public static let catalogIO = Code(rawValue: "catalog.io")
        /// `catalog.json` or a version manifest does not decode.
        public static let catalogMalformed = Code(rawValue: "catalog.malformed")
        /// The catalog was built for another catalog id.
        public static let catalogIDMismatch = Code(rawValue: "catalog.idMismatch")
        /// An immutable file already exists with different bytes.
        public static let immutableConflict = Code(rawValue: "catalog.immutableConflict")
        /// A version number that the catalog does not list.
        public static let unknownVersion = Code(rawValue: "catalog.unknownVersion")
        /// A distribution name that the catalog does not define.
        public static let unknownDistribution = Code(rawValue: "catalog.unknownDistribution")
        /// A distribution name that is empty or uses characters names may not use.
        public static let invalidDistribution = Code(rawValue: "catalog.invalidDistribution")

        // Reports.
        /// `--variant` names an axis the version does not declare, or a value its axis does not list.
        public static let unknownVariant = Code(rawValue: "report.unknownVariant")
        /// The report file cannot be written (its folder is missing or read-only, or the disk is full).
        public static let reportUnwritable = Code(rawValue: "report.unwritable")

        // Signing.
        /// A key file is missing, unreadable, of the wrong kind (a public key given to sign), or a
        /// key pair would overwrite existing files.
        public static let signingKey = Code(rawValue: "signing.key")
        /// `catalog.json` is signed and a change was asked for without `--sign-with`: writing it
        /// unsigned would make every client that trusts the keys refuse it.
        public static let signingRequired = Code(rawValue: "signing.required")
        /// A signing setting is impossible: no key, an expiry of zero or less, a threshold larger
        /// than the number of keys.
        public static let signingInvalid = Code(rawValue: "signing.invalid")

        // Verification.
        /// A file the catalog refers to is missing.
        public static let missingFile = Code(rawValue: "verify.missingFile")
        /// A pack's bytes do not hash to its name, or its size differs from the manifest.
        public static let packCorrupt = Code(rawValue: "verify.packCorrupt")
        /// An entry inside a pack does not match its file record.
        public static let entryCorrupt = Code(rawValue: "verify.entryCorrupt")
        /// A manifest file's bytes differ from the SHA-256 or size `catalog.json` pins for it.
        public static let manifestPinMismatch = Code(rawValue: "verify.manifestPinMismatch")
        /// A manifest refers to a pack, tag or entry it does not define.
        public static let danglingReference = Code(rawValue: "verify.danglingReference")

        // Publishing.
        /// `rclone` (needed for a `remote:path` destination) is not installed or not on `PATH`.
        public static let publishToolMissing = Code(rawValue: "publish.toolMissing")
        /// The destination refused to list, write or rename a file (unwritable folder, a remote
        /// that failed, a path that is not a folder).
        public static let publishDestination = Code(rawValue: "publish.destination")
        /// A file read back from the destination differs from the one uploaded (size or SHA-256).
        public static let publishReadBack = Code(rawValue: "publish.readBack")
        /// A file the catalog names is a symbolic link or not a regular file (publish copies only
        /// the catalog folder's own regular files), or its bytes differ from its id or pin.
        public static let publishSource = Code(rawValue: "publish.source")
        /// The public URL serves an older `catalog.json`, or a pack it names does not answer.
        public static let publishStaleEdge = Code(rawValue: "publish.staleEdge")
    }

    /// What went wrong, as a stable code.
    public var code: Code
    /// A sentence for humans that says what happened and what to do.
    public var message: String
    /// The file the error is about (rules file, manifest, pack), when there is one.
    public var file: String?
    /// The key inside `file`, as a dotted path, when there is one.
    public var key: String?
    /// The offending value, rendered as text, when there is one.
    public var value: String?
    /// The underlying error, when this one wraps another.
    public var cause: (any Error & Sendable)?

    /// Creates an error.
    public init(
        _ code: Code, _ message: String, file: String? = nil, key: String? = nil, value: String? = nil,
        cause: (any Error & Sendable)? = nil
    ) {
        self.code = code
        self.message = message
        self.file = file
        self.key = key
        self.value = value
        self.cause = cause
    }

    /// A `catalog.invalidDistribution` error when `name` is not a valid distribution name: 1...128
    /// letters, digits, `.`, `_` or `-` (the rule tag names follow too).
    static func checkDistributionName(_ name: String, key: String) throws(BuildError) {
        guard TagRecord.problem(inName: name) != nil else { return }
        throw BuildError(
            .invalidDistribution,
            "a distribution name uses 1 to 128 letters, digits, '.', '_' or '-' (for example 'live' or 'beta-2'); '\(name)' does not",
            key: key, value: "'\(name)'")
    }

    /// `[code] ` followed by ``detail``: what tests and logs match.
    public var description: String { "[\(code.rawValue)] \(detail)" }

    /// Where the error is (file, key, value) and the message, without the code:
    /// `SampleAssets/odr.json: tags.level1.preservationPriority = 1.5: preservation priorities go ...`.
    /// The tools print it as `error[<code>]: <detail>`.
    public var detail: String {
        var location = ""
        if let file { location += file }
        if let key { location += location.isEmpty ? key : ": \(key)" }
        // A value with no file or key names itself (`[publish.toolMissing] rclone: ...`), not ` = rclone`.
        if let value { location += location.isEmpty ? value : " = \(value)" }
        var text = ""
        if !location.isEmpty { text += "\(location): " }
        text += message
        if let cause { text += " (\(Self.readable(cause)))" }
        return text
    }

    /// A cause as a sentence: Foundation's file errors by their description ("The file “odr.json”
    /// couldn’t be opened because there is no such file."), never as an `NSCocoaErrorDomain` dump.
    static func readable(_ cause: any Error) -> String {
        if cause is CocoaError || cause is POSIXError { return (cause as NSError).localizedDescription }
        let nsError = cause as NSError
        if nsError.domain == NSCocoaErrorDomain || nsError.domain == NSPOSIXErrorDomain { return nsError.localizedDescription }
        return "\(cause)"
    }
}
