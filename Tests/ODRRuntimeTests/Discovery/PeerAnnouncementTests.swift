import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Announcements whose name is taken (issue 43: every Steam Deck of a household is `steamdeck`):
/// the second share takes the next free name and both are found.
extension PeerDiscoveryTests {
    /// What a user sees: two devices of one household on one network (two Avahi daemons that hear
    /// each other, with the same host name) each run `odr share --announce --name steamdeck` of a
    /// store of the same catalog. Both say "Announced as", the second as 'steamdeck #2' (Avahi found
    /// the name taken while probing it: state COLLISION), and a discovery finds both shares. A third
    /// announcement of that name beside the first (taken on its own Avahi: `CollisionError`, then
    /// 'steamdeck #2' taken on the network) ends as 'steamdeck #3'. Every child is killed and
    /// reaped at the end, whatever happens.
    @Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)), .timeLimit(.minutes(10)))
    func twoSharesAnnouncedUnderTheSameNameAreBothFound() async throws {
        let avahi = try await PrivateAvahi()
        defer { avahi.stop() }
        let neighbour = try await PrivateAvahi(sharingNetworkWith: avahi)
        defer { neighbour.stop() }
        let fixture = try await PeerInstallTests.game(files: 1, fileBytes: 1 << 16)
        let stores = [try TemporaryDirectory(prefix: "odr-deck-a"), try TemporaryDirectory(prefix: "odr-deck-b")]
        let odr = try #require(ODRExecutable.url)
        try await withTestServer(root: fixture.catalog) { cdn in
            for store in stores {
                let seeded = try await Self.run(odr, ["fetch", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", store.url.path, "level"])
                try #require(seeded.status == 0, "\(seeded.stderr)")
            }
        }
        var shares: [RunningProcess] = []
        defer { for share in shares { share.terminate() } }
        var urls: [String] = []
        for (store, bus) in zip(stores, [avahi, neighbour]) {
            let share = try RunningProcess(odr, ["share", "--store", store.url.path, "--port", "0", "--announce", "--name", "steamdeck"],
                                           environment: ["DBUS_SYSTEM_BUS_ADDRESS": bus.busAddress])
            shares.append(share)
            try await share.waitForOutput(containing: "Stop with Ctrl-C.", timeout: .seconds(60))
            let url = try #require(share.stdout.firstMatch(of: /\sat (http:\/\/\S+) \(/)?.1, "\(share.stdout)")
            urls.append(String(url))
        }
        #expect(shares[0].stdout.contains("Announced as 'steamdeck' (DNS-SD _odr._tcp)."), "\(shares[0].stdout) \(shares[0].stderr)")
        #expect(shares[1].stdout.contains("Announced as 'steamdeck #2' (DNS-SD _odr._tcp; the name was taken"), "\(shares[1].stdout) \(shares[1].stderr)")
        let discovery = PeerDiscovery(socketPath: avahi.busSocket, timeout: 5)
        var report = PeerDiscovery.Report()
        try await waitUntil("both shares to be browsable (last report: \(report))", timeout: .seconds(60)) {
            report = try discovery.discover(catalogID: "peer-game")
            return report.peers.count == 2
        }
        #expect(Set(report.peers.map(\.absoluteString)) == Set(urls))
        #expect(report.ignored.isEmpty, "\(report.ignored)")

        let third = try PeerAnnouncement(catalogIDs: ["peer-game"], port: 9, name: "steamdeck", socketPath: avahi.busSocket)
        defer { third.stop() }
        let settled = await third.waitUntilSettled(timeout: .seconds(60))
        #expect(settled.state == .established && settled.names == ["steamdeck #3"] && settled.renames == 2, "\(settled)")
    }

    /// A restarted avahi-daemon has forgotten every service: the announcement says it waits for
    /// Avahi, registers the same name with the new daemon once it is on the bus, and a browse finds
    /// the share again. The bounds are generous waits for a loaded machine, not expectations.
    @Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)), .timeLimit(.minutes(5)))
    func anAnnouncementIsRegisteredAgainWhenAvahiRestarts() async throws {
        let avahi = try await PrivateAvahi()
        defer { avahi.stop() }
        let announcement = try PeerAnnouncement(catalogIDs: ["peer-game"], port: 7420, name: "steamdeck", socketPath: avahi.busSocket)
        defer { announcement.stop() }
        let settled = await announcement.waitUntilSettled(timeout: .seconds(60))
        try #require(settled.state == .established, "\(settled)")
        let discovery = PeerDiscovery(socketPath: avahi.busSocket, timeout: 5)
        var report = PeerDiscovery.Report()
        try await waitUntil("the share to be browsable (last report: \(report))", timeout: .seconds(60)) {
            report = try discovery.discover(catalogID: "peer-game")
            return report.peers.count == 1
        }

        try await avahi.restartAvahi()
        report = PeerDiscovery.Report()
        try await waitUntil("the share to be browsable again (last report: \(report); \(announcement.status))", timeout: .seconds(30)) {
            // A browse that fails (the new daemon not quite ready for it) is tried again.
            if let found = try? discovery.discover(catalogID: "peer-game") { report = found }
            return report.peers.count == 1
        }
        #expect(report.peers.map(\.absoluteString) == ["http://127.0.0.1:7420/"])
        #expect(announcement.status == PeerAnnouncement.Status(state: .established, names: ["steamdeck"], renames: 0, avahiRestarts: 1))
    }

    /// What a user sees when avahi-daemon restarts under `odr share --announce`: `Announced as`
    /// again under the same name (and, when its once-a-second look catches Avahi away, a line on
    /// stderr that the share waits for it), and the share is found by a browse of the new daemon.
    @Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)), .timeLimit(.minutes(5)))
    func odrShareSaysItWaitsForAvahiAndAnnouncesAgain() async throws {
        let avahi = try await PrivateAvahi()
        defer { avahi.stop() }
        let fixture = try await PeerInstallTests.game(files: 1, fileBytes: 1 << 16)
        let store = try TemporaryDirectory(prefix: "odr-deck-restart")
        let odr = try #require(ODRExecutable.url)
        try await withTestServer(root: fixture.catalog) { cdn in
            let seeded = try await Self.run(odr, ["fetch", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", store.url.path, "level"])
            try #require(seeded.status == 0, "\(seeded.stderr)")
        }
        let share = try RunningProcess(odr, ["share", "--store", store.url.path, "--port", "0", "--announce", "--name", "steamdeck"],
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": avahi.busAddress])
        defer { share.terminate() }
        try await share.waitForOutput(containing: "Stop with Ctrl-C.", timeout: .seconds(60))
        #expect(share.stdout.contains("Announced as 'steamdeck' (DNS-SD _odr._tcp)."), "\(share.stdout) \(share.stderr)")
        try await avahi.restartAvahi()
        try await waitUntil("odr share to announce again (stdout: \(share.stdout); stderr: \(share.stderr))", timeout: .seconds(30)) {
            share.stdout.components(separatedBy: "Announced as 'steamdeck' (DNS-SD _odr._tcp).").count == 3
        }
        let discovery = PeerDiscovery(socketPath: avahi.busSocket, timeout: 5)
        var report = PeerDiscovery.Report()
        try await waitUntil("the share to be browsable (last report: \(report))", timeout: .seconds(30)) {
            if let found = try? discovery.discover(catalogID: "peer-game") { report = found }
            return report.peers.count == 1
        }
    }

    /// `--name` is checked before anything starts: at most 63 bytes of UTF-8, and only with `--announce`.
    @Test func aNameThatCannotBeAnnouncedIsRefused() async throws {
        let store = try TemporaryDirectory(prefix: "odr-deck-name")
        for (arguments, expected) in [
            (["--announce", "--name", String(repeating: "é", count: 32)], "64 bytes of UTF-8; DNS-SD allows 63"),
            (["--announce", "--name", ""], "The announced name is empty"),
            (["--name", "steamdeck"], "add --announce"),
        ] {
            let outcome = try await ODRExecutable.run(["share", "--store", store.url.path, "--port", "0"] + arguments)
            #expect(outcome.status != 0)
            #expect(outcome.stderr.contains(expected), "\(arguments): \(outcome.stderr)")
        }
        #expect(PeerAnnouncement.problem(withName: String(repeating: "é", count: 31) + "a") == nil)
        // How long a fetch's discovery may take: 0.1 to 60 s, and only with --discover.
        for (arguments, expected) in [
            (["--discover", "--discover-timeout", "0"], "give 0.1 to 60 seconds"),
            (["--discover", "--discover-timeout", "nan"], "give 0.1 to 60 seconds"),
            (["--discover-timeout", "5"], "add --discover"),
            // How long a peer gets to start answering: 0.01 to 60 s, and only with peers.
            (["--peer", "http://127.0.0.1:1/", "--peer-timeout", "0"], "give 0.01 to 60 seconds"),
            (["--peer", "http://127.0.0.1:1/", "--peer-timeout", "61"], "give 0.01 to 60 seconds"),
            (["--peer-timeout", "0.5"], "add --peer URL or --discover"),
        ] {
            let outcome = try await ODRExecutable.run(["fetch", "--catalog", store.url.path, "--store", store.url.path] + arguments + ["level"])
            #expect(outcome.status == 64, "\(arguments): \(outcome.stderr)")
            #expect(outcome.stderr.contains(expected), "\(arguments): \(outcome.stderr)")
        }
        #expect(PeerAnnouncement.name(String(repeating: "é", count: 40), suffix: " 12").utf8.count == 63)
    }

    /// The registration fed the messages Avahi sends: a name taken after the commit (state
    /// COLLISION, as when another device on the network announces it) or at `AddService` (a
    /// `CollisionError`, as when another client of the same Avahi has it) leads to `Reset`, the
    /// alternative name Avahi gives, `AddService` and `Commit` again; the names are final at
    /// ESTABLISHED. Sixteen collisions in a row, state FAILURE or an answer of another shape end it
    /// with a typed error; Avahi leaving the bus makes it wait, and a daemon that takes Avahi's name
    /// again gets the same name registered anew.
    @Test func aTakenNameIsReplacedByAvahisAlternative() throws {
        let group = "/Client3/EntryGroup1"
        var serial: UInt32 = 100
        func message(_ type: UInt8, replyTo: UInt32? = nil, error: String? = nil, member: String? = nil, path: String = group,
                     body: [DBusMessage.Value] = []) throws -> DBusMessage {
            serial += 1
            var fields: [(UInt8, DBusMessage.Value)] = []
            if let replyTo { fields.append((5, .uint32(replyTo))) }
            if let error { fields.append((4, .string(error))) }
            if let member {
                fields += [(1, .objectPath(path)), (2, .string("org.freedesktop.Avahi.EntryGroup")), (3, .string(member))]
            }
            if !body.isEmpty { fields.append((8, .signature(body.map(\.signature).joined()))) }
            return try #require(DBusMessage.read(from: BusBytes(DBusMessage.encode(type: type, flags: 1, serial: serial, fields: fields, body: body))))
        }
        func reply(_ call: [UInt8], _ body: [DBusMessage.Value] = []) throws -> DBusMessage {
            try message(DBusMessage.methodReturn, replyTo: sent(call).serial, body: body)
        }
        func state(_ value: Int32, _ error: String = "", path: String = group) throws -> DBusMessage {
            try message(DBusMessage.signal, member: "StateChanged", path: path, body: [.int32(value), .string(error)])
        }
        /// The member, serial and string arguments of a call the registration sends.
        func sent(_ call: [UInt8]) throws -> (member: String, serial: UInt32, strings: [String]) {
            let decoded = try #require(DBusMessage.read(from: BusBytes(call)))
            var reader = DBusMessage.Reader(bytes: call, bigEndian: false)
            reader.position = 8
            let callSerial = reader.uint32() ?? 0
            var arguments = decoded.arguments
            var strings: [String] = []
            for code in decoded.signature {
                switch code {
                case "s": strings.append(arguments.string() ?? "<not a string>")
                case "i": _ = arguments.int32()
                case "u": _ = arguments.uint32()
                case "q": _ = arguments.uint16()
                default: break
                }
            }
            return (decoded.member ?? "", callSerial, strings)
        }
        func only(_ calls: [[UInt8]]) throws -> [UInt8] {
            try #require(calls.count == 1, "\(calls.count) calls")
            return calls[0]
        }
        /// A registration of one catalog as 'steamdeck', taken until AddService was answered.
        func registered() throws -> (PeerAnnouncement.Registration, commit: [UInt8]) {
            var registration = PeerAnnouncement.Registration(catalogIDs: ["peer-game"], names: ["steamdeck"], port: 7420)
            let addMatch = try only(registration.start())
            #expect(try sent(addMatch).member == "AddMatch")
            let watch = try only(registration.take(reply(addMatch)))
            #expect(try sent(watch).member == "AddMatch" && sent(watch).strings.first?.contains("NameOwnerChanged") == true)
            let newGroup = try only(registration.take(reply(watch)))
            #expect(try sent(newGroup).member == "EntryGroupNew")
            let add = try only(registration.take(reply(newGroup, [.objectPath(group)])))
            #expect(try sent(add).member == "AddService" && sent(add).strings == ["steamdeck", "_odr._tcp", "", ""])
            let commit = try only(registration.take(reply(add)))
            #expect(try sent(commit).member == "Commit")
            return (registration, commit)
        }

        // Taken on the network after the commit: StateChanged COLLISION.
        let first = try registered()
        var registration = first.0
        let commit = first.commit
        #expect(registration.take(try state(1)).isEmpty)
        #expect(registration.take(try reply(commit)).isEmpty)
        #expect(registration.isCommitted && registration.awaited == nil && registration.status.state == .registering)
        #expect(registration.take(try state(3, path: "/Client3/EntryGroup2")).isEmpty)
        let reset = try only(registration.take(state(3)))
        #expect(try sent(reset).member == "Reset")
        #expect(registration.status.renames == 1 && registration.status.state == .registering)
        #expect(registration.take(try state(0)).isEmpty)
        let alternative = try only(registration.take(reply(reset)))
        #expect(try sent(alternative).member == "GetAlternativeServiceName" && sent(alternative).strings == ["steamdeck"])
        let again = try only(registration.take(reply(alternative, [.string("steamdeck #2")])))
        #expect(try sent(again).member == "AddService" && sent(again).strings.first == "steamdeck #2")
        let recommit = try only(registration.take(reply(again)))
        #expect(registration.take(try reply(recommit)).isEmpty)
        #expect(registration.take(try state(2)).isEmpty)
        #expect(registration.status == PeerAnnouncement.Status(state: .established, names: ["steamdeck #2"], renames: 1))

        // Taken by another client of the same Avahi: AddService answers CollisionError.
        var local = PeerAnnouncement.Registration(catalogIDs: ["peer-game"], names: ["steamdeck"], port: 7420)
        let addMatch = try only(local.start())
        let newGroup = try only(local.take(reply(only(local.take(reply(addMatch))))))
        let add = try only(local.take(reply(newGroup, [.objectPath(group)])))
        let localReset = try only(local.take(message(DBusMessage.error, replyTo: sent(add).serial, error: "org.freedesktop.Avahi.CollisionError")))
        #expect(try sent(localReset).member == "Reset")
        #expect(!local.isCommitted && local.status.renames == 1)

        // Sixteen renames in a row, then the seventeenth collision fails.
        var crowded = try registered().0
        for round in 1...PeerAnnouncement.maximumRenames {
            let reset = try only(crowded.take(state(3)))
            let alternative = try only(crowded.take(reply(reset)))
            let add = try only(crowded.take(reply(alternative, [.string("steamdeck #\(round + 1)")])))
            _ = try only(crowded.take(reply(add)))
        }
        #expect(crowded.take(try state(3)).isEmpty)
        guard case .failed(let error) = crowded.status.state else { Issue.record("\(crowded.status)"); return }
        #expect(error.code == .nameCollision && error.message.contains("odr share --name"), "\(error)")
        #expect(crowded.take(try state(2)).isEmpty && crowded.status.state == .failed(error))

        // FAILURE, and answers of another shape.
        var failing = try registered().0
        #expect(failing.take(try state(4, "org.freedesktop.Avahi.NotPermittedError")).isEmpty)
        #expect(Self.failure(failing.status)?.code == .announcementFailed)
        #expect(Self.failure(failing.status)?.message.contains("NotPermittedError") == true)
        var badState = try registered().0
        _ = badState.take(try message(DBusMessage.signal, member: "StateChanged", body: [.int32(2)]))
        #expect(Self.failure(badState.status)?.code == .malformedReply)
        var badName = try registered().0
        let badReset = try only(badName.take(state(3)))
        let badAlternative = try only(badName.take(reply(badReset)))
        _ = badName.take(try reply(badAlternative, [.string(String(repeating: "x", count: 64))]))
        #expect(Self.failure(badName.status)?.code == .malformedReply)
        var refused = PeerAnnouncement.Registration(catalogIDs: ["peer-game"], names: ["steamdeck"], port: 7420)
        let refusedMatch = try only(refused.start())
        let refusedGroup = try only(refused.take(reply(only(refused.take(reply(refusedMatch))))))
        _ = refused.take(try message(DBusMessage.error, replyTo: sent(refusedGroup).serial, error: "org.freedesktop.DBus.Error.ServiceUnknown"))
        #expect(Self.failure(refused.status)?.code == .avahiUnavailable)

        // Avahi leaving the bus (a restart forgets the group): the registration waits, ignores what
        // the old daemon's calls and group would still say, and registers the same name again once
        // a daemon owns Avahi's name. Another name's owner changing, or a signal not from the bus, is nothing.
        var orphaned = try registered()
        func ownerChanged(_ name: String, sender: String = "org.freedesktop.DBus", newOwner: String = "") throws -> DBusMessage {
            serial += 1
            let fields: [(UInt8, DBusMessage.Value)] = [(1, .objectPath("/org/freedesktop/DBus")), (2, .string("org.freedesktop.DBus")),
                                                        (3, .string("NameOwnerChanged")), (7, .string(sender)), (8, .signature("sss"))]
            let body: [DBusMessage.Value] = [.string(name), .string(newOwner.isEmpty ? ":1.3" : ""), .string(newOwner)]
            return try #require(DBusMessage.read(from: BusBytes(DBusMessage.encode(type: DBusMessage.signal, flags: 1, serial: serial, fields: fields, body: body))))
        }
        #expect(orphaned.0.take(try ownerChanged("org.freedesktop.NetworkManager")).isEmpty && orphaned.0.status.state == .registering)
        #expect(orphaned.0.take(try ownerChanged("org.freedesktop.Avahi", sender: ":1.9")).isEmpty && orphaned.0.status.state == .registering)
        #expect(orphaned.0.take(try ownerChanged("org.freedesktop.Avahi")).isEmpty)
        #expect(orphaned.0.status == PeerAnnouncement.Status(state: .waitingForAvahi, names: ["steamdeck"], renames: 0, avahiRestarts: 1))
        #expect(!orphaned.0.isCommitted && orphaned.0.awaited == nil && orphaned.0.group == nil)
        #expect(orphaned.0.take(try reply(orphaned.commit)).isEmpty)
        #expect(orphaned.0.take(try state(3)).isEmpty)
        #expect(orphaned.0.status.state == .waitingForAvahi)
        let renewed = try only(orphaned.0.take(ownerChanged("org.freedesktop.Avahi", newOwner: ":1.12")))
        #expect(try sent(renewed).member == "EntryGroupNew" && orphaned.0.status.state == .registering)
        let readd = try only(orphaned.0.take(reply(renewed, [.objectPath("/Client1/EntryGroup1")])))
        #expect(try sent(readd).member == "AddService" && sent(readd).strings.first == "steamdeck")
        let recommitted = try only(orphaned.0.take(reply(readd)))
        #expect(try sent(recommitted).member == "Commit")
        #expect(orphaned.0.take(try reply(recommitted)).isEmpty)
        #expect(orphaned.0.take(try state(2, path: "/Client1/EntryGroup1")).isEmpty)
        #expect(orphaned.0.status == PeerAnnouncement.Status(state: .established, names: ["steamdeck"], renames: 0, avahiRestarts: 1))
    }

    /// The error of a failed announcement status.
    static func failure(_ status: PeerAnnouncement.Status) -> PeerDiscoveryError? {
        if case .failed(let error) = status.state { return error }
        return nil
    }
}
