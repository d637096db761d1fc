/// The keys a client trusts to sign a catalog, and how many of them must sign.
///
/// An app ships the first set (``version`` 1, or a later one an app release brings); a catalog's
/// ``KeyRotation``s lead from it to the current set, each signed by the set before it.
///
/// ```swift
/// let trust = try TrustedKeySet(keys: [try PublicSigningKey.load(from: keyURL)], threshold: 1)
/// let current = try index.verifySignatures(trusting: trust)
/// ```
public struct TrustedKeySet: Sendable, Equatable {
    /// Which set this is: 1 for the keys an app starts with, one more for each rotation.
    public var version: Int
    /// The keys.
    public var keys: [PublicSigningKey]
    /// How many distinct keys of ``keys`` must sign (at least 1, at most the number of keys).
    public var threshold: Int

    /// A key set.
    ///
    /// - Throws: ``FormatError`` `invalid-value` when the set is empty, `threshold` is below 1 or
    ///   above the number of distinct keys, or `version` is below 1.
    public init(version: Int = 1, keys: [PublicSigningKey], threshold: Int = 1) throws(FormatError) {
        let distinct = Set(keys).count
        guard distinct > 0 else {
            throw FormatError(.invalidValue, "A trusted key set needs at least one key.", field: "keys")
        }
        guard threshold >= 1, threshold <= distinct else {
            throw FormatError(.invalidValue, "The signature threshold must be between 1 and the number of distinct keys (\(distinct)); it is \(threshold).",
                              field: "threshold")
        }
        guard version >= 1 else {
            throw FormatError(.invalidValue, "Key set versions start at 1; found \(version).", field: "version")
        }
        self.version = version
        self.keys = keys
        self.threshold = threshold
    }
}

/// A change of a catalog's signing keys, signed by the keys it replaces.
///
/// Rotation `n` names key set `n` (its keys and threshold) and carries signatures by at least the
/// threshold of set `n - 1` over ``signedBytes()``. A client that trusts set `n - 1` (shipped with
/// the app, or reached by earlier rotations) then trusts set `n`, and from then on no longer
/// trusts set `n - 1` alone.
public struct KeyRotation: Codable, Sendable, Equatable {
    /// The number of the key set this rotation introduces (2 for the first rotation).
    public var version: Int
    /// The new set's public keys, each as 64 lowercase hex digits.
    public var keys: [String]
    /// How many of ``keys`` must sign from now on.
    public var threshold: Int
    /// Signatures by the previous set over ``signedBytes()``.
    public var signatures: [CatalogSignature]

    public init(version: Int, keys: [String], threshold: Int, signatures: [CatalogSignature] = []) {
        self.version = version
        self.keys = keys
        self.threshold = threshold
        self.signatures = signatures
    }

    /// The domain tag in front of a rotation's canonical JSON, so a catalog signature can never
    /// pass for a rotation's, nor the other way round.
    public static let domain = "odr-keys-v1\n"

    /// The bytes the previous key set signs: ``domain`` then the canonical JSON of
    /// `{"keys", "threshold", "version"}`.
    public func signedBytes() -> [UInt8] {
        Array(Self.domain.utf8) + CanonicalJSON.object([
            "keys": .array(keys.map { .string($0) }), "threshold": .integer(Int64(threshold)), "version": .integer(Int64(version)),
        ]).bytes
    }

    /// The rotation to key set `version` with `keys`, signed by `previous` (the old set's private keys).
    public static func signed(version: Int, keys: [PublicSigningKey], threshold: Int, by previous: [SigningKey]) throws(FormatError) -> KeyRotation {
        var rotation = KeyRotation(version: version, keys: keys.map(\.hex), threshold: threshold)
        _ = try rotation.keySet()
        rotation.signatures = try CatalogSignature.sign(rotation.signedBytes(), with: previous)
        return rotation
    }

    /// The key set this rotation introduces.
    public func keySet() throws(FormatError) -> TrustedKeySet {
        var parsed: [PublicSigningKey] = []
        for key in keys { parsed.append(try PublicSigningKey(hex: key)) }
        return try TrustedKeySet(version: version, keys: parsed, threshold: threshold)
    }

    func validate(field: String) throws(FormatError) {
        do { _ = try keySet() } catch {
            throw FormatError(error.code, error.message, field: "\(field).\(error.field ?? "keys")")
        }
        guard version >= 2 else {
            throw FormatError(.invalidValue, "A key rotation introduces key set 2 or later; found \(version).", field: "\(field).version")
        }
        for (i, signature) in signatures.enumerated() { try signature.validate(field: "\(field).signatures[\(i)]") }
    }

    var canonical: CanonicalJSON {
        .object([
            "keys": .array(keys.map { .string($0) }), "threshold": .integer(Int64(threshold)), "version": .integer(Int64(version)),
            "signatures": .array(signatures.map(\.canonical)),
        ])
    }
}

extension TrustedKeySet: Codable {
    enum CodingKeys: String, CodingKey { case version, keys, threshold }

    /// Decodes `{"version", "keys": [hex], "threshold"}`, checking it as ``init(version:keys:threshold:)`` does.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        var keys: [PublicSigningKey] = []
        for hex in try container.decode([String].self, forKey: .keys) { keys.append(try PublicSigningKey(hex: hex)) }
        try self.init(version: try container.decode(Int.self, forKey: .version), keys: keys,
                      threshold: try container.decode(Int.self, forKey: .threshold))
    }

    public func encode(to encoder: any Encoder) throws {
        var container = encoder.container(keyedBy: CodingKeys.self)
        try container.encode(version, forKey: .version)
        try container.encode(keys.map(\.hex), forKey: .keys)
        try container.encode(threshold, forKey: .threshold)
    }
}
