import ODRBuilder
import Testing

struct GlobPatternTests {
    @Test(arguments: [
        ("*.json", "map.json", true),
        ("*.json", "Levels/map.json", false),
        ("Levels/*/map.json", "Levels/Level1/map.json", true),
        ("Levels/*/map.json", "Levels/Level1/sub/map.json", false),
        ("**/map.json", "map.json", true),
        ("**/map.json", "Levels/Level1/sub/map.json", true),
        ("Levels/**/*.png", "Levels/Level1/art/sky.png", true),
        ("Levels/**/*.png", "Levels/sky.png", true),
        ("Levels/**/*.png", "Textures/sky.png", false),
        ("Level?/map.json", "Level1/map.json", true),
        ("Level?/map.json", "Level12/map.json", false),
        ("Level[1-3]/*", "Level2/a", true),
        ("Level[1-3]/*", "Level4/a", false),
        ("Level[!1-3]/*", "Level4/a", true),
        ("Level[^1-3]/*", "Level1/a", false),
        ("Level[13]/*", "Level3/a", true),
        ("a\\*b", "a*b", true),
        ("a\\*b", "axb", false),
        ("Levels/Level1", "Levels/Level1/map.json", true),
        ("Levels/Level1", "Levels/Level10/map.json", false),
        ("Levels/Level1/", "Levels/Level1/map.json", true),
        ("Levels/Level1/", "Levels/Level1", false),
        ("UI", "UI", true),
        ("**", "anything/at/all", true),
        ("*", "Levels/Level1/map.json", true),
        ("*.ogg", "Sounds/x.ogg", false),
        ("Sounds/**", "Sounds/x.ogg", true),
        ("Sounds/*e*", "Sounds/hello.wav", true),
        ("Sounds/*e*", "Sounds/world.wav", false),
    ])
    func matchesPathsAndFolders(pattern: String, path: String, expected: Bool) throws {
        let glob = try GlobPattern(pattern)
        #expect(glob.matches(path) == expected, "\(pattern) vs \(path)")
    }

    @Test(arguments: ["", "/abs/*.png", "a/../b", "./a", "a//b", "a**b", "Level[1-3", "x[]", "ends\\", "[z-a]"])
    func rejectsBadPatterns(pattern: String) {
        #expect(throws: GlobPattern.SyntaxError.self) { try GlobPattern(pattern) }
    }
}
