import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

struct CatalogMaintenanceTests {
    /// A catalog with two versions: v1 live, v2 (A changed, C added) on `test`.
    func twoVersions() async throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"], "c": ["C"]}}"#)
        try fixture.write("A/one.txt", String(repeating: "one ", count: 200))
        try fixture.write("B/two.txt", "two")
        try await fixture.build()
        try fixture.write("A/one.txt", String(repeating: "uno ", count: 200))
        try fixture.write("C/three.txt", "three")
        try await fixture.build { $0.distribution = "test" }
        return fixture
    }

    @Test func distributionsMoveAndRollBack() async throws {
        let fixture = try await twoVersions()
        let editor = CatalogEditor(catalog: fixture.catalog)
        #expect(try fixture.index().distributions == ["live": 1, "test": 2])
        let serial = try fixture.index().serial
        #expect(try editor.setDistribution("live", to: 2) == 1)
        #expect(try fixture.index().distributions == ["live": 2, "test": 2])
        #expect(try fixture.index().serial == serial + 1)
        try editor.setDistribution("live", to: 1)
        #expect(try fixture.index().distributions["live"] == 1)
        #expect { try editor.setDistribution("live", to: 7) } throws: { ($0 as? BuildError)?.code == .unknownVersion }
        for name in ["", "bad name"] {
            #expect { try editor.setDistribution(name, to: 1) } throws: { error in
                let error = error as? BuildError
                return error?.code == .invalidDistribution && error?.key == "distribution" && error?.value == "'\(name)'"
                    && error?.message.contains("distribution name") == true && error?.message.contains("tag") == false
            }
        }
    }

    @Test func pruneRemovesUnusedVersionsAndTheirPacksOnly() async throws {
        let fixture = try await twoVersions()
        let v1 = try fixture.manifest(1)
        let v2 = try fixture.manifest(2)
        let editor = CatalogEditor(catalog: fixture.catalog)

        // Both versions are used by a distribution: nothing goes.
        #expect(try editor.prune(keep: 0).removedVersions.isEmpty)
        try editor.setDistribution("live", to: 2)

        let dry = try editor.prune(keep: 0, dryRun: true)
        #expect(dry.removedVersions == [1])
        #expect(FileManager.default.fileExists(atPath: fixture.output.appending(path: "versions/1.json").path))

        let result = try editor.prune(keep: 0)
        let onlyInV1 = Set(v1.packs.map(\.id)).subtracting(v2.packs.map(\.id))
        #expect(result.removedVersions == [1])
        #expect(Set(result.removedPacks) == onlyInV1)
        #expect(!onlyInV1.isEmpty)
        #expect(try fixture.index().versions.map(\.number) == [2])
        #expect(!FileManager.default.fileExists(atPath: fixture.output.appending(path: "versions/1.json").path))
        for pack in v2.packs { #expect(FileManager.default.fileExists(atPath: fixture.catalog.packURL(id: pack.id).path)) }
        for id in onlyInV1 { #expect(!FileManager.default.fileExists(atPath: fixture.catalog.packURL(id: id).path)) }
        #expect(try CatalogVerifier(catalog: fixture.catalog).verify().versions == 1)
    }

    @Test func diffCountsTheBytesToReachTheNewVersion() async throws {
        let fixture = try await twoVersions()
        let v2 = try fixture.manifest(2)
        let diff = try CatalogDiff(catalog: fixture.catalog, from: 1, to: 2)
        #expect(diff.addedTags.isEmpty && diff.removedTags.isEmpty)
        #expect(diff.changedTags.map(\.name) == ["a", "c"])
        #expect(diff.addedFiles == ["C/three.txt"])
        #expect(diff.changedFiles == ["A/one.txt"])
        #expect(diff.removedFiles.isEmpty)
        #expect(diff.keptPacks == 1)
        let added = v2.packs.filter { diff.addedPacks.contains($0.id) }
        #expect(diff.downloadBytes == added.reduce(0) { $0 + $1.archiveBytes })
        #expect(diff.addedPacks.count == 2 && diff.removedPacks.count == 1)
        #expect(diff.rendered().contains("files added (1):\n  C/three.txt"))
    }

    @Test func diffCountsOnlyTheChangedEntriesOfANewPack() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"level": ["L"]}}"#)
        for index in 0..<6 { try fixture.write("L/\(index).txt", String(repeating: "file \(index) ", count: 2000)) }
        try await fixture.build()
        try fixture.write("L/4.txt", String(repeating: "changed ", count: 2000))
        try await fixture.build()
        let v2 = try fixture.manifest(2)
        let diff = try CatalogDiff(catalog: fixture.catalog, from: 1, to: 2)
        let pack = try #require(v2.packs.first)
        #expect(diff.addedPacks == [pack.id])
        #expect(diff.archiveBytes == pack.archiveBytes)
        // Entry 4's range: its local header and data, up to entry 5's header.
        let entries = v2.expectedEntries(inPack: pack.id).sorted { $0.headerOffset < $1.headerOffset }
        let changed = try #require(entries.firstIndex { $0.name == "L/4.txt" })
        #expect(diff.downloadBytes == entries[changed + 1].headerOffset - entries[changed].headerOffset)
        #expect(diff.changedTags.first?.downloadBytes == diff.downloadBytes)
        #expect(diff.rendered().contains("only the changed files"))
    }

    @Test func verifyReportsACorruptEntry() async throws {
        let fixture = try await twoVersions()
        let pack = try #require(try fixture.manifest(2).packs.first { $0.tags == ["b"] })
        let url = fixture.catalog.packURL(id: pack.id)
        var bytes = try Data(contentsOf: url)
        // "two" is stored uncompressed right after its local header (30 bytes + the name): flip its first byte.
        let dataStart = 30 + "B/two.txt".utf8.count
        let range = try #require(bytes.range(of: Data("two".utf8), in: dataStart..<bytes.count))
        #expect(range.lowerBound == dataStart)
        bytes[range.lowerBound] ^= 0xFF
        try bytes.write(to: url)
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: { error in
            let error = error as? BuildError
            return error?.code == .entryCorrupt && error?.file == url.path && error?.key == "B/two.txt"
        }
    }

    @Test func verifyReportsAMissingOrTruncatedPack() async throws {
        let fixture = try await twoVersions()
        let packs = try fixture.manifest(1).packs
        let truncated = fixture.catalog.packURL(id: packs[0].id)
        let bytes = try Data(contentsOf: truncated)
        try bytes.prefix(bytes.count - 10).write(to: truncated)
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: { error in
            (error as? BuildError)?.code == .packCorrupt && (error as? BuildError)?.file == truncated.path
        }
        try bytes.write(to: truncated)
        let missing = fixture.catalog.packURL(id: packs[1].id)
        try FileManager.default.removeItem(at: missing)
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: { error in
            (error as? BuildError)?.code == .missingFile && (error as? BuildError)?.file == missing.path
        }
    }

    @Test func verifyReportsTagTotalsThatDisagreeWithTheirPacks() async throws {
        let fixture = try await twoVersions()
        var manifest = try fixture.manifest(1)
        manifest.tags[0].downloadBytes += 1
        try manifest.encoded().write(to: fixture.output.appending(path: "versions/1.json"))
        #expect { try CatalogVerifier(catalog: fixture.catalog).verify() } throws: { error in
            let error = error as? BuildError
            return error?.code == .danglingReference && error?.value == "a" && error?.file?.hasSuffix("versions/1.json") == true
        }
    }

    @Test func inspectShowsTheLiveVersionByDefault() async throws {
        let fixture = try await twoVersions()
        let live = try CatalogInspection(catalog: fixture.catalog)
        #expect(live.manifest.version == 1)
        #expect(live.versions == [1, 2])
        #expect(try CatalogInspection(catalog: fixture.catalog, version: 2).manifest.tags.map(\.name) == ["a", "b", "c"])
        #expect { try CatalogInspection(catalog: fixture.catalog, version: 3) } throws: { ($0 as? BuildError)?.code == .unknownVersion }
    }

    /// Variants share a logical path: diff lists each variant on its own (it used to trap on the
    /// repeated path), prune removes only the variant packs no kept version needs, verify passes.
    @Test func diffPruneAndVerifyHandleVariantCatalogs() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {"a": ["Textures"]},
             "variants": [{"axis": "resolution", "values": ["1x", "2x", "3x"], "marker": "@", "default": "1x"}]}
            """)
        try fixture.write("Textures/tree.png", deterministicBytes(count: 2000, seed: 1))
        try fixture.write("Textures/tree@2x.png", deterministicBytes(count: 4000, seed: 2))
        try fixture.write("Textures/grass.png", deterministicBytes(count: 1000, seed: 3))
        try await fixture.build()
        try fixture.write("Textures/tree@2x.png", deterministicBytes(count: 4000, seed: 4))
        try fixture.write("Textures/rock@3x.png", deterministicBytes(count: 3000, seed: 5))
        try await fixture.build { $0.distribution = "test" }
        let v1 = try fixture.manifest(1)
        let v2 = try fixture.manifest(2)

        let diff = try CatalogDiff(catalog: fixture.catalog, from: 1, to: 2)
        #expect(diff.changedFiles == ["Textures/tree.png [resolution=2x]"])
        #expect(diff.addedFiles == ["Textures/rock.png [resolution=3x]"])
        #expect(diff.removedFiles.isEmpty)
        #expect(diff.keptPacks == 2)  // the common pack and the 1x pack
        let added = v2.packs.filter { diff.addedPacks.contains($0.id) }
        #expect(added.map(\.variant.variantDescription).sorted() == ["resolution=2x", "resolution=3x"])
        #expect(diff.downloadBytes == added.reduce(0) { $0 + $1.archiveBytes })
        #expect(diff.rendered().contains("files changed (1):\n  Textures/tree.png [resolution=2x]"))

        let editor = CatalogEditor(catalog: fixture.catalog)
        try editor.setDistribution("live", to: 2)
        let pruned = try editor.prune(keep: 0)
        let old2x = try #require(v1.packs.first { $0.variant == ["resolution": "2x"] })
        #expect(pruned.removedVersions == [1])
        #expect(pruned.removedPacks == [old2x.id])
        for pack in v2.packs { #expect(FileManager.default.fileExists(atPath: fixture.catalog.packURL(id: pack.id).path)) }
        #expect(try CatalogVerifier(catalog: fixture.catalog).verify().files == v2.files.count)
    }
}
