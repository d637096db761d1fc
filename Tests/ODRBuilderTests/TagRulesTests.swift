import Foundation
import ODRBuilder
import Testing

struct TagRulesTests {
    @Test func parsesEveryKey() throws {
        let json = """
            {
              "catalogID": "sample-game",
              "tags": {
                "level1": { "include": ["Levels/Level1/**", "Shared/Forest"], "exclude": "**/*.psd",
                            "preservationPriority": 0.25 },
                "tutorial": ["Tutorial/**"]
              },
              "exclude": ["**/*.tmp"],
              "includeHidden": false,
              "initialInstall": ["tutorial"],
              "prefetchOrder": ["level1"],
              "limits": { "packSize": "64 MiB", "initialInstallAndPrefetch": 1000000 },
              "untagged": "base"
            }
            """
        let rules = try TagRules.parse(Data(json.utf8))
        #expect(rules.catalogID == "sample-game")
        #expect(rules.tags.map(\.name) == ["level1", "tutorial"])
        #expect(rules.tags[0].preservationPriority == 0.25)
        #expect(rules.tags[1].preservationPriority == TagRules.defaultPreservationPriority)
        #expect(rules.limits.packSize == 64 * 1024 * 1024)
        #expect(rules.limits.initialInstallAndPrefetch == 1_000_000)
        #expect(rules.untagged == .base)
        #expect(rules.effectiveInitialInstall == ["base", "tutorial"])
        #expect(rules.tags(forPath: "Levels/Level1/map.json") == ["level1"])
        #expect(rules.tags(forPath: "Levels/Level1/art.psd") == [])
        #expect(rules.tags(forPath: "Shared/Forest/tree.png") == ["level1"])
        #expect(rules.isExcluded("Levels/Level1/x.tmp"))
        #expect(rules.definedTagNames == ["base", "level1", "tutorial"])
    }

    @Test func anExplicitBaseKeepsTheImplicitPriority() throws {
        let explicit = try TagRules.parse(Data(#"{"tags": {"base": ["Shared"], "a": ["A"]}, "untagged": "base"}"#.utf8))
        #expect(explicit.preservationPriority(of: "base") == 1)
        #expect(explicit.preservationPriority(of: "a") == TagRules.defaultPreservationPriority)
        let object = try TagRules.parse(Data(#"{"tags": {"base": {"include": ["Shared"]}}}"#.utf8))
        #expect(object.preservationPriority(of: "base") == 1)
        let named = try TagRules.parse(Data(#"{"tags": {"base": {"include": ["Shared"], "preservationPriority": 0.3}}}"#.utf8))
        #expect(named.preservationPriority(of: "base") == 0.3)
    }

    struct Case: Sendable, CustomStringConvertible {
        var json: String
        var code: BuildError.Code
        var key: String?
        var value: String?
        var description: String { code.rawValue + " " + (key ?? "") }
    }

    @Test(arguments: [
        Case(json: #"{"tags": {}, "colour": 1}"#, code: .unknownKey, key: "colour", value: "1"),
        Case(json: #"{"tags": {"a": {"include": ["x"], "priority": 1}}}"#, code: .unknownKey, key: "tags.a.priority", value: "1"),
        Case(json: #"{"tags": {"a": {"include": ["x"]}}, "limits": {"pack": 1}}"#, code: .unknownKey, key: "limits.pack", value: "1"),
        Case(json: #"{"tags": {"a": ["Levels/[1-"]}}"#, code: .invalidGlob, key: "tags.a[0]", value: "\"Levels/[1-\""),
        Case(json: #"{"tags": {"a": {"include": ["ok", "/abs"]}}}"#, code: .invalidGlob, key: "tags.a.include[1]", value: "\"/abs\""),
        Case(json: #"{"tags": {"a": {"include": "x", "preservationPriority": 1.5}}}"#, code: .priorityOutOfRange, key: "tags.a.preservationPriority", value: "1.5"),
        Case(json: #"{"tags": {"a": {"include": "x", "preservationPriority": -0.1}}}"#, code: .priorityOutOfRange, key: "tags.a.preservationPriority", value: "-0.1"),
        Case(json: #"{"tags": {"a": {"include": "x", "preservationPriority": "high"}}}"#, code: .invalidValue, key: "tags.a.preservationPriority", value: "\"high\""),
        Case(json: #"{"tags": {"": ["x"]}}"#, code: .invalidTagName, key: "tags.", value: "\"\""),
        Case(json: #"{"tags": {"level one": ["x"]}}"#, code: .invalidTagName, key: "tags.level one", value: "\"level one\""),
        Case(json: #"{"tags": {"a": ["x"]}, "prefetchOrder": ["a", "b"]}"#, code: .undefinedTag, key: "prefetchOrder[1]", value: "\"b\""),
        Case(json: #"{"tags": {"a": ["x"]}, "initialInstall": ["base"]}"#, code: .undefinedTag, key: "initialInstall[0]", value: "\"base\""),
        Case(json: #"{"tags": {"a": ["x"]}, "untagged": "ignore"}"#, code: .invalidValue, key: "untagged", value: "\"ignore\""),
        Case(json: #"{"tags": {"a": ["x"]}, "limits": {"packSize": -5}}"#, code: .invalidValue, key: "limits.packSize", value: "-5"),
        Case(json: #"{"tags": {"a": ["x"]}, "limits": {"packSize": "12 parsecs"}}"#, code: .invalidValue, key: "limits.packSize", value: "\"12 parsecs\""),
        Case(json: #"{"tags": {"a": {"exclude": ["x"]}}}"#, code: .missingKey, key: "tags.a.include", value: nil),
        Case(json: #"{"exclude": []}"#, code: .missingKey, key: "tags", value: nil),
        Case(json: #"{"tags": {"a": ["x"]}, "includeHidden": 1}"#, code: .invalidValue, key: "includeHidden", value: "1"),
        Case(json: #"{"tags": ["a"]}"#, code: .invalidValue, key: "tags", value: "[\"a\"]"),
        Case(json: #"{"tags": {"a": ["x"]},"#, code: .rulesMalformed, key: nil, value: nil),
    ])
    func rejectsInvalidRulesWithTypedErrors(_ testCase: Case) {
        do {
            _ = try TagRules.parse(Data(testCase.json.utf8), file: "assets/odr.json")
            Issue.record("expected \(testCase.code)")
        } catch {
            #expect(error.code == testCase.code)
            #expect(error.file == "assets/odr.json")
            #expect(error.key == testCase.key)
            #expect(error.value == testCase.value)
            #expect(error.description.contains("assets/odr.json"))
        }
    }

    @Test func missingRulesFileIsUnreadable() {
        #expect { try TagRules.load(from: URL(filePath: "/nonexistent/odr.json")) } throws: { error in
            (error as? BuildError)?.code == .rulesUnreadable
        }
    }

    @Test func matcherTagsEveryPathAsTheRulesDo() throws {
        let rules = try TagRules.parse(Data("""
            {
              "tags": {
                "level1": ["Levels/Level1", "Shared/forest"],
                "level2": { "include": ["Levels/Level2/**"], "exclude": ["Levels/Level2/*.tmp"] },
                "early": ["Levels/Level[12]/map.json"],
                "music": ["**/*.ogg"],
                "readme": ["README.md"],
                "wild": ["*/icons/*.png"],
                "escaped": ["Odd\\\\*Name/file.txt"]
              },
              "untagged": "warn"
            }
            """.utf8))
        let paths = [
            "Levels/Level1/map.json", "Levels/Level1/theme.ogg", "Levels/Level2/map.json", "Levels/Level2/x.tmp",
            "Levels/Level3/map.json", "Shared/forest/tree.png", "Shared/desert/sand.png", "README.md", "readme.md",
            "UI/icons/play.png", "UI/icons/deep/play.png", "Odd*Name/file.txt", "OddXName/file.txt", "music.ogg",
        ]
        let matcher = rules.matcher()
        for path in paths {
            #expect(matcher.tags(forPath: path) == rules.tags(forPath: path), "\(path)")
        }
        #expect(matcher.tags(forPath: "Levels/Level1/map.json") == ["early", "level1"])
        #expect(matcher.tags(forPath: "Odd*Name/file.txt") == ["escaped"])
        #expect(matcher.tags(forPath: "OddXName/file.txt").isEmpty)
        #expect(matcher.tags(forPath: "UI/icons/play.png") == ["wild"])
    }

    @Test func firstComponentIsKnownOnlyWithoutWildcards() throws {
        #expect(try GlobPattern("Levels/Level[1-3]/**").firstComponent == "Levels")
        #expect(try GlobPattern("README.md").firstComponent == "README.md")
        #expect(try GlobPattern("Lev*/map.json").firstComponent == nil)
        #expect(try GlobPattern("**/*.ogg").firstComponent == nil)
        #expect(try GlobPattern("[LM]evels/x").firstComponent == nil)
    }
}
