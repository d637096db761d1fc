import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// The `baseGrew` warning of `odrpack build` and `odrpack diff`: a folder no rule names goes into
/// `base` with `"untagged": "base"`, and every client then downloads it (issue 37).
struct BaseGrowthTests {
    static func game(limits: String = "") throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", """
            { "untagged": "base", \(limits.isEmpty ? "" : "\"limits\": {\(limits)}, ")
              "tags": { "kart1": ["karts/kart1"] } }
            """)
        try fixture.write("ui/menu.txt", "menu\n")
        try fixture.write("karts/kart1/model.bin", deterministicBytes(count: 300_000, seed: 1))
        return fixture
    }

    /// A kart folder nobody added to the rules: 2.5 MiB that do not compress, in two files.
    static func addNewKart(_ fixture: BuildFixture) throws {
        try fixture.write("karts/newkart/model.bin", deterministicBytes(count: 2_500_000, seed: 2))
        try fixture.write("karts/newkart/sub/skin.png", deterministicBytes(count: 121_440, seed: 3))
    }

    @Test func buildAndDiffNameTheNewFolderWhenBaseGrowsOverTheThreshold() async throws {
        let fixture = try Self.game()
        let first = try await fixture.build()
        #expect(!first.warnings.contains { $0.code == .baseGrew })
        try Self.addNewKart(fixture)
        let second = try await fixture.build()
        let warning = try #require(second.warnings.first { $0.code == .baseGrew }, "\(second.warnings)")
        #expect(warning.message.hasPrefix("base grew by 2.5 MiB (+2 files) since version 1"), "\(warning.message)")
        #expect(warning.message.contains("new folders karts/newkart/;"), "only the shallowest new folder: \(warning.message)")
        #expect(second.rendered().contains("warning [baseGrew]: base grew by 2.5 MiB"))

        let diff = try CatalogDiff(catalog: fixture.catalog, from: 1, to: 2)
        #expect(diff.baseGrowth?.newFolders == ["karts/newkart/"] && diff.baseGrowth?.files == 2)
        #expect(diff.warnings == [warning])
        #expect(diff.rendered().contains("warnings (1):\n  warning [baseGrew]: base grew by 2.5 MiB"), "\(diff.rendered())")
        // Compared the other way, base shrank: no warning.
        #expect(try CatalogDiff(catalog: fixture.catalog, from: 2, to: 1).warnings.isEmpty)

        // odrpack diff says it too, and --rules raises the threshold.
        let odrpack = try #require(builtExecutable(named: "odrpack"))
        let shown = try runCommand(odrpack.path, ["diff", fixture.output.path, "1", "2"])
        #expect(shown.status == 0 && shown.stdout.contains("warning [baseGrew]: base grew by 2.5 MiB (+2 files) since version 1"), "\(shown.stdout)")
        let rules = fixture.directory.appending("raised.json")
        try Data(#"{"untagged": "base", "limits": {"baseGrowthWarning": "4 MiB"}, "tags": {"kart1": ["karts/kart1"]}}"#.utf8).write(to: rules)
        let raised = try runCommand(odrpack.path, ["diff", fixture.output.path, "1", "2", "--rules", rules.path])
        #expect(raised.status == 0 && !raised.stdout.contains("baseGrew"), "\(raised.stdout)")
    }

    @Test(arguments: [#""baseGrowthWarning": "4 MiB""#, #""baseGrowthWarning": 0"#])
    func aHigherThresholdOrZeroKeepsTheBuildQuiet(limits: String) async throws {
        let fixture = try Self.game(limits: limits)
        try await fixture.build()
        try Self.addNewKart(fixture)
        let second = try await fixture.build()
        #expect(second.version == 2 && !second.warnings.contains { $0.code == .baseGrew }, "\(second.warnings)")
    }

    @Test func growthInsideAKnownFolderNamesNoFolder() async throws {
        let fixture = try Self.game()
        try await fixture.build()
        try fixture.write("ui/big-font.bin", deterministicBytes(count: 1_300_000, seed: 4))
        let warning = try #require(try await fixture.build().warnings.first { $0.code == .baseGrew })
        #expect(warning.message.contains("(+1 files)") && !warning.message.contains("new folders"), "\(warning.message)")
    }

    @Test(arguments: [#"-1"#, #""lots""#, #"true"#])
    func aBadThresholdIsARulesErrorNamingTheKey(value: String) async throws {
        let fixture = try Self.game(limits: "\"baseGrowthWarning\": \(value)")
        let error = await #expect(throws: BuildError.self) { try await fixture.build() }
        #expect(error?.code == .invalidValue && error?.key == "limits.baseGrowthWarning", "\(String(describing: error))")
    }
}
