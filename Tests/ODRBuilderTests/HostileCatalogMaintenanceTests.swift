import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// `odrpack verify` and `inspect` on catalogs whose numbers no build writes: a typed error or a
/// sensible total, never a trap.
struct HostileCatalogMaintenanceTests {
    /// A built catalog whose version 1 manifest is replaced by `mutate`'s, written without validation.
    func catalog(_ mutate: (inout VersionManifest) -> Void) async throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}}"#)
        try fixture.write("A/one.txt", String(repeating: "one ", count: 200))
        try fixture.write("B/two.txt", "two")
        try await fixture.build()
        var manifest = try fixture.manifest(1)
        mutate(&manifest)
        try JSONEncoder().encode(manifest).write(to: fixture.output.appending(path: "versions/1.json"))
        return fixture
    }

    static let hostile: [(String, @Sendable (inout VersionManifest) -> Void)] = [
        ("header offset near Int64.max", { $0.files[0].headerOffset = Int64.max - 1 }),
        ("pack sizes adding up beyond Int64.max", { manifest in
            for i in manifest.packs.indices { manifest.packs[i].archiveBytes = Int64.max / 2 + 1 }
        }),
        ("installed sizes adding up beyond Int64.max", { manifest in
            for i in manifest.packs.indices { manifest.packs[i].installedBytes = Int64.max - 1 }
        }),
    ]

    @Test(arguments: hostile.indices)
    func verifyAndInspectReportAnInvalidManifest(_ index: Int) async throws {
        let fixture = try await catalog(Self.hostile[index].1)
        func isMalformedManifest(_ error: any Error) -> Bool {
            let error = error as? BuildError
            return error?.code == .catalogMalformed && error?.file?.hasSuffix("versions/1.json") == true
        }
        #expect(performing: { try CatalogVerifier(catalog: fixture.catalog).verify() }, throws: isMalformedManifest)
        #expect(performing: { try CatalogInspection(catalog: fixture.catalog).rendered() }, throws: isMalformedManifest)
    }

    /// The commands themselves print the typed error and exit with status 1.
    @Test(.enabled(if: builtExecutable(named: "odrpack") != nil), arguments: hostile.indices)
    func odrpackVerifyAndInspectPrintTheErrorAndExitOne(_ index: Int) async throws {
        let fixture = try await catalog(Self.hostile[index].1)
        let odrpack = try #require(builtExecutable(named: "odrpack"))
        for command in ["verify", "inspect"] {
            let result = try runCommand(odrpack.path, [command, fixture.output.path])
            #expect(result.status == 1, "\(command): \(result.stderr)")
            #expect(result.stderr.hasPrefix("error[catalog.malformed]: ") && result.stderr.contains("versions/1.json"), "\(command): \(result.stderr)")
        }
    }

    /// A tag listing one huge pack many times, whose total overflowed in the verifier, is
    /// refused when the manifest is read: every sum over a tag's packs then fits.
    @Test func verifyRefusesATagListingAPackTwice() async throws {
        let fixture = try await catalog { manifest in
            manifest.packs[0].archiveBytes = Int64.max / 4
            let tag = manifest.tags.firstIndex { $0.packs.contains(manifest.packs[0].id) }!
            manifest.tags[tag].packs = Array(repeating: manifest.packs[0].id, count: 8)
        }
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: { error in
            let error = error as? BuildError
            return error?.code == .catalogMalformed && error?.key?.hasSuffix(".packs[1]") == true
        }
    }

    /// An inspection of a manifest nobody validated (decoded directly) saturates its totals.
    @Test func inspectionTotalsSaturateRatherThanTrap() async throws {
        let fixture = try await catalog { _ in }
        var inspection = try CatalogInspection(catalog: fixture.catalog)
        for i in inspection.manifest.packs.indices {
            inspection.manifest.packs[i].archiveBytes = Int64.max
            inspection.manifest.packs[i].installedBytes = Int64.max
        }
        let text = inspection.rendered()
        #expect(text.contains("8388608.0 TiB download, 8388608.0 TiB installed"), "\(text)")
    }

    /// `--expires-in 1e300` (or inf) made the expiry time too large for whole seconds, which trapped.
    @Test(arguments: [1e300, Double.infinity, 36_501.0 * 86_400])
    func anExpiryBeyondAHundredYearsIsRefused(seconds: Double) throws {
        let error = #expect(throws: BuildError.self) { _ = try CatalogSigning(keys: [SigningKey.generate()], expiresIn: seconds) }
        #expect(error?.code == .signingInvalid)
        #expect(throws: Never.self) { _ = try CatalogSigning(keys: [SigningKey.generate()], expiresIn: CatalogSigning.maximumExpiresIn) }
    }
}
