import Foundation
import ODRTestSupport
import Testing

/// What a new user reads first: `--help` of the tools. Discussion text is wrapped by the argument
/// parser alone (no ragged lines), examples stay whole, defaults read as written, and options a
/// subcommand ignores are not offered.
struct HelpTextTests {
    static func help(_ tool: String, _ arguments: [String]) throws -> String {
        let executable = try #require(builtExecutable(named: tool), "\(tool) is not built")
        let result = try runCommand(executable.path, arguments + ["--help"])
        #expect(result.status == 0, "\(result.stderr)")
        return result.stdout
    }

    /// The discussion: from the line after OVERVIEW's paragraph to USAGE.
    static func discussion(_ help: String) -> [Substring] {
        let lines = help.split(separator: "\n", omittingEmptySubsequences: false)
        let end = lines.firstIndex { $0.hasPrefix("USAGE:") } ?? lines.endIndex
        return Array(lines[..<end])
    }

    @Test(arguments: [
        ("odr", []), ("odr", ["fetch"]), ("odr", ["status"]), ("odr", ["path"]), ("odr", ["update"]), ("odr", ["demo"]),
        ("odr", ["purge"]), ("odr", ["log"]), ("odr", ["hold"]), ("odr", ["verify"]), ("odr", ["share"]), ("odrbench", ["peers"]),
        ("odrbench", []), ("odrbench", ["install"]), ("odrbench", ["delta"]), ("odrbench", ["sim"]), ("odrbench", ["request"]),
        ("odrbench", ["build"]), ("odrbench", ["transfer"]), ("odrbench", ["format"]), ("odrpack", ["inspect"]),
        ("odrpack", ["sign"]), ("odrpack", ["key", "generate"]),
    ])
    func discussionLinesFitAndAreNotHardWrapped(tool: String, arguments: [String]) throws {
        let lines = Self.discussion(try Self.help(tool, arguments))
        for line in lines { #expect(line.count <= 80, "\(tool) \(arguments): \(line)") }
        // A ragged line is a short line followed by more text of the same paragraph: the source
        // wrapped it and the parser wrapped it again. A line the parser wraps is one the next word
        // (and its space) would push past 80 columns.
        for (line, next) in zip(lines, lines.dropFirst()) where !line.isEmpty && !next.isEmpty {
            let isListOrExample = line.hasPrefix(" ") || next.hasPrefix(" ") || line.hasSuffix(":")
                || next.first.map { $0.isNumber } == true
            if !isListOrExample {
                #expect(line.count + 1 + (next.split(separator: " ").first?.count ?? 0) >= 80,
                        "\(tool) \(arguments): ragged line '\(line)' before '\(next)'")
            }
        }
    }

    @Test func examplesStayWholeAndUnusedOptionsAreHidden() throws {
        let odr = try Self.help("odr", [])
        #expect(odr.contains("  odr path --catalog $CDN --store ~/odr-store Levels/Level1/map.json\n"))
        for sub in ["status", "path", "update", "purge", "log", "hold"] {
            let text = try Self.help("odr", [sub])
            #expect(!text.contains("--no-sync") && !text.contains("--bundled"), "odr \(sub) offers install options")
        }
        #expect(try Self.help("odr", ["fetch"]).contains("--no-sync"))
    }

    @Test func defaultsReadAsWrittenAndVersionIsTheToolsOwn() throws {
        let run = try Self.help("odrsim", ["run"])
        #expect(run.contains("default: levels)") && run.contains("(default: 8GiB)"), "\(run)")
        #expect(!run.contains("Argument("), "\(run)")
        let serve = try Self.help("odrpack", ["serve"])
        #expect(!serve.contains("ByteRate("), "\(serve)")
        // `--version` is the tool's own flag everywhere; inspect's option is --catalog-version.
        let odrpack = try #require(builtExecutable(named: "odrpack"))
        let version = try runCommand(odrpack.path, ["inspect", "--version"])
        #expect(version.status == 0 && !version.stdout.isEmpty, "\(version.stderr)")
        #expect(try Self.help("odrpack", ["inspect"]).contains("--catalog-version"))
    }
}
