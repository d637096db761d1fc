import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// The compiled matcher against the reference (`TagRules.tags(forPath:)`, every pattern tried) on
/// generated rule sets and trees.
struct TagMatcherTests {
    /// Path components, some of them sharing prefixes, with wildcard characters in names and
    /// canonically equivalent spellings (precomposed and decomposed é, the Kelvin sign and K).
    static let names = [
        "Levels", "Level1", "Level12", "Lev", "a", "ab", "abc", "b", "tex", "texture.png", "tex*.png", "x.ogg",
        "caf\u{E9}", "cafe\u{301}", "\u{212A}art", "Kart", "[odd]", "q?", "map.json", "M",
    ]
    /// Pattern segments built from those names, literal or wildcard.
    static let segments = [
        "Levels", "Level1", "Level*", "Lev?l1", "a", "ab*", "a?c", "[ab]*", "[!a]b", "tex", "tex*", "tex\\*.png", "*.png",
        "*.ogg", "*", "caf\u{E9}", "cafe\u{301}", "Kart", "\u{212A}*", "\\[odd]", "q\\?", "map.json", "M", "*1*",
    ]

    static func randomPath(_ random: inout SeededGenerator) -> String {
        (0..<Int.random(in: 1...5, using: &random)).map { _ in names.randomElement(using: &random) ?? "a" }
            .joined(separator: "/")
    }

    static func randomPattern(_ random: inout SeededGenerator) -> String {
        var parts: [String] = []
        for _ in 0..<Int.random(in: 1...4, using: &random) {
            switch Int.random(in: 0..<10, using: &random) {
            case 0: parts.append("**")
            case 1...3: parts.append(names.filter { !$0.contains(where: { "*?[\\".contains($0) }) }.randomElement(using: &random) ?? "a")
            default: parts.append(segments.randomElement(using: &random) ?? "*")
            }
        }
        if parts == ["**"] { parts.append("*") }
        return parts.joined(separator: "/") + (Int.random(in: 0..<6, using: &random) == 0 ? "/" : "")
    }

    @Test(arguments: Array(UInt64(1)...60))
    func compiledMatcherAnswersAsEveryPatternTried(seed: UInt64) throws {
        var random = SeededGenerator(seed: seed)
        var tags: [TagRules.TagRule] = []
        for index in 0..<Int.random(in: 1...12, using: &random) {
            let include = try (0..<Int.random(in: 1...8, using: &random)).map { _ in try GlobPattern(Self.randomPattern(&random)) }
            let exclude = try (0..<Int.random(in: 0...2, using: &random)).map { _ in try GlobPattern(Self.randomPattern(&random)) }
            tags.append(TagRules.TagRule(name: "t\(index)", include: include, exclude: exclude))
        }
        let rules = TagRules(tags: tags)
        let matcher = rules.matcher()
        var tagged = 0
        for _ in 0..<300 {
            let path = Self.randomPath(&random)
            let expected = rules.tags(forPath: path)
            #expect(matcher.tags(forPath: path) == expected, "seed \(seed), path \(path)")
            if !expected.isEmpty { tagged += 1 }
        }
        // The generated rules tag paths (the literal test below checks untagged ones too).
        if seed == 1 { #expect(tagged > 0) }
    }

    @Test func literalPathsOfAStudioScriptMatchOnlyTheirFilesAndFolders() throws {
        // One pattern per referenced file, as a dependency script writes them, plus folder rules.
        var tags: [TagRules.TagRule] = []
        for track in 0..<200 {
            let include = try (0..<20).map { try GlobPattern("textures/t\(track)_\($0).png") } + [try GlobPattern("tracks/track\(track)")]
            tags.append(TagRules.TagRule(name: "track\(track)", include: include))
        }
        tags.append(TagRules.TagRule(name: "shared", include: [try GlobPattern("textures/t1_1.png"), try GlobPattern("tracks/track1/")]))
        let rules = TagRules(tags: tags)
        let matcher = rules.matcher()
        #expect(matcher.tags(forPath: "textures/t1_1.png") == ["shared", "track1"])
        #expect(matcher.tags(forPath: "textures/t1_10.png") == ["track1"])
        #expect(matcher.tags(forPath: "textures/t1_1.png/inner") == ["shared", "track1"])
        #expect(matcher.tags(forPath: "tracks/track1") == ["track1"])
        #expect(matcher.tags(forPath: "tracks/track1/scene.xml") == ["shared", "track1"])
        #expect(matcher.tags(forPath: "tracks/track10/scene.xml") == ["track10"])
        #expect(matcher.tags(forPath: "textures/t999_1.png").isEmpty)
        #expect(matcher.tags(forPath: "textures").isEmpty)
    }
}
