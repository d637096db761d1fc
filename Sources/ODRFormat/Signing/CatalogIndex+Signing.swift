#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

extension CatalogIndex {
    /// The domain tag in front of the canonical JSON a catalog signature covers.
    public static let signatureDomain = "odr-catalog-v1\n"

    /// Whether the index carries at least one signature.
    public var isSigned: Bool { !(signatures ?? []).isEmpty }

    /// ``expires`` as a date (`nil` when the index has none).
    public var expiryDate: Date? { expires.flatMap(CatalogExpiry.date(from:)) }

    /// The bytes every signature of this index covers: ``signatureDomain`` followed by the
    /// canonical JSON (``CanonicalJSON``) of the whole index without its `signatures` key.
    ///
    /// Whitespace and key order of the file do not matter: the same index re-serialized another way
    /// has the same signed bytes. Keys this library does not know are not covered (nor read).
    public func signedBytes() -> [UInt8] {
        var members: [String: CanonicalJSON] = [
            "formatVersion": .integer(Int64(formatVersion)),
            "id": .string(id),
            "serial": .integer(Int64(serial)),
            "distributions": .object(distributions.mapValues { .integer(Int64($0)) }),
            "versions": .array(versions.map { entry -> CanonicalJSON in
                var version: [String: CanonicalJSON] = ["number": .integer(Int64(entry.number)), "manifest": .string(entry.manifest)]
                if let sha256 = entry.sha256 { version["sha256"] = .string(sha256) }
                if let size = entry.size { version["size"] = .integer(size) }
                return .object(version)
            }),
        ]
        if let expires { members["expires"] = .string(expires) }
        if let keyRotations { members["keyRotations"] = .array(keyRotations.map(\.canonical)) }
        return Array(Self.signatureDomain.utf8) + CanonicalJSON.object(members).bytes
    }

    /// This index with ``expires`` set to `expires` and signed by every key of `keys` (replacing
    /// any signatures it had).
    ///
    /// - Throws: ``FormatError`` `invalid-value` when `keys` is empty or the index is invalid.
    public func signed(with keys: [SigningKey], expires: Date) throws(FormatError) -> CatalogIndex {
        guard !keys.isEmpty else { throw FormatError(.invalidValue, "Signing needs at least one key.", field: "signatures") }
        var index = self
        index.expires = CatalogExpiry.text(for: expires)
        index.signatures = nil
        try index.validate()
        index.signatures = try CatalogSignature.sign(index.signedBytes(), with: keys)
        return index
    }

    /// This index with one more key rotation: key set `keys` (with `threshold`) replaces the
    /// current one, signed by `previousKeys` (enough keys of the current set to meet its threshold).
    /// Sign the result with the new keys.
    public func rotatingKeys(to keys: [PublicSigningKey], threshold: Int, signedBy previousKeys: [SigningKey]) throws(FormatError) -> CatalogIndex {
        var index = self
        let (version, overflow) = (keyRotations?.map(\.version).max() ?? 1).addingReportingOverflow(1)
        guard !overflow else {
            throw FormatError(.invalidValue, "The catalog's key rotations already reach set \(Int.max); no later set can follow.", field: "keyRotations")
        }
        index.keyRotations = (keyRotations ?? []) + [try KeyRotation.signed(version: version, keys: keys, threshold: threshold, by: previousKeys)]
        return index
    }

    /// Follows the index's key rotations from `trust`, then checks that the key set reached signed it.
    ///
    /// Rotations to sets at or below `trust.version` are skipped (the client already holds a set
    /// at least that new); each later one must be the next number and carry signatures by at least
    /// the threshold of the set before it.
    ///
    /// - Returns: the key set that signed the index (`trust` itself when no rotation applied);
    ///   a client keeps it, so it no longer trusts the keys that were rotated away.
    /// - Throws: ``FormatError`` `untrusted-signature` saying what is missing.
    public func verifySignatures(trusting trust: TrustedKeySet) throws(FormatError) -> TrustedKeySet {
        var current = trust
        for rotation in (keyRotations ?? []).sorted(by: { $0.version < $1.version }) where rotation.version > current.version {
            guard rotation.version == current.version + 1 else {
                throw FormatError(.untrustedSignature, "The catalog's key rotations jump from key set \(current.version) to \(rotation.version); set \(current.version + 1) is missing.",
                                  field: "keyRotations")
            }
            let signers = CatalogSignature.validSigners(of: rotation.signedBytes(), in: rotation.signatures, keys: current.keys)
            guard signers >= current.threshold else {
                throw FormatError(.untrustedSignature, "Key rotation \(rotation.version) has \(signers) valid signature(s) by trusted key set \(current.version); it needs \(current.threshold).",
                                  field: "keyRotations")
            }
            current = try rotation.keySet()
        }
        guard isSigned else {
            throw FormatError(.untrustedSignature, "catalog.json is not signed, and this client only accepts catalogs signed by its trusted keys.",
                              field: "signatures")
        }
        let signers = CatalogSignature.validSigners(of: signedBytes(), in: signatures ?? [], keys: current.keys)
        guard signers >= current.threshold else {
            let ids = (signatures ?? []).map { String($0.keyID.prefix(12)) }.joined(separator: ", ")
            throw FormatError(.untrustedSignature, "catalog.json has \(signers) valid signature(s) by trusted keys (key set \(current.version)); it needs \(current.threshold). It is signed by: \(ids).",
                              field: "signatures")
        }
        return current
    }
}
