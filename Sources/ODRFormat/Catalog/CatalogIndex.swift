#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The contents of `catalog.json`: the one mutable file of a catalog.
///
/// It names the catalog, says which version each distribution (`live`, `test`, ...) points at, and
/// lists every published version with the path, SHA-256 and size of its manifest. Clients fetch it
/// conditionally and refuse one whose ``serial`` is lower than the highest they have seen. A signed
/// index also carries an ``expires`` time and ``signatures`` (see `CatalogIndex+Signing.swift` and
/// docs/FORMAT.md, "Signatures"), so a client with trusted keys accepts only what the builder signed.
///
/// ```swift
/// let index = try CatalogIndex.decode(from: Data(contentsOf: root.appending(path: CatalogIndex.fileName)))
/// if let live = index.distributions["live"] { print("live is version \(live)") }
/// ```
public struct CatalogIndex: Codable, Sendable, Equatable {
    /// The file name of the index at the root of a catalog directory.
    public static let fileName = "catalog.json"
    /// The format version this library writes and reads.
    public static let currentFormatVersion = 1

    /// One published version of the catalog.
    public struct VersionEntry: Codable, Sendable, Equatable {
        /// The version number, starting at 1.
        public var number: Int
        /// The path of the version's manifest, relative to the catalog root (`versions/7.json`):
        /// inside the catalog by ``RelativePath/problem(inCatalogPath:)``, which validation checks.
        public var manifest: String
        /// The SHA-256 of the manifest file's bytes, which pins the manifest (and through it every
        /// pack); `nil` in catalogs written before signing existed.
        public var sha256: String?
        /// The manifest file's size in bytes; `nil` when ``sha256`` is.
        public var size: Int64?

        public init(number: Int, manifest: String, sha256: String? = nil, size: Int64? = nil) {
            self.number = number
            self.manifest = manifest
            self.sha256 = sha256
            self.size = size
        }
    }

    /// The format version of this file.
    public var formatVersion: Int
    /// The catalog's identifier, the same for all its versions.
    public var id: String
    /// A number that increases with every change of this file (rollback protection).
    public var serial: Int
    /// Distribution name -> version number (for example `"live": 7, "test": 8`).
    public var distributions: [String: Int]
    /// Every published version, ascending by number.
    public var versions: [VersionEntry]
    /// When a signed index stops being trusted, as UTC `YYYY-MM-DDTHH:MM:SSZ`; `nil` when unsigned.
    /// Clients with trusted keys refuse an expired index from the network (`catalog-expired`).
    public var expires: String?
    /// Changes of the signing keys, oldest first: each is signed by the keys before it, so a
    /// client that trusts the first keys follows the chain to the current ones.
    public var keyRotations: [KeyRotation]?
    /// Signatures over ``signedBytes()``; `nil` for an unsigned index.
    public var signatures: [CatalogSignature]?

    public init(
        formatVersion: Int = CatalogIndex.currentFormatVersion,
        id: String,
        serial: Int,
        distributions: [String: Int],
        versions: [VersionEntry],
        expires: String? = nil,
        keyRotations: [KeyRotation]? = nil,
        signatures: [CatalogSignature]? = nil
    ) {
        self.formatVersion = formatVersion
        self.id = id
        self.serial = serial
        self.distributions = distributions
        self.versions = versions
        self.expires = expires
        self.keyRotations = keyRotations
        self.signatures = signatures
    }

    /// The entry of version `number`, if it is published.
    public func version(_ number: Int) -> VersionEntry? {
        versions.first { $0.number == number }
    }

    /// Decodes and validates `catalog.json`.
    ///
    /// - Throws: ``FormatError`` naming the field: `malformed-json`, `unsupported-format-version`,
    ///   `invalid-value`, `invalid-path`, `duplicate` or `dangling-reference`.
    public static func decode(from data: Data) throws(FormatError) -> CatalogIndex {
        let index = try CatalogJSON.decode(CatalogIndex.self, from: data, file: fileName)
        try index.validate()
        return index
    }

    /// The file's bytes: deterministic JSON with sorted keys and a trailing newline.
    public func encoded() throws(FormatError) -> Data {
        try validate()
        return try CatalogJSON.encode(self)
    }

    /// Checks every rule of the format; see ``decode(from:)`` for the errors.
    public func validate() throws(FormatError) {
        let file = Self.fileName
        guard formatVersion == Self.currentFormatVersion else {
            throw FormatError(
                .unsupportedFormatVersion,
                "\(file) has format version \(formatVersion); this library reads version \(Self.currentFormatVersion). Update the runtime or rebuild the catalog with a matching odrpack.",
                field: "formatVersion")
        }
        guard !id.isEmpty, !id.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw FormatError(.invalidValue, "\(file) has an empty or unprintable catalog id.", field: "id")
        }
        guard serial >= 0 else {
            throw FormatError(.invalidValue, "\(file) has a negative serial (\(serial)).", field: "serial")
        }
        var seen = Set<Int>()
        for (i, entry) in versions.enumerated() {
            guard entry.number >= 1 else {
                throw FormatError(.invalidValue, "Version numbers start at 1; found \(entry.number).", field: "versions[\(i)].number")
            }
            guard seen.insert(entry.number).inserted else {
                throw FormatError(.duplicate, "Version \(entry.number) is listed twice.", field: "versions[\(i)].number")
            }
            if let problem = RelativePath.problem(inCatalogPath: entry.manifest) {
                throw FormatError(.invalidPath, "The manifest path '\(entry.manifest)' is not allowed: \(problem).", field: "versions[\(i)].manifest")
            }
            if let digest = entry.sha256, !HexDigest.isSHA256(digest) {
                throw FormatError(.invalidValue, "Version \(entry.number)'s manifest digest is not 64 lowercase hex digits.", field: "versions[\(i)].sha256")
            }
            guard (entry.sha256 == nil) == (entry.size == nil), (entry.size ?? 0) >= 0 else {
                throw FormatError(.invalidValue, "Version \(entry.number) needs both the manifest's sha256 and a size of 0 or more, or neither.",
                                  field: "versions[\(i)].size")
            }
        }
        if let expires, CatalogExpiry.date(from: expires) == nil {
            throw FormatError(.invalidValue, "expires must be a UTC time written YYYY-MM-DDTHH:MM:SSZ; found '\(expires)'.", field: "expires")
        }
        for (i, rotation) in (keyRotations ?? []).enumerated() {
            try rotation.validate(field: "keyRotations[\(i)]")
        }
        for (i, signature) in (signatures ?? []).enumerated() {
            try signature.validate(field: "signatures[\(i)]")
        }
        for (name, number) in distributions.sorted(by: { $0.key < $1.key }) {
            guard !name.isEmpty else {
                throw FormatError(.invalidValue, "A distribution has an empty name.", field: "distributions")
            }
            guard seen.contains(number) else {
                throw FormatError(
                    .danglingReference,
                    "Distribution '\(name)' points at version \(number), which the catalog does not list.",
                    field: "distributions.\(name)")
            }
        }
    }
}
