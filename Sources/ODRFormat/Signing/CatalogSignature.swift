/// One signature of a signed `catalog.json` or key rotation: which key, and the Ed25519 signature.
public struct CatalogSignature: Codable, Sendable, Equatable {
    /// The signing key's id: SHA-256 of its 32-byte public key, lowercase hex.
    public var keyID: String
    /// The 64-byte Ed25519 signature, lowercase hex (128 digits).
    public var signature: String

    public init(keyID: String, signature: String) {
        self.keyID = keyID
        self.signature = signature
    }

    enum CodingKeys: String, CodingKey {
        case keyID = "keyid"
        case signature = "sig"
    }

    func validate(field: String) throws(FormatError) {
        guard HexDigest.isSHA256(keyID) else {
            throw FormatError(.invalidValue, "A signature's keyid must be 64 lowercase hex digits.", field: "\(field).keyid")
        }
        guard HexDigest.bytes(ofHex: signature, count: 64) != nil else {
            throw FormatError(.invalidValue, "A signature must be 128 lowercase hex digits (64 bytes).", field: "\(field).sig")
        }
    }

    var canonical: CanonicalJSON { .object(["keyid": .string(keyID), "sig": .string(signature)]) }

    /// Signs `message` with each key, one signature per distinct key, sorted by key id.
    static func sign(_ message: [UInt8], with keys: [SigningKey]) throws(FormatError) -> [CatalogSignature] {
        var byID: [String: CatalogSignature] = [:]
        for key in keys {
            let id = key.publicKey.id
            byID[id] = CatalogSignature(keyID: id, signature: ContentHash.hex(try key.signature(for: message)))
        }
        return byID.keys.sorted().compactMap { byID[$0] }
    }

    /// How many distinct keys of `keys` made a valid signature of `message` among `signatures`.
    static func validSigners(of message: [UInt8], in signatures: [CatalogSignature], keys: [PublicSigningKey]) -> Int {
        let byID = Dictionary(keys.map { ($0.id, $0) }, uniquingKeysWith: { first, _ in first })
        var valid = Set<String>()
        for signature in signatures where !valid.contains(signature.keyID) {
            guard let key = byID[signature.keyID], let bytes = HexDigest.bytes(ofHex: signature.signature, count: 64),
                  key.isValidSignature(bytes, for: message) else { continue }
            valid.insert(signature.keyID)
        }
        return valid.count
    }
}
