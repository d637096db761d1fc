import Foundation
import ODRFormat
import ODRTestSupport
import Testing

/// Ed25519 keys, the canonical bytes a catalog signature covers, thresholds, key rotation, and
/// the test vector of docs/FORMAT.md (checked here and by Python's `cryptography`).
struct SigningTests {
    static let seedA = Data(0..<32)
    static let seedB = Data((0..<32).map { UInt8(100 + $0) })

    static func sampleIndex() -> CatalogIndex {
        CatalogIndex(id: "game \"é\" \\ ü", serial: 4, distributions: ["live": 1, "beta10": 2, "beta2": 2],
                     versions: [.init(number: 1, manifest: "versions/1.json", sha256: String(repeating: "a", count: 64), size: 10),
                                .init(number: 2, manifest: "versions/2.json", sha256: String(repeating: "b", count: 64), size: 20)])
    }

    static let future = Date(timeIntervalSince1970: 1_900_000_000)

    @Test func signedCatalogVerifiesAfterItsFileRoundTrip() throws {
        let key = try SigningKey(seed: Self.seedA)
        let signed = try Self.sampleIndex().signed(with: [key], expires: Self.future)
        let decoded = try CatalogIndex.decode(from: try signed.encoded())
        #expect(decoded.expires == "2030-03-17T17:46:40Z")
        let trust = try TrustedKeySet(keys: [key.publicKey])
        #expect(try decoded.verifySignatures(trusting: trust) == trust)
    }

    @Test func reserializedCatalogStillVerifiesButAnyChangedValueDoesNot() throws {
        let key = try SigningKey(seed: Self.seedA)
        let data = try Self.sampleIndex().signed(with: [key], expires: Self.future).encoded()
        // Other key order and whitespace: parse and write it again compactly, unsorted.
        let object = try JSONSerialization.jsonObject(with: data)
        let compact = try JSONSerialization.data(withJSONObject: object, options: [])
        #expect(compact != data)
        let trust = try TrustedKeySet(keys: [key.publicKey])
        _ = try CatalogIndex.decode(from: compact).verifySignatures(trusting: trust)

        var tampered = try CatalogIndex.decode(from: data)
        tampered.serial += 1
        #expect(throws: FormatError.self) { try tampered.verifySignatures(trusting: trust) }
        tampered = try CatalogIndex.decode(from: data)
        tampered.versions[0].sha256 = String(repeating: "c", count: 64)
        let error = try #require(throws: FormatError.self) { try tampered.verifySignatures(trusting: trust) }
        #expect(error.code == .untrustedSignature)
    }

    @Test func thresholdCountsDistinctTrustedKeysOnly() throws {
        let a = try SigningKey(seed: Self.seedA), b = try SigningKey(seed: Self.seedB), stranger = SigningKey.generate()
        let twoOfTwo = try TrustedKeySet(keys: [a.publicKey, b.publicKey], threshold: 2)
        let byA = try Self.sampleIndex().signed(with: [a, stranger], expires: Self.future)
        #expect(throws: FormatError.self) { try byA.verifySignatures(trusting: twoOfTwo) }
        var duplicated = byA
        duplicated.signatures = (byA.signatures ?? []) + (byA.signatures ?? [])
        #expect(throws: FormatError.self) { try duplicated.verifySignatures(trusting: twoOfTwo) }
        let byBoth = try Self.sampleIndex().signed(with: [a, b], expires: Self.future)
        #expect(try byBoth.verifySignatures(trusting: twoOfTwo) == twoOfTwo)
        #expect(throws: FormatError.self) { try Self.sampleIndex().verifySignatures(trusting: twoOfTwo) }
        #expect(throws: FormatError.self) { try TrustedKeySet(keys: [a.publicKey], threshold: 2) }
    }

    @Test func rotationLeadsFromTheOldKeysToTheNewAndNotBack() throws {
        let old = try SigningKey(seed: Self.seedA), new = try SigningKey(seed: Self.seedB), attacker = SigningKey.generate()
        let shipped = try TrustedKeySet(keys: [old.publicKey])
        let rotated = try Self.sampleIndex().rotatingKeys(to: [new.publicKey], threshold: 1, signedBy: [old])
            .signed(with: [new], expires: Self.future)
        let reached = try CatalogIndex.decode(from: rotated.encoded()).verifySignatures(trusting: shipped)
        #expect(reached.version == 2 && reached.keys == [new.publicKey])

        // A client at key set 2 no longer accepts the old key alone.
        let byOldKey = try rotated.signed(with: [old], expires: Self.future)
        let error = try #require(throws: FormatError.self) { try byOldKey.verifySignatures(trusting: reached) }
        #expect(error.code == .untrustedSignature)

        // A rotation signed by a key the client does not trust leads nowhere.
        let forged = try Self.sampleIndex().rotatingKeys(to: [attacker.publicKey], threshold: 1, signedBy: [attacker])
            .signed(with: [attacker], expires: Self.future)
        #expect(throws: FormatError.self) { try forged.verifySignatures(trusting: shipped) }
    }

    @Test func keyFilesRoundTripWithPrivateModeAndRefuseMixUps() throws {
        let directory = try TemporaryDirectory()
        let url = directory.appending("release.key")
        let key = SigningKey.generate()
        try key.write(to: url)
        let mode = try #require(FileManager.default.attributesOfItem(atPath: url.path)[.posixPermissions] as? NSNumber)
        #expect(mode.intValue & 0o777 == 0o600)
        let publicURL = directory.appending("release.key.pub")
        #expect(try PublicSigningKey.load(from: publicURL) == key.publicKey)
        #expect(try SigningKey.load(from: url).publicKey == key.publicKey)
        #expect(key.publicKey.id == ContentHash.sha256Hex(of: key.publicKey.rawBytes))

        let asPrivate = try #require(throws: FormatError.self) { try SigningKey.load(from: publicURL) }
        #expect(asPrivate.code == .invalidKey && asPrivate.message.contains("public key"))
        let asPublic = try #require(throws: FormatError.self) { try PublicSigningKey.load(from: url) }
        #expect(asPublic.code == .invalidKey)
        let again = try #require(throws: FormatError.self) { try SigningKey.generate().write(to: url) }
        #expect(again.code == .io)
        #expect(try SigningKey.load(from: url).publicKey == key.publicKey, "an existing key is never overwritten")
    }

    @Test(arguments: ["2030-01-01T00:00:00Z", "1999-12-31T23:59:59Z", "2024-02-29T12:00:00Z"])
    func expiryTextRoundTrips(_ text: String) throws {
        let date = try #require(CatalogExpiry.date(from: text))
        #expect(CatalogExpiry.text(for: date) == text)
    }

    @Test(arguments: ["2030-01-01T00:00:00", "2030-01-01 00:00:00Z", "2023-02-29T00:00:00Z", "2030-13-01T00:00:00Z", "2030-01-01T24:00:00Z"])
    func malformedExpiryIsRefused(_ text: String) {
        #expect(CatalogExpiry.date(from: text) == nil)
    }

    // MARK: The documented vector

    struct Vector {
        var seed: Data, publicKey: String, keyID: String, signed: String, catalogJSON: Data
    }

    /// The vector between `<!-- signing-vector -->` markers in docs/FORMAT.md.
    static func documentedVector() throws -> Vector {
        let docs = URL(filePath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .appending(path: "docs/FORMAT.md")
        let text = try String(contentsOf: docs, encoding: .utf8)
        let start = try #require(text.range(of: "<!-- signing-vector -->")), end = try #require(text.range(of: "<!-- /signing-vector -->"))
        let block = String(text[start.upperBound..<end.lowerBound])
        var fields: [String: String] = [:]
        for line in block.split(separator: "\n") {
            for name in ["seed", "public key", "key id", "signed"] where line.hasPrefix(name + " ") {
                fields[name] = line.dropFirst(name.count).trimmingCharacters(in: .whitespaces)
            }
        }
        let json = try #require(block.components(separatedBy: "```json\n").last?.components(separatedBy: "```").first)
        let seedHex = try #require(fields["seed"])
        return Vector(seed: Data(try #require(HexDigest.bytes(ofHex: seedHex, count: 32))),
                      publicKey: try #require(fields["public key"]), keyID: try #require(fields["key id"]),
                      signed: try #require(fields["signed"]).replacingOccurrences(of: "\\n", with: "\n"), catalogJSON: Data(json.utf8))
    }

    @Test func documentedVectorVerifies() throws {
        let vector = try Self.documentedVector()
        let key = try SigningKey(seed: vector.seed)
        #expect(key.publicKey.hex == vector.publicKey)
        #expect(key.publicKey.id == vector.keyID)
        let index = try CatalogIndex.decode(from: vector.catalogJSON)
        #expect(String(decoding: index.signedBytes(), as: UTF8.self) == vector.signed)
        let trust = try TrustedKeySet(keys: [try PublicSigningKey(hex: vector.publicKey)])
        _ = try index.verifySignatures(trusting: trust)
        // Ed25519 is deterministic: signing the vector again reproduces the documented signature.
        let again = try index.signed(with: [key], expires: try #require(index.expiryDate))
        #expect(again.signatures == index.signatures)
    }

    static let pythonVerifier = """
        import hashlib, json, sys
        from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
        doc = json.load(open(sys.argv[1], encoding="utf-8"))
        raw = bytes.fromhex(sys.argv[2])
        payload = {k: v for k, v in doc.items() if k != "signatures"}
        message = b"odr-catalog-v1\\n" + json.dumps(payload, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode()
        keyid = hashlib.sha256(raw).hexdigest()
        sigs = [s for s in doc.get("signatures", []) if s["keyid"] == keyid]
        assert sigs, "no signature by " + keyid
        Ed25519PublicKey.from_public_bytes(raw).verify(bytes.fromhex(sigs[0]["sig"]), message)
        print("verified")
        """

    @Test func pythonVerifiesOurSignature() throws {
        let directory = try TemporaryDirectory()
        let script = directory.appending("verify.py")
        try Data(Self.pythonVerifier.utf8).write(to: script)
        // The documented vector, and a catalog Swift signs now with escapes and numeric-looking keys.
        let vector = try Self.documentedVector()
        try vector.catalogJSON.write(to: directory.appending("vector.json"))
        let key = SigningKey.generate()
        try Self.sampleIndex().signed(with: [key], expires: Self.future).encoded().write(to: directory.appending("fresh.json"))
        for (file, publicKey) in [("vector.json", vector.publicKey), ("fresh.json", key.publicKey.hex)] {
            let result = try runCommand("python3", [script.path, directory.appending(file).path, publicKey])
            #expect(result.status == 0 && result.stdout.contains("verified"), "\(file): \(result.stderr)")
        }
        // And Python refuses a changed value.
        var tampered = try CatalogIndex.decode(from: Data(contentsOf: directory.appending("fresh.json")))
        tampered.distributions["live"] = 2
        try tampered.encoded().write(to: directory.appending("tampered.json"))
        let refused = try runCommand("python3", [script.path, directory.appending("tampered.json").path, key.publicKey.hex])
        #expect(refused.status != 0 && refused.stderr.contains("InvalidSignature"))
    }
}
