import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// The download policy's rules as a table, NetworkManager's answers as `nmcli` prints them, and the
/// daily metered count kept in the store.
struct DownloadPolicyTests {
    struct Rule: Sendable, CustomStringConvertible {
        var name: String
        var configure: @Sendable (inout DownloadPolicy) -> Void = { _ in }
        var urgent: Bool
        var condition: NetworkCondition
        var bytes: Int64 = 1000
        var left: Int64?
        var expected: DownloadHold?
        var description: String { name }
    }

    static let rules: [Rule] = [
        Rule(name: "anything on an unmetered network", configure: { $0.allowsMeteredUrgent = false }, urgent: false, condition: .unmetered, left: 0),
        Rule(name: "urgent on metered, allowed by default", urgent: true, condition: .metered),
        Rule(name: "urgent on metered, forbidden", configure: { $0.allowsMeteredUrgent = false }, urgent: true, condition: .metered,
             expected: .meteredUrgentNotAllowed),
        Rule(name: "non-urgent on metered, forbidden by default", urgent: false, condition: .metered, expected: .meteredNonUrgentNotAllowed),
        Rule(name: "non-urgent on metered, allowed", configure: { $0.allowsMeteredNonUrgent = true }, urgent: false, condition: .metered),
        Rule(name: "offline holds urgent work too", urgent: true, condition: .offline, expected: .offline),
        Rule(name: "within the budget", urgent: true, condition: .metered, bytes: 1000, left: 1000),
        Rule(name: "past the budget", urgent: true, condition: .metered, bytes: 1001, left: 1000, expected: .meteredBudgetExhausted),
        Rule(name: "the budget does not apply unmetered", urgent: true, condition: .unmetered, bytes: 1001, left: 0),
    ]

    @Test(arguments: rules)
    func eachRuleHoldsOrAllowsADownload(_ rule: Rule) {
        var policy = DownloadPolicy()
        rule.configure(&policy)
        #expect(policy.hold(urgent: rule.urgent, bytes: rule.bytes, condition: rule.condition, meteredBytesLeft: rule.left) == rule.expected)
    }

    @Test func urgentMeansUrgentOrAtLeastTheDefaultLoadingPriority() {
        let policy = DownloadPolicy()
        #expect(policy.isUrgent(.urgent))
        #expect(policy.isUrgent(.normal), "a request's default priority is urgent: the game waits for it")
        #expect(!policy.isUrgent(.loading(0)), "prefetch")
        #expect(!policy.isUrgent(.loading(0.49)))
        var strict = DownloadPolicy()
        strict.urgentLoadingPriority = 1.5
        #expect(!strict.isUrgent(.loading(1)) && strict.isUrgent(.urgent))
    }

    // MARK: nmcli

    @Test(arguments: [
        ("GENERAL.METERED:yes\n", NetworkCondition.metered),
        ("GENERAL.METERED:yes (guessed)\n", .metered),
        ("GENERAL.METERED:no\n", .unmetered),
        ("GENERAL.METERED:no (guessed)\n", .unmetered),
        ("GENERAL.METERED:unknown\n", .unmetered),
        ("", .unmetered),
        ("Error: NetworkManager is not running.\n", .unmetered),
        // Two devices, -f GENERAL.METERED only: one metered is enough.
        ("GENERAL.METERED:no\n\nGENERAL.METERED:yes (guessed)\n", .metered),
        ("GENERAL.METERED:no\nGENERAL.METERED:yes\n", .metered),
        // The probe's own fields: a connected modem is metered, a disconnected one and loopback are not.
        ("""
        GENERAL.DEVICE:wlp2s0
        GENERAL.TYPE:wifi
        GENERAL.STATE:100 (connected)
        GENERAL.METERED:no (guessed)

        GENERAL.DEVICE:wwan0
        GENERAL.TYPE:gsm
        GENERAL.STATE:100 (connected)
        GENERAL.METERED:yes

        GENERAL.DEVICE:lo
        GENERAL.TYPE:loopback
        GENERAL.STATE:100 (connected (externally))
        GENERAL.METERED:no

        """, .metered),
        ("""
        GENERAL.DEVICE:wwan0
        GENERAL.TYPE:gsm
        GENERAL.STATE:30 (disconnected)
        GENERAL.METERED:yes
        GENERAL.DEVICE:enp3s0
        GENERAL.TYPE:ethernet
        GENERAL.STATE:100 (connected)
        GENERAL.METERED:no
        """, .unmetered),
        ("GENERAL.DEVICE:lo\nGENERAL.TYPE:loopback\nGENERAL.STATE:100 (connected (externally))\nGENERAL.METERED:yes\n", .unmetered),
        ("GENERAL.METERED:guess-yes\n", .metered),
        // `nmcli device show` without -t, as users post it: a phone's hotspot over Wi-Fi, and a
        // cable that is unplugged.
        ("""
        GENERAL.DEVICE:                         wlp2s0
        GENERAL.TYPE:                           wifi
        GENERAL.STATE:                          100 (connected)
        GENERAL.CONNECTION:                     AndroidHotspot3999
        GENERAL.METERED:                        yes (guessed)
        CAPABILITIES.CARRIER-DETECT:            no
        """, .metered),
        ("""
        GENERAL.DEVICE:                         enp3s0
        GENERAL.TYPE:                           ethernet
        GENERAL.STATE:                          20 (unavailable)
        GENERAL.CONNECTION:                     --
        GENERAL.METERED:                        unknown
        """, .unmetered),
    ])
    func nmcliOutputIsReadAsNetworkManagerMeansIt(_ output: String, _ expected: NetworkCondition) {
        #expect(NetworkManagerProbe.parse(output) == expected)
    }

    @Test func theProbeRunsNmcliAndCountsAFailingOrMissingOneAsUnmetered() throws {
        let directory = try TemporaryDirectory(prefix: "odr-nmcli")
        let metered = try FakeNmcli.write(in: directory, name: "metered", output: "GENERAL.DEVICE:wwan0\nGENERAL.TYPE:gsm\nGENERAL.STATE:100 (connected)\nGENERAL.METERED:yes (guessed)\n")
        #expect(NetworkManagerProbe(executable: metered.path).currentCondition() == .metered)
        let failing = try FakeNmcli.write(in: directory, name: "failing", output: "GENERAL.METERED:yes\n", status: 8)
        #expect(NetworkManagerProbe(executable: failing.path).currentCondition() == .unmetered, "a failing nmcli counts as unmetered")
        #expect(NetworkManagerProbe(executable: directory.appending("no-such-nmcli").path).currentCondition() == .unmetered)
    }

    // MARK: The daily count

    @Test func theMeteredCountSurvivesARestartAndStartsAfreshTheNextUTCDay() throws {
        let directory = try TemporaryDirectory(prefix: "odr-metered")
        let noon = 20_000 * 86_400.0 + 43_200
        let usage = MeteredUsage(directory: directory.url, now: noon)
        usage.add(700, now: noon)
        usage.add(300, now: noon + 60)
        usage.save()
        let reopened = MeteredUsage(directory: directory.url, now: noon + 3600)
        #expect(reopened.bytes(now: noon + 3600) == 1000)
        #expect(reopened.bytes(now: noon + 43_200) == 0, "midnight UTC starts a new day")
        #expect(MeteredUsage(directory: directory.url, now: noon + 86_400).bytes(now: noon + 86_400) == 0)
        try Data("not json".utf8).write(to: directory.appending("metered-usage.json"))
        #expect(MeteredUsage(directory: directory.url, now: noon).bytes(now: noon) == 0, "an unreadable file forgets the count, nothing more")
    }
}

/// A stand-in `nmcli`: a shell script that prints `output` and exits with `status`.
enum FakeNmcli {
    static func write(in directory: TemporaryDirectory, name: String = "nmcli", output: String, status: Int = 0) throws -> URL {
        let folder = directory.appending(name == "nmcli" ? "bin" : "bin-\(name)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let script = folder.appending(path: "nmcli")
        let quoted = output.replacingOccurrences(of: "'", with: "'\\''")
        try Data("#!/bin/sh\nprintf '%s' '\(quoted)'\nexit \(status)\n".utf8).write(to: script)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: script.path)
        return script
    }
}
