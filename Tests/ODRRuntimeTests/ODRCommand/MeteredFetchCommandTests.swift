import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// `odr fetch --no-metered` / `--allow-metered`, run as a child process whose system bus
/// (`DBUS_SYSTEM_BUS_ADDRESS`, a ``FakeSystemBus``) says NetworkManager's network is metered: the
/// runtime's default probe reads it there.
struct MeteredFetchCommandTests {
    @Test func noMeteredRefusesAMeteredNetworkAndAllowMeteredFetches() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 50_000)
        try await fixture.build()
        let stores = try TemporaryDirectory(prefix: "odr-metered-fetch")
        let bus = try FakeSystemBus(answering: .metered(1))
        defer { bus.stop() }
        let environment = ["DBUS_SYSTEM_BUS_ADDRESS": bus.address]
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", stores.appending("store").path]
            let refused = try await ODRExecutable.run(["fetch"] + common + ["--no-metered", "small"], environment: environment)
            #expect(refused.status == 1)
            #expect(refused.stderr.hasPrefix("error[network-policy]:"), "\(refused.stderr)")
            #expect(refused.stderr.contains("--allow-metered"))
            #expect(server.requests().allSatisfy { !$0.path.hasPrefix("/packs/") }, "nothing was downloaded")

            let conflicting = try await ODRExecutable.run(["fetch"] + common + ["--no-metered", "--allow-metered", "small"])
            #expect(conflicting.status != 0 && conflicting.stderr.contains("--no-metered"), "\(conflicting.stderr)")

            let allowed = try await ODRExecutable.run(["fetch"] + common + ["--allow-metered", "small"], environment: environment)
            #expect(allowed.status == 0, "\(allowed.stderr)")
            #expect(server.requests().contains { $0.path.hasPrefix("/packs/") })
        }
    }

    @Test func fetchHelpTeachesTheMeteredFlags() throws {
        let help = try HelpTextTests.help("odr", ["fetch"])
        #expect(help.contains("--allow-metered") && help.contains("--no-metered"))
        #expect(help.contains("odr fetch --catalog $CDN --store ./store --no-metered level8"))
    }
}
