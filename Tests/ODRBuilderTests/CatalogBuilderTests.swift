import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

struct CatalogBuilderTests {
    @Test func buildsTheSampleGameIntoAVerifiedCatalog() async throws {
        let fixture = try BuildFixture()
        let report = try await fixture.build(assets: BuildFixture.sampleAssets, cached: false)
        let manifest = try fixture.manifest(1)
        let index = try fixture.index()

        #expect(index.id == "sample-game")
        #expect(index.distributions == ["live": 1])
        #expect(report.publishedNewVersion && report.version == 1)
        #expect(manifest.initialInstallTags == ["base", "tutorial"])
        #expect(manifest.prefetchOrder == ["level1", "level2"])
        #expect(manifest.tags.map(\.name) == ["base", "level1", "level2", "level3", "level4", "level5", "tutorial"])
        // Shared neighbour sets, the deduplicated click, and level 5 split over the pack limit.
        #expect(manifest.packs.contains { $0.tags == ["level1", "level2"] })
        #expect(manifest.packs.contains { $0.tags == ["base", "tutorial"] })
        #expect(manifest.packs.filter { $0.tags == ["level5"] }.count == 2)
        #expect(report.warnings.map(\.code) == [.splitPack])
        #expect(report.duplicateFiles == 1)
        let click = try #require(manifest.makeIndex().file(atPath: "Tutorial/click.wav"))
        #expect(click.entry == "Tutorial/click.wav" || click.entry == "UI/Sounds/click.wav")
        #expect(manifest.makeIndex().file(atPath: "UI/Sounds/click.wav")?.pack == click.pack)
        // Excluded and non-asset files stay out.
        #expect(!manifest.files.contains { $0.path.hasSuffix(".psd") || $0.path == "generate.py" || $0.path == "odr.json" })

        // Every pack is a standard ZIP that unzip accepts, and the catalog verifies.
        let packFiles = try FileManager.default.contentsOfDirectory(atPath: fixture.output.appending(path: "packs").path)
        #expect(packFiles.sorted() == manifest.packs.map { "\($0.id).zip" }.sorted())
        for pack in manifest.packs {
            let result = try run("unzip", ["-t", fixture.catalog.packURL(id: pack.id).path])
            #expect(result.status == 0, "\(result.output)")
        }
        let summary = try CatalogVerifier(catalog: fixture.catalog).verify()
        #expect(summary.packs == manifest.packs.count)
        #expect(summary.files == manifest.files.count)
    }

    @Test func theSameInputsGiveByteIdenticalCatalogs() async throws {
        let fixture = try BuildFixture()
        let first = fixture.directory.appending("first")
        let second = fixture.directory.appending("second")
        try await fixture.build(assets: BuildFixture.sampleAssets, output: first, cached: false)
        try await fixture.build(assets: BuildFixture.sampleAssets, output: second, cached: false) { $0.concurrency = 1 }
        let a = try fixture.snapshot(of: first)
        let b = try fixture.snapshot(of: second)
        #expect(a.keys.sorted() == b.keys.sorted())
        #expect(a == b)
    }

    @Test func aRebuildWithNothingChangedHashesNothingAndPublishesNothing() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}}"#)
        try fixture.write("A/one.txt", String(repeating: "one ", count: 500))
        try fixture.write("B/two.txt", "two")
        let first = try await fixture.build()
        #expect(first.hashedFiles == 2)
        let before = try fixture.snapshot()
        // The cache is written atomically (a new inode) only when it changes.
        func cacheInode() throws -> UInt64? {
            try (FileManager.default.attributesOfItem(atPath: fixture.cache.path)[.systemFileNumber] as? NSNumber)?.uint64Value
        }
        let cacheBefore = try cacheInode()
        #expect(cacheBefore != nil)

        let second = try await fixture.build()
        #expect(second.hashedFiles == 0)
        #expect(!second.publishedNewVersion)
        #expect(second.version == 1)
        #expect(second.packs.allSatisfy { $0.reused })
        #expect(try fixture.snapshot() == before)
        #expect(try cacheInode() == cacheBefore, "a rebuild with nothing changed rewrote the build cache")

        let uncached = try await fixture.build(cached: false)
        #expect(uncached.hashedFiles == 2)
        #expect(!uncached.publishedNewVersion)
    }

    @Test func aChangedFileAddsAVersionAndLeavesOtherPacksUntouched() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}}"#)
        try fixture.write("A/one.txt", "one")
        try fixture.write("B/two.txt", "two")
        try await fixture.build()
        let v1 = try fixture.manifest(1)
        let packB = try #require(v1.packs.first { $0.tags == ["b"] })
        let packBURL = fixture.catalog.packURL(id: packB.id)
        let packBTime = try FileManager.default.attributesOfItem(atPath: packBURL.path)[.modificationDate] as? Date
        let v1Bytes = try Data(contentsOf: fixture.output.appending(path: "versions/1.json"))

        try fixture.write("A/one.txt", "one, edited")
        let report = try await fixture.build()
        #expect(report.version == 2 && report.publishedNewVersion)
        #expect(report.hashedFiles == 1)
        let v2 = try fixture.manifest(2)
        #expect(v2.packs.first { $0.tags == ["b"] }?.id == packB.id)
        #expect(v2.packs.first { $0.tags == ["a"] }?.id != v1.packs.first { $0.tags == ["a"] }?.id)
        let packBTimeAfter = try FileManager.default.attributesOfItem(atPath: packBURL.path)[.modificationDate] as? Date
        #expect(packBTimeAfter == packBTime)
        #expect(try Data(contentsOf: fixture.output.appending(path: "versions/1.json")) == v1Bytes)
        let index = try fixture.index()
        #expect(index.versions.map(\.number) == [1, 2])
        #expect(index.distributions == ["live": 2])
        #expect(index.serial == 2)
        #expect(report.packs.first { $0.tags == ["b"] }?.reused == true)
    }

    @Test func aPublishedFileIsNeverOverwritten() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", "one")
        try await fixture.build()
        let indexBefore = try Data(contentsOf: fixture.output.appending(path: "catalog.json"))
        try Data("someone else's version 2\n".utf8).write(to: fixture.output.appending(path: "versions/2.json"))
        try fixture.write("A/one.txt", "changed")
        await #expect { try await fixture.build() } throws: { error in
            (error as? BuildError)?.code == .immutableConflict
        }
        #expect(try Data(contentsOf: fixture.output.appending(path: "catalog.json")) == indexBefore)
        #expect(try String(contentsOf: fixture.output.appending(path: "versions/2.json"), encoding: .utf8) == "someone else's version 2\n")
    }

    @Test func aPackWhoseBytesAlreadyExistIsNotRewritten() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", String(repeating: "one", count: 100))
        try await fixture.build()
        let pack = try #require(try fixture.manifest(1).packs.first)
        let url = fixture.catalog.packURL(id: pack.id)
        let old = Date(timeIntervalSince1970: 1_000_000)
        try FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: url.path)
        // Lose the index and manifests (an interrupted publish): the pack is written again to a
        // temporary file, found to exist under its hash, and left alone.
        try FileManager.default.removeItem(at: fixture.output.appending(path: "catalog.json"))
        try FileManager.default.removeItem(at: fixture.output.appending(path: "versions"))
        let report = try await fixture.build(cached: false)
        #expect(report.packs.map(\.id) == [pack.id])
        #expect(report.packs.first?.reused == false)
        #expect(try FileManager.default.attributesOfItem(atPath: url.path)[.modificationDate] as? Date == old)
        #expect(try FileManager.default.contentsOfDirectory(atPath: fixture.output.appending(path: "packs").path) == ["\(pack.id).zip"])
    }

    @Test func hiddenFilesAreIgnoredAndDistributionsAreNamed() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"all": ["**"]}}"#)
        try fixture.write("A/one.txt", "one")
        try fixture.write("A/.DS_Store", "junk")
        try fixture.write(".git/config", "junk")
        let report = try await fixture.build { $0.distribution = "test" }
        #expect(try fixture.manifest(1).files.map(\.path) == ["A/one.txt"])
        #expect(try fixture.index().distributions == ["test": 1])
        #expect(report.distribution == "test")
    }

    @Test func untaggedFilesFailTheBuildBeforeAnythingIsWritten() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", "one")
        try fixture.write("Loose/stray.txt", "stray")
        await #expect { try await fixture.build() } throws: { error in
            (error as? BuildError)?.code == .untaggedFiles && "\(error)".contains("Loose/stray.txt")
        }
        #expect(!FileManager.default.fileExists(atPath: fixture.output.path))
    }

    @Test func aCatalogKeepsItsID() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"catalogID": "first", "tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", "one")
        try await fixture.build()
        await #expect { try await fixture.build { $0.catalogID = "second" } } throws: { error in
            (error as? BuildError)?.code == .catalogIDMismatch
        }
    }

    @Test func cacheEntriesAreKeyedOnModificationTime() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", "one")
        try await fixture.build()
        let file = fixture.assets.appending(path: "A/one.txt")
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_000_000)], ofItemAtPath: file.path)
        let report = try await fixture.build()
        #expect(report.hashedFiles == 1)
        #expect(!report.publishedNewVersion)
    }
}
