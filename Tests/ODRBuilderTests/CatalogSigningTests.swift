import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Signing on the builder's side: every write of a signed catalog is signed, pinned and expires;
/// a signed catalog is never rewritten unsigned; rotations are recorded; verify checks the pins.
struct CatalogSigningTests {
    static let signedAt = Date(timeIntervalSince1970: 1_800_000_000)

    func signing(_ keys: [SigningKey], days: Double = 30) throws -> CatalogSigning {
        try CatalogSigning(keys: keys, expiresIn: days * 86_400, now: { Self.signedAt })
    }

    func signedCatalog(key: SigningKey) async throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}}"#)
        try fixture.write("A/one.txt", "one")
        try fixture.write("B/two.txt", "two")
        let signing = try signing([key])
        try await fixture.build { $0.signing = signing }
        return fixture
    }

    @Test func inspectShowsSigningKeysAndExpiryAndWarnsInTheLastWeek() async throws {
        let key = SigningKey.generate()
        let fixture = try await signedCatalog(key: key)
        let fresh = try CatalogInspection(catalog: fixture.catalog, now: Self.signedAt)
        #expect(fresh.signing.keyIDs == [key.publicKey.id])
        #expect(fresh.signing.secondsToExpiry.map { abs($0 - 30 * 86_400) <= 1 } == true, "\(String(describing: fresh.signing.secondsToExpiry))")
        #expect(fresh.rendered().contains("signing: signed by 1 key(s): \(key.publicKey.id.prefix(16)); expires "))
        #expect(fresh.signing.warning == nil && !fresh.rendered().contains("warning:"))
        let late = try CatalogInspection(catalog: fixture.catalog, now: Self.signedAt.addingTimeInterval(25 * 86_400))
        #expect(late.rendered().contains("warning: catalog.json expires in 5 day(s), under 7 days"))
        let expired = try CatalogInspection(catalog: fixture.catalog, now: Self.signedAt.addingTimeInterval(32 * 86_400))
        #expect(expired.signing.warning?.contains("expired 2 day(s) ago") == true)

        let unsigned = try BuildFixture()
        try unsigned.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try unsigned.write("A/one.txt", "one")
        try await unsigned.build()
        let inspection = try CatalogInspection(catalog: unsigned.catalog)
        #expect(inspection.signing.keyIDs.isEmpty)
        #expect(inspection.rendered().contains("signing: unsigned; no expiry"))
    }

    @Test func aSignedBuildPinsEveryManifestExpiresAndVerifies() async throws {
        let key = SigningKey.generate()
        let fixture = try await signedCatalog(key: key)
        let index = try fixture.index()
        #expect(index.expires == CatalogExpiry.text(for: Self.signedAt.addingTimeInterval(30 * 86_400)))
        let pinned = try #require(index.versions.first)
        let manifest = try Data(contentsOf: fixture.output.appending(path: pinned.manifest))
        #expect(pinned.sha256 == ContentHash.sha256Hex(of: manifest) && pinned.size == Int64(manifest.count))
        _ = try index.verifySignatures(trusting: try TrustedKeySet(keys: [key.publicKey]))
    }

    @Test func aSignedCatalogIsNeverRewrittenUnsigned() async throws {
        let key = SigningKey.generate()
        let fixture = try await signedCatalog(key: key)
        let before = try Data(contentsOf: fixture.output.appending(path: CatalogIndex.fileName))
        #expect { try CatalogEditor(catalog: fixture.catalog).setDistribution("test", to: 1) } throws: {
            ($0 as? BuildError)?.code == .signingRequired
        }
        #expect(try Data(contentsOf: fixture.output.appending(path: CatalogIndex.fileName)) == before, "nothing changed")

        let serial = try fixture.index().serial
        try CatalogEditor(catalog: fixture.catalog, signing: signing([key], days: 7)).setDistribution("test", to: 1)
        let index = try fixture.index()
        #expect(index.serial == serial + 1 && index.distributions["test"] == 1)
        #expect(index.expires == CatalogExpiry.text(for: Self.signedAt.addingTimeInterval(7 * 86_400)))
        _ = try index.verifySignatures(trusting: try TrustedKeySet(keys: [key.publicKey]))
    }

    @Test func anOlderCatalogGainsPinsOnItsNextChange() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", "one")
        try await fixture.build()
        // As written before pins existed.
        var index = try fixture.index()
        for i in index.versions.indices { index.versions[i].sha256 = nil; index.versions[i].size = nil }
        try index.encoded().write(to: fixture.output.appending(path: CatalogIndex.fileName))
        #expect(try fixture.index().versions[0].sha256 == nil)

        try CatalogEditor(catalog: fixture.catalog).setDistribution("test", to: 1)
        let manifest = try Data(contentsOf: fixture.output.appending(path: "versions/1.json"))
        #expect(try fixture.index().versions[0].sha256 == ContentHash.sha256Hex(of: manifest))
        #expect(try fixture.index().signatures == nil, "an unsigned catalog stays unsigned")
    }

    @Test func signingRotatesKeysSoTheOldKeysLeadToTheNew() async throws {
        let old = SigningKey.generate(), new = SigningKey.generate()
        let fixture = try await signedCatalog(key: old)
        let index = try CatalogEditor(catalog: fixture.catalog, signing: signing([new])).sign(rotatingFrom: [old])
        #expect(index.keyRotations?.map(\.version) == [2])
        #expect(index.signatures?.map(\.keyID) == [new.publicKey.id])
        let reached = try fixture.index().verifySignatures(trusting: try TrustedKeySet(keys: [old.publicKey]))
        #expect(reached.version == 2 && reached.keys == [new.publicKey])
    }

    @Test func verifyRefusesAManifestThatDiffersFromItsPin() async throws {
        let fixture = try await signedCatalog(key: SigningKey.generate())
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
        let path = fixture.output.appending(path: "versions/1.json")
        // A valid manifest of either form, but not the one catalog.json pins.
        switch try PublishedManifest.decode(from: Data(contentsOf: path)) {
        case .full(var manifest):
            manifest.initialInstallTags = ["b"]
            try manifest.encoded().write(to: path)
        case .split(var manifest):
            manifest.initialInstallTags = ["b"]
            try manifest.encoded().write(to: path)
        }
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: {
            ($0 as? BuildError)?.code == .manifestPinMismatch
        }
    }

    @Test func keyFilesThatAreMissingOrPublicAreSigningKeyErrors() throws {
        let directory = try TemporaryDirectory()
        let url = directory.appending("release.key")
        try SigningKey.generate().write(to: url)
        #expect { try CatalogSigning(keyFiles: [directory.appending("missing.key")]) } throws: { ($0 as? BuildError)?.code == .signingKey }
        #expect { try CatalogSigning(keyFiles: [directory.appending("release.key.pub")]) } throws: {
            let error = $0 as? BuildError
            return error?.code == .signingKey && error?.message.contains("public key") == true
        }
        #expect { try CatalogSigning(keys: []) } throws: { ($0 as? BuildError)?.code == .signingInvalid }
        _ = try CatalogSigning(keyFiles: [url])
    }
}
