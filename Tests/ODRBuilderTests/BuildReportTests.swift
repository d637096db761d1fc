import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

struct BuildReportTests {
    @Test func buildAndReportCountATagsFilesAlike() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}, "untagged": "base"}"#)
        try fixture.write("A/one.txt", "one")
        try fixture.write("A/same.txt", "identical content")
        try fixture.write("B/copy.txt", "identical content")
        try fixture.write("B/two.txt", "two")
        try fixture.write("loose.txt", "loose")
        let built = try await fixture.build()
        let fromManifest = BuildReport(manifest: try fixture.manifest(1), distribution: "live")
        let counts = Dictionary(uniqueKeysWithValues: built.tags.map { ($0.name, $0.files) })
        // The shared content's pack holds A/same.txt and B/copy.txt: installing a puts both on disk.
        #expect(counts == ["a": 3, "b": 3, "base": 1])
        #expect(fromManifest.tags.map(\.files) == built.tags.map(\.files))
    }

    /// Two packs of one tag set that are not the planner's split of their files (packs merged into
    /// the same tag set) are not called a split, however their sizes add up; the planner's split of
    /// a tag set over the limit still is, in the stored report as in the build's (issue 37).
    @Test func packsOfOneTagSetOverTheLimitAreASplitOnlyWhenTheySplitSo() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"], "b": ["B"]}, "limits": {"minimumPackSize": 0}}"#)
        try fixture.write("A/x.bin", deterministicBytes(count: 600, seed: 1))
        try fixture.write("A/z.bin", deterministicBytes(count: 100, seed: 2))
        try fixture.write("B/y.bin", deterministicBytes(count: 500, seed: 3))
        try await fixture.build()
        // The packs of `a` ({x, z}) and of `b` ({y}), as if merges had given both the tag set [a]:
        // two packs of one tag set, 1,200 bytes together, over a 1,000-byte limit.
        var manifest = try fixture.manifest(1)
        let aPack = try #require(manifest.packs.first { $0.tags == ["a"] }).id
        let bPack = try #require(manifest.packs.first { $0.tags == ["b"] }).id
        manifest.packs = manifest.packs.map { var pack = $0; pack.tags = ["a"]; return pack }
        manifest.tags = manifest.tags.filter { $0.name != "b" }.map { tag in
            var tag = tag
            if tag.name == "a" { tag.packs = [aPack, bPack].sorted() }
            return tag
        }
        var limits = TagRules.Limits()
        limits.packSize = 1000
        let merged = BuildReport(manifest: manifest, distribution: "live", limits: limits)
        #expect(!merged.warnings.contains { $0.code == .splitPack }, "\(merged.warnings)")
        #expect(merged.packs.allSatisfy { $0.partCount == 1 })
        #expect(!merged.rendered().contains(" part 1/"))

        // The same files split by the planner: {x} and {y, z}, the longest-first balance of 600, 500, 100.
        let split = try BuildFixture()
        try split.write("odr.json", #"{"tags": {"a": ["A", "B"]}, "limits": {"packSize": 1000, "minimumPackSize": 0}}"#)
        try split.write("A/x.bin", deterministicBytes(count: 600, seed: 1))
        try split.write("A/z.bin", deterministicBytes(count: 100, seed: 2))
        try split.write("B/y.bin", deterministicBytes(count: 500, seed: 3))
        let built = try await split.build()
        #expect(built.warnings.map(\.code) == [.splitPack])
        let stored = BuildReport(manifest: try split.manifest(1), distribution: "live", limits: limits)
        #expect(stored.warnings.map(\.code) == [.splitPack])
        #expect(stored.packs.map(\.partCount) == [2, 2] && stored.packs.map(\.part) == [1, 2])
        #expect(stored.packs.map(\.id) == built.packs.map(\.id))
    }

    @Test func reportCountsBytesPerTagSharedPacksAndWarnings() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            {"tags": {"a": ["A", "Shared"], "b": ["B", "Shared"], "ghost": ["Nowhere"]},
             "initialInstall": ["a"], "prefetchOrder": ["b"],
             "limits": {"initialInstallAndPrefetch": 10, "minimumPackSize": 0}, "untagged": "warn"}
            """)
        try fixture.write("A/a.txt", String(repeating: "a", count: 1000))
        try fixture.write("B/b.txt", "b")
        try fixture.write("Shared/s.txt", "shared")
        try fixture.write("Loose/l.txt", "loose")
        let report = try await fixture.build()
        let manifest = try fixture.manifest(1)

        #expect(report.packs.map(\.tags) == [["a"], ["a", "b"], ["b"]])
        #expect(report.sharedPacks == [try #require(manifest.packs.first { $0.tags == ["a", "b"] }).id])
        #expect(report.writtenPacks == 3)
        for tag in report.tags {
            let packs = manifest.packs.filter { $0.tags.contains(tag.name) }
            #expect(tag.downloadBytes == packs.reduce(0) { $0 + $1.archiveBytes })
            #expect(tag.installedBytes == packs.reduce(0) { $0 + $1.installedBytes })
        }
        #expect(report.tags.first { $0.name == "a" }?.files == 2)
        #expect(report.initialInstallAndPrefetchBytes == 1007)
        #expect(Set(report.warnings.map(\.code)) == [.untaggedFiles, .emptyTag, .budgetExceeded])

        // The JSON form carries the same facts for machines.
        let json = try JSONSerialization.jsonObject(with: JSONEncoder().encode(report)) as? [String: Any]
        #expect(json?["sharedPacks"] as? [String] == report.sharedPacks)
        #expect((json?["warnings"] as? [[String: Any]])?.compactMap { $0["code"] as? String }.contains("budgetExceeded") == true)
        #expect(try JSONDecoder().decode(BuildReport.self, from: JSONEncoder().encode(report)) == report)

        let text = report.rendered()
        #expect(text.contains("published version 1"))
        #expect(text.contains("warning [emptyTag]: tag 'ghost' matches no file"))
    }

    @Test func progressRunsThroughEveryPhaseToCompletion() async throws {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", #"{"tags": {"a": ["A"]}}"#)
        try fixture.write("A/one.txt", String(repeating: "one", count: 1000))
        try fixture.write("A/two.txt", "two")
        let seen = Locked<[BuildProgress]>([])
        _ = try await CatalogBuilder(options: fixture.options()).build { progress in seen.withLock { $0.append(progress) } }
        let events = seen.withLock { $0 }
        var phases: [BuildProgress.Phase] = []
        for event in events where phases.last != event.phase { phases.append(event.phase) }
        #expect(phases == [.scanning, .hashing, .writing, .publishing])
        #expect(events.last { $0.phase == .hashing }?.completedBytes == 3003)
        #expect(events.last { $0.phase == .writing }.map { $0.completedBytes == $0.totalBytes } == true)
        #expect(events.last?.fraction == 1)
    }

    /// Per tag, what a device preferring each value downloads: the sums over the packs the runtime
    /// would choose, which are the common packs and the preferred (or fallback) variants.
    @Test func variantReportShowsWhatEachValueDownloadsAsTheSumOfTheChosenPacks() async throws {
        let fixture = try BuildFixture()
        try VariantBuildTests.writeAssets(
            to: fixture,
            rules: VariantBuildTests.rules.replacingOccurrences(
                of: #""catalogID": "variants","#, with: #""catalogID": "variants", "initialInstall": ["forest"],"#))
        let report = try await fixture.build()
        let manifest = try fixture.manifest(1)
        let packs = Dictionary(uniqueKeysWithValues: manifest.packs.map { ($0.id, $0) })
        #expect(report.variantAxes == manifest.variantAxes)
        #expect(report.packs.map(\.variant) == report.packs.map { packs[$0.id]?.variant ?? ["?": "?"] })

        let forest = try #require(report.tags.first { $0.name == "forest" })
        // Over every variant: all nine forest packs (rock.png, only at 2x, has a 2x pack of its own).
        #expect(forest.packs.count == 9)
        #expect(forest.variants.map { "\($0.axis)=\($0.value)" }
                == ["resolution=1x", "resolution=2x", "resolution=3x", "texture=astc", "texture=etc2"])
        let expected: [String: [String]] = [
            // tree 1x, bark 1x astc (texture in declared order), rock only exists at 2x (its own pack).
            "resolution=1x": ["", "resolution=1x", "resolution=1x,texture=astc", "resolution=2x"],
            "resolution=2x": ["", "resolution=2x", "resolution=2x", "resolution=2x,texture=astc"],
            // No 3x bark: falls back to 1x (declared order after the preferred value).
            "resolution=3x": ["", "resolution=1x,texture=astc", "resolution=2x", "resolution=3x"],
            "texture=astc": ["", "resolution=1x", "resolution=1x,texture=astc", "resolution=2x"],
            "texture=etc2": ["", "resolution=1x", "resolution=1x,texture=etc2", "resolution=2x"],
        ]
        for choice in forest.variants {
            let chosen = choice.packs.compactMap { packs[$0] }
            #expect(chosen.map(\.variant.variantDescription).sorted() == expected["\(choice.axis)=\(choice.value)"])
            #expect(choice.downloadBytes == chosen.reduce(0) { $0 + $1.archiveBytes })
            #expect(choice.installedBytes == chosen.reduce(0) { $0 + $1.installedBytes })
            #expect(chosen.allSatisfy { $0.tags.contains("forest") })
        }
        // A tag with only common packs costs every device the same: no breakdown.
        #expect(report.tags.first { $0.name == "desert" }?.variants == [])
        // The initial-install budget counts the device that needs the most.
        #expect(report.initialInstallAndPrefetchBytes == forest.variants.map(\.installedBytes).max())

        let text = report.rendered()
        #expect(text.contains("variant axes: resolution (1x, 2x, 3x); texture (astc, etc2)"))
        #expect(text.contains("[forest] {resolution=2x,texture=astc}"))
        let line = try #require(text.split(separator: "\n").first { $0.contains("    texture=etc2") })
        #expect(line.contains("in 4 pack(s)"))
        #expect(try JSONDecoder().decode(BuildReport.self, from: JSONEncoder().encode(report)) == report)
    }
}
