import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// The conventions every tool keeps (docs/CLI.md), checked through the real binaries: `--version`
/// is the tool's own everywhere, byte sizes take one syntax and a refusal lists it, errors read
/// `error[code]: message`, and `odr` finds its store and catalog without `--catalog`.
struct CLIConventionTests {
    static let subcommands: [(String, [String])] = [
        ("odr", []), ("odr", ["fetch"]), ("odr", ["status"]), ("odr", ["path"]), ("odr", ["update"]), ("odr", ["purge"]),
        ("odr", ["log"]), ("odr", ["hold"]), ("odr", ["verify"]), ("odr", ["demo"]),
        ("odrpack", []), ("odrpack", ["init"]), ("odrpack", ["build"]), ("odrpack", ["inspect"]), ("odrpack", ["verify"]),
        ("odrpack", ["diff"]), ("odrpack", ["report"]), ("odrpack", ["distribution"]), ("odrpack", ["prune"]),
        ("odrpack", ["sign"]), ("odrpack", ["key"]), ("odrpack", ["serve"]), ("odrpack", ["publish"]),
        ("odrsim", []), ("odrsim", ["run"]),
    ]

    @Test(arguments: subcommands)
    func versionIsTheToolsOwnInEverySubcommand(tool: String, arguments: [String]) async throws {
        let result = try await ODRExecutable.run(arguments + ["--version"], tool: tool)
        #expect(result.status == 0, "\(tool) \(arguments) --version: \(result.stderr)")
        #expect(result.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == ODRVersion.current,
                "\(tool) \(arguments) --version printed '\(result.stdout)'")
    }

    @Test func aCatalogVersionIsAlwaysCatalogVersion() async throws {
        for sub in ["inspect", "report"] {
            let help = try await ODRExecutable.run([sub, "--help"], tool: "odrpack")
            #expect(help.stdout.contains("--catalog-version"), "odrpack \(sub) --help")
            #expect(!help.stdout.contains("--version <"), "odrpack \(sub) offers --version for a catalog version")
        }
    }

    /// A size every tool refuses the same way: the usage error lists the accepted forms.
    @Test(arguments: [
        ("odr", ["purge", "--store", "/nonexistent-odr", "--catalog", "/nonexistent", "--bytes", "10 parsecs"]),
        ("odr", ["fetch", "--store", "/nonexistent-odr", "--catalog", "/nonexistent", "--cache-budget", "lots", "level1"]),
        ("odr", ["fetch", "--store", "/nonexistent-odr", "--catalog", "/nonexistent", "--watermark=-1", "level1"]),
        ("odrpack", ["serve", "/nonexistent", "--rate", "fast"]),
        ("odrsim", ["run", "--disk", "8 parsecs"]),
    ])
    func aRefusedSizeListsTheAcceptedForms(tool: String, arguments: [String]) async throws {
        let result = try await ODRExecutable.run(arguments, tool: tool)
        #expect(result.status == 64, "\(tool) \(arguments): \(result.status) \(result.stderr)")
        #expect(result.stderr.hasPrefix("error[usage]: "), "\(result.stderr)")
        #expect(result.stderr.contains("1048576, 100MB, 100 MiB or 256k"), "\(result.stderr)")
    }

    /// The same sizes are accepted everywhere: these fail later, for the missing catalog, not the size.
    @Test(arguments: ["1048576", "100MB", "100 MiB", "256k", "1.5GiB"])
    func everyFormIsAcceptedByEveryOption(size: String) async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-cli")
        let missing = temporary.appending("no-catalog").path
        for arguments in [
            ["purge", "--store", temporary.appending("store").path, "--catalog", missing, "--bytes", size, "--dry-run"],
            ["fetch", "--store", temporary.appending("store").path, "--catalog", missing, "--cache-budget", size, "--watermark", size, "level1"],
        ] {
            let result = try await ODRExecutable.run(arguments, tool: "odr")
            #expect(result.status == 1 && !result.stderr.contains("error[usage]"), "\(arguments): \(result.stderr)")
        }
        #expect(ByteSize.parse(size) != nil)
        var rules = "{\"tags\": {}, \"limits\": {\"packSize\": \"\(size)\"}}"
        #expect(try TagRules.parse(Data(rules.utf8)).limits.packSize == ByteSize.parse(size))
        rules = "{\"tags\": {}, \"limits\": {\"packSize\": \"12 parsecs\"}}"
        #expect(throws: BuildError.self) { try TagRules.parse(Data(rules.utf8)) }
    }

    @Test(arguments: [
        ("512MB", Int64(512_000_000)), ("100 MiB", Int64(100) << 20), ("256k", Int64(256) << 10), ("4096", Int64(4096)),
        ("1.5 GB", Int64(1_500_000_000)), ("9223372036854775807", Int64.max), ("2TiB", Int64(2) << 40), ("8GiB", Int64(8) << 30), ("300k", Int64(300) << 10), ("10b", Int64(10)), ("1_000", Int64(1000)),
    ])
    func sizesParse(_ text: String, _ bytes: Int64) {
        #expect(ByteSize.parse(text) == bytes)
    }

    @Test(arguments: ["", "GB", "-1GB", "8 parsecs", "1e400", ".", "1.", ".5k", "9999999TiB", "0x10", "9223372036854775808", "1.2.3"])
    func nonSizesDoNotParse(_ text: String) {
        #expect(ByteSize.parse(text) == nil)
    }

    @Test func errorsShareOneFormatWithNoFoundationDump() async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-cli")
        try FileManager.default.createDirectory(at: temporary.appending("assets"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: temporary.appending("assets/a.txt"))
        let build = try await ODRExecutable.run(
            ["build", temporary.appending("assets").path, "--output", temporary.appending("catalog").path,
             "--rules", temporary.appending("missing.json").path], tool: "odrpack")
        #expect(build.status == 1)
        #expect(build.stderr.hasPrefix("error[rules.unreadable]: \(temporary.appending("missing.json").path): "), "\(build.stderr)")
        #expect(!build.stderr.contains("NSCocoaErrorDomain") && !build.stderr.contains("Error Domain"), "\(build.stderr)")

        for (tool, arguments) in [("odr", ["fetch", "--no-such-flag"]), ("odrpack", ["build", "--no-such-flag"]), ("odrsim", ["run", "--days", "x"])] {
            let result = try await ODRExecutable.run(arguments, tool: tool)
            #expect(result.status == 64 && result.stderr.hasPrefix("error[usage]: "), "\(tool): \(result.stderr)")
        }
        let odr = try await ODRExecutable.run(["status", "--store", temporary.appending("store").path,
                                               "--catalog", temporary.appending("none").path, "--offline"])
        #expect(odr.status == 1 && odr.stderr.hasPrefix("error[catalog-unavailable]: "), "\(odr.stderr)")
    }

    @Test func odrFindsItsCatalogFromTheStoreAndTheEnvironment() async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-cli")
        let catalog = try await SampleGame.buildCatalog(in: temporary)
        let store = temporary.appending("store").path

        let none = try await ODRExecutable.run(["status"], environment: ["ODR_STORE": "", "ODR_CATALOG": ""])
        #expect(none.status == 64 && none.stderr.contains("--store") && none.stderr.contains("ODR_STORE"), "\(none.stderr)")
        let empty = try await ODRExecutable.run(["status", "--store", store])
        #expect(empty.status == 64 && empty.stderr.contains("--catalog") && empty.stderr.contains("ODR_CATALOG"), "\(empty.stderr)")

        let fetch = try await ODRExecutable.run(["fetch", "--catalog", catalog.path, "--store", store, "level1"])
        #expect(fetch.status == 0, "\(fetch.stderr)")

        // The store remembers its catalog: --catalog may be left out, and the tool says which it used.
        let status = try await ODRExecutable.run(["status", "--store", store, "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stderr.contains("notice: using the catalog the store follows"), "\(status.stderr)")
        #expect(status.stdout.contains("\"level1\""), "\(status.stdout)")

        // ODR_STORE stands for --store, ODR_CATALOG for --catalog (no notice then).
        let path = try await ODRExecutable.run(["path", "Levels/Level1/map.json"], environment: ["ODR_STORE": store])
        #expect(path.status == 0 && path.stdout.contains("map.json"), "\(path.stderr)")
        let log = try await ODRExecutable.run(["log"], environment: ["ODR_STORE": store])
        #expect(log.status == 0 && log.stdout.contains("install"), "\(log.stderr)")
        let named = try await ODRExecutable.run(["status", "--json"], environment: ["ODR_STORE": store, "ODR_CATALOG": catalog.path])
        #expect(named.status == 0 && !named.stderr.contains("notice: using the catalog"), "\(named.stderr)")
    }

    @Test func fetchSaysWhenInitialTagsAreMissingAndInitialFetchesThem() async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-cli")
        let catalog = try await SampleGame.buildCatalog(in: temporary)
        let store = temporary.appending("store").path
        let plain = try await ODRExecutable.run(["fetch", "--catalog", catalog.path, "--store", store, "level1"])
        #expect(plain.status == 0, "\(plain.stderr)")
        #expect(plain.stderr.contains("initial-install tag(s)") && plain.stderr.contains("tutorial are not installed") && plain.stderr.contains("--initial"),
                "\(plain.stderr)")

        let initial = try await ODRExecutable.run(["fetch", "--catalog", catalog.path, "--store", store, "--initial", "--json"])
        #expect(initial.status == 0, "\(initial.stderr)")
        let again = try await ODRExecutable.run(["fetch", "--catalog", catalog.path, "--store", store, "level1"])
        #expect(again.status == 0 && !again.stderr.contains("initial-install"), "\(again.stderr)")
    }

    @Test func initWritesStarterRulesThatBuild() async throws {
        let temporary = try TemporaryDirectory(prefix: "odr-cli")
        let assets = temporary.appending("My Game")
        for file in ["Levels/One/map.json", "Levels/Two/map.json", "Music Pack/theme.ogg", "UI/menu.png", "readme.txt", ".git/config"] {
            let url = assets.appending(path: file)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(file.utf8).write(to: url)
        }
        try FileManager.default.createDirectory(at: assets.appending(path: "Empty"), withIntermediateDirectories: true)

        let first = try await ODRExecutable.run(["init", assets.path], tool: "odrpack")
        #expect(first.status == 0, "\(first.stderr)")
        let rules = try TagRules.load(from: assets.appending(path: "odr.json"))
        #expect(rules.catalogID == "my-game")
        #expect(Set(rules.tags.map(\.name)) == ["levels", "music-pack", "ui"])
        #expect(first.stdout.contains("skipped .git (hidden)") && first.stdout.contains("skipped Empty (no file below it)"), "\(first.stdout)")

        let build = try await ODRExecutable.run(["build", assets.path, "--output", temporary.appending("catalog").path, "--no-cache"],
                                                tool: "odrpack")
        #expect(build.status == 0, "\(build.stderr)")

        let again = try await ODRExecutable.run(["init", assets.path], tool: "odrpack")
        #expect(again.status == 1 && again.stderr.hasPrefix("error[rules.exists]: "), "\(again.stderr)")
        let forced = try await ODRExecutable.run(["init", assets.path, "--force"], tool: "odrpack")
        #expect(forced.status == 0, "\(forced.stderr)")
    }
}
