import Foundation
import ODRTestSupport
import Testing

/// `odrpack serve` as a user runs it: argument validation, the URL on stdout, clean shutdown.
@Suite(.enabled(if: ServeProcess.executable != nil, "needs the odrpack executable (swift build --build-tests builds it)"))
struct ServeCommandTests {
    @Test(arguments: [
        (["serve", "/nonexistent/odr-catalog"], "does not exist"),
        (["serve", "CATALOG", "--fail-rate", "1.5"], "not a probability"),
        (["serve", "CATALOG", "--truncate-rate=-0.1"], "not a probability"),
        (["serve", "CATALOG", "--rate", "0"], "not positive"),
        (["serve", "CATALOG", "--latency=-5"], "negative"),
        (["serve", "CATALOG", "--port", "70000"], "not a TCP port"),
    ])
    func invalidArgumentsAreRejectedBeforeServing(arguments: [String], message: String) async throws {
        let catalog = try TemporaryDirectory(prefix: "odr-serve-args")
        let process = try ServeProcess(arguments.map { $0 == "CATALOG" ? catalog.url.path : $0 })
        let (status, stderr) = await process.waitForExit()
        #expect(status == 64)  // EX_USAGE, ArgumentParser's exit code for a ValidationError
        #expect(stderr.contains(message), "stderr: \(stderr)")
    }

    @Test func servesOnTheURLItPrintsAndStopsCleanlyOnSIGINT() async throws {
        let catalog = try TemporaryDirectory(prefix: "odr-serve-run")
        try SampleCatalog.catalogJSON.write(to: catalog.appending("catalog.json"))
        let process = try ServeProcess(["serve", catalog.url.path, "--port", "0", "--seed", "1"])
        let line = await process.firstLine()
        let url = try #require(line.flatMap { URL(string: $0) })
        #expect(url.host() == "127.0.0.1")
        #expect((url.port ?? 0) > 0)
        let response = try await CurlCommand.fetch(url.appending(path: "catalog.json"))
        #expect(response.status == 200)
        #expect(response.body == SampleCatalog.catalogJSON)
        process.signal(interrupt: true)
        let (status, stderr) = await process.waitForExit()
        #expect(status == 0)
        #expect(stderr.contains("GET /catalog.json 200"), "stderr: \(stderr)")
    }

    @Test func offlineRefusesConnectionsAndStopsOnSIGTERM() async throws {
        let catalog = try TemporaryDirectory(prefix: "odr-serve-offline")
        let process = try ServeProcess(["serve", catalog.url.path, "--port", "0", "--offline"])
        let line = await process.firstLine()
        let url = try #require(line.flatMap { URL(string: $0) })
        let response = try await CurlCommand.fetch(url.appending(path: "catalog.json"))
        #expect(response.exitCode == 7)
        process.signal(interrupt: false)
        let (status, _) = await process.waitForExit()
        #expect(status == 0)
    }

    @Test func helpExplainsEveryOptionWithAnExample() async throws {
        let process = try ServeProcess(["serve", "--help"])
        let help = await process.collectOutput()
        for option in ["--host", "--port", "--latency", "--rate", "--fail-rate", "--truncate-rate", "--corrupt-rate", "--offline", "--seed"] {
            #expect(help.contains(option), "\(option) missing from --help")
        }
        #expect(help.contains("odrpack serve out/catalog --latency"))
    }
}
