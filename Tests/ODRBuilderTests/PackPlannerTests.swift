import Foundation
import ODRBuilder
import ODRFormat
import Testing

struct PackPlannerTests {
    func asset(_ path: String, _ content: String) -> HashedAsset {
        HashedAsset(
            file: AssetFile(
                path: path, url: URL(filePath: "/virtual/\(path)"), size: Int64(content.utf8.count),
                modificationTime: 0, inode: 0),
            sha256: ContentHash.sha256Hex(of: Data(content.utf8)))
    }

    func rules(_ tags: [String: [String]], untagged: TagRules.UntaggedPolicy = .error, packSize: Int64? = nil) throws -> TagRules {
        var rules = TagRules(
            tags: try tags.map { TagRules.TagRule(name: $0.key, include: try $0.value.map { try GlobPattern($0) }) },
            untagged: untagged)
        if let packSize { rules.limits.packSize = packSize }
        return rules
    }

    @Test func sharedTagsGetTheirOwnPack() throws {
        let plan = try PackPlanner(rules: rules(["level1": ["L1", "Shared"], "level2": ["L2", "Shared"]]))
            .plan([asset("L1/map.json", "one"), asset("L2/map.json", "two"), asset("Shared/tree.png", "tree")])
        #expect(plan.packs.map(\.tags) == [["level1"], ["level1", "level2"], ["level2"]])
        #expect(plan.packs.map { $0.entries.map(\.name) } == [["L1/map.json"], ["Shared/tree.png"], ["L2/map.json"]])
    }

    @Test func identicalContentIsStoredOnceWithTheUnionOfTags() throws {
        let plan = try PackPlanner(rules: rules(["a": ["A"], "b": ["B"]]))
            .plan([asset("B/copy.png", "same"), asset("A/orig.png", "same"), asset("A/other", "other")])
        #expect(plan.packs.map(\.tags) == [["a"], ["a", "b"]])
        let shared = try #require(plan.packs.last?.entries.first)
        #expect(shared.name == "A/orig.png")
        #expect(shared.paths == ["A/orig.png", "B/copy.png"])
        #expect(plan.duplicateFiles == 1)
        #expect(plan.bytesSavedByDeduplication == 4)
    }

    @Test func largeTagSetsSplitIntoBalancedDeterministicParts() throws {
        let sizes = [90, 80, 70, 60, 50, 40, 30, 20, 10]
        let assets = sizes.enumerated().map { asset("A/f\($0.offset)", String(repeating: "x", count: $0.element) + "\($0.offset)") }
        let planner = PackPlanner(rules: try rules(["a": ["A"]], packSize: 200))
        let plan = try planner.plan(assets)
        #expect(plan.packs.count == 3)
        #expect(plan.packs.allSatisfy { $0.installedBytes <= 200 })
        // Largest first onto the lightest part: 459 bytes over three parts of at most 200.
        #expect(plan.packs.map(\.installedBytes).sorted() == [143, 153, 163])
        #expect(plan.packs.map(\.part) == [1, 2, 3])
        #expect(plan.packs.allSatisfy { $0.partCount == 3 })
        #expect(plan.warnings.map(\.code) == [.splitPack])
        #expect(try planner.plan(assets.reversed()) == plan)
    }

    @Test func aFileOverThePackLimitFailsUnlessAllowed() throws {
        let assets = [asset("A/big", String(repeating: "x", count: 300)), asset("A/small", "s")]
        let rules = try rules(["a": ["A"]], packSize: 200)
        #expect { try PackPlanner(rules: rules).plan(assets) } throws: { error in
            let error = error as? BuildError
            return error?.code == .oversizeFile && error?.file == "A/big"
        }
        let plan = try PackPlanner(rules: rules, allowOversize: true).plan(assets)
        #expect(plan.packs.map { $0.entries.map(\.name) } == [["A/big"], ["A/small"]])
        #expect(plan.warnings.map(\.code).contains(.oversizeFile))
    }

    @Test func untaggedFilesFollowThePolicy() throws {
        let assets = [asset("A/x", "x"), asset("Loose/y", "y")]
        #expect { try PackPlanner(rules: rules(["a": ["A"]])).plan(assets) } throws: { error in
            (error as? BuildError)?.code == .untaggedFiles && "\(error)".contains("Loose/y")
        }
        let warned = try PackPlanner(rules: rules(["a": ["A"]], untagged: .warn)).plan(assets)
        #expect(warned.packs.flatMap { $0.entries.map(\.name) } == ["A/x"])
        #expect(warned.warnings.map(\.code) == [.untaggedFiles])
        let based = try PackPlanner(rules: rules(["a": ["A"]], untagged: .base)).plan(assets)
        #expect(based.packs.map(\.tags) == [["a"], ["base"]])
        #expect(based.tags.map(\.name) == ["a", "base"])
    }

    @Test func tagsWithoutFilesAreReported() throws {
        let plan = try PackPlanner(rules: rules(["a": ["A"], "ghost": ["Nowhere"]])).plan([asset("A/x", "x")])
        #expect(plan.warnings == [BuildWarning(.emptyTag, "tag 'ghost' matches no file")])
        #expect(plan.tags.map(\.name) == ["a", "ghost"])
    }
}
