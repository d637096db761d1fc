import Foundation
@testable import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// `odrpack build --split-metadata` (format 3), and verify, prune, inspect and diff on its catalogs.
struct SplitMetadataBuildTests {
    /// The files in the catalog's `meta/` folder.
    static func metaFiles(_ fixture: CatalogFixture) throws -> Set<String> {
        let folder = fixture.catalog.appending(path: SplitMetadata.folder)
        return Set(try FileManager.default.contentsOfDirectory(atPath: folder.path).filter { !$0.hasPrefix(".") })
    }

    static func fixture(tags: Int = 6) throws -> CatalogFixture {
        let names = (0..<tags).map { String(format: "t%02d", $0) }
        let fixture = try CatalogFixture(rules: """
            { "catalogID": "split-game", "tags": { \(names.map { "\"\($0)\": [\"\($0)\"]" }.joined(separator: ", ")) } }
            """)
        for name in names {
            for file in 0..<3 { try fixture.write("\(name)/f\(file).txt", Data("\(name) file \(file)\n".utf8)) }
        }
        return fixture
    }

    @Test func aSplitBuildHasTheSameManifestAsAWholeOneAndWritesMetadataFiles() async throws {
        let whole = try Self.fixture()
        try await whole.build()
        let split = try Self.fixture()
        let report = try await split.build(splitMetadata: true)

        let top = try Data(contentsOf: split.catalog.appending(path: "versions/1.json"))
        #expect(String(decoding: top, as: UTF8.self).contains("\"formatVersion\" : 3"))
        guard case .split(let manifest) = try PublishedManifest.decode(from: top) else { Issue.record("not split"); return }
        #expect(manifest.bins.count == 1)
        #expect(manifest.totals.files == 18 && manifest.totals.tags == 6 && manifest.totals.packs == 6)
        #expect(try split.manifest(1) == whole.manifest(1))
        // One bin and six tables, all written by this build.
        #expect(try Self.metaFiles(split).count == 7)
        #expect(report.splitMetadata == .init(written: 7, reused: 0))
        #expect(report.rendered().contains("split metadata: 7 metadata file(s) written"))

        // The issue's size target, in small: all of the metadata under half of the whole manifest's JSON.
        let wholeJSON = try Data(contentsOf: whole.catalog.appending(path: "versions/1.json")).count
        let metaBytes = try Self.metaFiles(split).reduce(0) { total, name in
            total + (try Data(contentsOf: split.catalog.appending(path: "meta/\(name)")).count)
        }
        #expect(top.count + metaBytes < wholeJSON / 2, "\(top.count) + \(metaBytes) against \(wholeJSON)")

        let summary = try CatalogVerifier(catalog: CatalogDirectory(root: split.catalog)).verify()
        #expect(summary.metadataFiles == 7 && summary.orphanMetadata.isEmpty && summary.packs == 6)
        let inspection = try CatalogInspection(catalog: CatalogDirectory(root: split.catalog))
        #expect(inspection.splitMetadata?.bins == 1 && inspection.splitMetadata?.tables == 6)
        #expect(inspection.rendered().contains("split metadata (format 3)"))
    }

    @Test func aChangedFileRewritesOnlyItsTableAndBin() async throws {
        let fixture = try Self.fixture(tags: 200)
        try await fixture.build(splitMetadata: true)
        let before = try Self.metaFiles(fixture)
        let split1 = try #require(try CatalogDirectory(root: fixture.catalog).loadVersion(1, in: fixture.index()).split)
        #expect(split1.bins.count == 4 && split1.tables.count == 200)
        let dates = try Dictionary(uniqueKeysWithValues: before.map { name in
            (name, try FileManager.default.attributesOfItem(atPath: fixture.catalog.appending(path: "meta/\(name)").path)[.modificationDate] as? Date)
        })

        try fixture.write("t07/f1.txt", Data("t07 file 1, changed\n".utf8))
        let report = try await fixture.build(splitMetadata: true)
        #expect(report.version == 2)
        // The changed pack's table and the bin that lists it; the other 3 bins and 199 tables are kept.
        #expect(report.splitMetadata == .init(written: 2, reused: 202))
        let after = try Self.metaFiles(fixture)
        #expect(after.count == before.count + 2 && after.isSuperset(of: before))
        for name in before {
            let date = try FileManager.default.attributesOfItem(atPath: fixture.catalog.appending(path: "meta/\(name)").path)[.modificationDate] as? Date
            #expect(date == dates[name], "\(name) was rewritten")
        }
        let directory = CatalogDirectory(root: fixture.catalog)
        let split2 = try #require(try directory.loadVersion(2, in: fixture.index()).split)
        #expect(Set(split2.files.map(\.path)).subtracting(split1.files.map(\.path)).count == 2)
        // Exactly what a client holding version 1 fetches for version 2's tag t07: its bin and table are new.
        let needed = try SplitMetadata.files(forTags: ["t07"], of: split2.manifest) { try Data(contentsOf: fixture.catalog.appending(path: $0)) }
        #expect(needed.count == 2 && needed.allSatisfy { !before.contains(String($0.path.dropFirst(5))) })

        // Nothing changed: no new version. The same assets unsplit: a new version.
        #expect(try await fixture.build(splitMetadata: true).publishedNewVersion == false)
        let unsplit = try await fixture.build()
        #expect(unsplit.publishedNewVersion && unsplit.version == 3 && unsplit.splitMetadata == nil)
        #expect(try fixture.manifest(3).files == fixture.manifest(2).files)

        let diff = try CatalogDiff(catalog: directory, from: 1, to: 2)
        #expect(diff.rendered().contains("t07"))
        // odrpack report reads split versions (through the assembler) as whole ones.
        let html = try CatalogReport(catalog: directory, version: 2, against: 1).html()
        #expect(html.contains("t07"))
    }

    @Test func theRulesKeyTurnsSplittingOn() async throws {
        let fixture = try CatalogFixture(rules: """
            { "catalogID": "g", "splitMetadata": true, "tags": { "a": ["a"] } }
            """)
        try fixture.write("a/x.txt", Data("x".utf8))
        let report = try await fixture.build(splitMetadata: nil)
        #expect(report.splitMetadata?.written == 2)
        #expect(report.metadataForm == .init(form: .split, reason: .rules))
        #expect(FileManager.default.fileExists(atPath: fixture.catalog.appending(path: "meta").path))
    }

    /// Split by default (issue 37): a new catalog is split; a catalog keeps its latest version's
    /// form unless the options or the rules say otherwise.
    @Test func aNewCatalogIsSplitAndACatalogKeepsItsForm() async throws {
        let fixture = try Self.fixture()
        let first = try await fixture.build(splitMetadata: nil)
        #expect(first.metadataForm == .init(form: .split, reason: .default))
        #expect(first.splitMetadata?.written == 7)
        let top = try Data(contentsOf: fixture.catalog.appending(path: "versions/1.json"))
        #expect(String(decoding: top, as: UTF8.self).contains("\"formatVersion\" : 3"))

        try fixture.write("t01/f0.txt", Data("changed\n".utf8))
        let kept = try await fixture.build(splitMetadata: nil)
        #expect(kept.metadataForm == .init(form: .split, reason: .catalog, keptFrom: 1) && kept.splitMetadata?.written == 2)

        // Told once: whole, and whole it stays.
        try fixture.write("t01/f0.txt", Data("changed again\n".utf8))
        let whole = try await fixture.build(splitMetadata: false)
        #expect(whole.metadataForm == .init(form: .whole, reason: .option) && whole.splitMetadata == nil)
        #expect(whole.rendered().contains("whole manifest: --whole-manifest, for runtimes that cannot read split metadata"))
        try fixture.write("t01/f0.txt", Data("changed a third time\n".utf8))
        let stays = try await fixture.build(splitMetadata: nil)
        #expect(stays.metadataForm == .init(form: .whole, reason: .catalog, keptFrom: 3))
        #expect(stays.rendered().contains("whole manifest: kept from version 3; --split-metadata switches this catalog to split metadata"))
        #expect(try VersionManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: "versions/4.json"))).formatVersion == 1)
    }

    @Test func splitMetadataFalseInTheRulesWritesAWholeManifest() async throws {
        let fixture = try CatalogFixture(rules: """
            { "catalogID": "g", "splitMetadata": false, "tags": { "a": ["a"] } }
            """)
        try fixture.write("a/x.txt", Data("x".utf8))
        let report = try await fixture.build(splitMetadata: nil)
        #expect(report.metadataForm == .init(form: .whole, reason: .rules) && report.splitMetadata == nil)
        #expect(report.rendered().contains("whole manifest: \"splitMetadata\": false in the rules"))
        #expect(try VersionManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: "versions/1.json"))).version == 1)
    }

    @Test func verifyNamesATamperedTableAndReportsOrphans() async throws {
        let fixture = try Self.fixture()
        try await fixture.build(splitMetadata: true)
        let parts = try #require(try CatalogDirectory(root: fixture.catalog).loadVersion(1, in: fixture.index()).split)
        let table = try #require(parts.files.first { $0.path.hasSuffix(".filetable") })
        let url = fixture.catalog.appending(path: table.path)
        let original = try Data(contentsOf: url)

        try Data("orphan".utf8).write(to: fixture.catalog.appending(path: "meta/\(String(repeating: "0", count: 64)).filetable"))
        let summary = try CatalogVerifier(catalog: CatalogDirectory(root: fixture.catalog)).verify()
        #expect(summary.orphanMetadata == ["meta/\(String(repeating: "0", count: 64)).filetable"])

        var damaged = original
        damaged[damaged.count - 1] ^= 0x40
        try damaged.write(to: url)
        #expect { try CatalogVerifier(catalog: CatalogDirectory(root: fixture.catalog)).verify() } throws: { error in
            let error = error as? BuildError
            return error?.code == .manifestPinMismatch && error?.file == url.path
        }
        try FileManager.default.removeItem(at: url)
        #expect { try CatalogVerifier(catalog: CatalogDirectory(root: fixture.catalog)).verify() } throws: { error in
            let error = error as? BuildError
            return error?.code == .missingFile && error?.file == url.path
        }
    }

    @Test func pruneRemovesMetadataNoKeptVersionPins() async throws {
        let fixture = try Self.fixture()
        try await fixture.build(splitMetadata: true)
        let v1 = try #require(try CatalogDirectory(root: fixture.catalog).loadVersion(1, in: fixture.index()).split)
        try fixture.write("t01/f0.txt", Data("changed\n".utf8))
        try await fixture.build(splitMetadata: true)
        let v2 = try #require(try CatalogDirectory(root: fixture.catalog).loadVersion(2, in: fixture.index()).split)
        let onlyInV1 = Set(v1.files.map(\.path)).subtracting(v2.files.map(\.path))
        #expect(onlyInV1.count == 2)

        let result = try CatalogEditor(catalog: CatalogDirectory(root: fixture.catalog)).prune(keep: 1)
        #expect(result.removedVersions == [1])
        #expect(Set(result.removedMetadata) == onlyInV1)
        for path in onlyInV1 { #expect(!FileManager.default.fileExists(atPath: fixture.catalog.appending(path: path).path)) }
        let summary = try CatalogVerifier(catalog: CatalogDirectory(root: fixture.catalog)).verify()
        #expect(summary.versions == 1 && summary.metadataFiles == v2.files.count && summary.orphanMetadata.isEmpty)
    }

    @Test func publishUploadsTheMetadataBeforeTheManifestThatPinsIt() async throws {
        let fixture = try Self.fixture()
        try await fixture.build(splitMetadata: true)
        let destination = try TemporaryDirectory(prefix: "odr-publish-split")
        let publisher = CatalogPublisher(catalog: CatalogDirectory(root: fixture.catalog), destination: .folder(destination.url))
        let objects = try publisher.objects()
        let metadata = objects.filter { $0.kind == .metadata }
        #expect(Set(metadata.map { String($0.path.dropFirst(5)) }) == (try Self.metaFiles(fixture)))
        let manifest = try #require(objects.firstIndex { $0.kind == .manifest })
        #expect(objects.lastIndex { $0.kind == .metadata }! < manifest)
        _ = try publisher.publish()
        // The published copy assembles and verifies: every bin and table arrived with its bytes.
        let published = CatalogDirectory(root: destination.url)
        #expect(try published.loadManifest(version: 1, in: published.loadIndex()) == fixture.manifest(1))
        #expect(try CatalogVerifier(catalog: published).verify().metadataFiles == 7)
    }
}
