import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Discovery of peers on the LAN (issue 43, part 3): `odr share --announce` registers `_odr._tcp`
/// with Avahi, `odr fetch --discover` browses it, keeps the records of its catalog and installs
/// from them. Real daemons: a private dbus-daemon and avahi-daemon (``PrivateAvahi``).
@Suite(.serialized)
struct PeerDiscoveryTests {
    /// What a user sees: a store shared and announced with catalog id X is found by a fetch with
    /// `--discover` of catalog X, which installs the tag's files from it (the CDN sends at most 1%
    /// of the pack bytes, the share's log shows it sent them) and names it in its output and in
    /// `odr log`; a record announced for another catalog is ignored, with its reason in the log.
    /// Every child is run with a bounded wait and killed and reaped at the end, whatever happens.
    @Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)), .timeLimit(.minutes(10)))
    func anAnnouncedStoreOfTheCatalogIsFoundAndServesTheInstall() async throws {
        let avahi = try await PrivateAvahi()
        defer { avahi.stop() }
        let fixture = try await PeerInstallTests.game(files: 2, fileBytes: 1 << 20)
        let first = try TemporaryDirectory(prefix: "odr-discover-a")
        let second = try TemporaryDirectory(prefix: "odr-discover-b")
        let odr = try #require(ODRExecutable.url)
        let bus = ["DBUS_SYSTEM_BUS_ADDRESS": avahi.busAddress]
        try await withTestServer(root: fixture.catalog) { cdn in
            let catalog = cdn.baseURL.absoluteString
            let seeded = try await Self.run(odr, ["fetch", "--no-sync", "--catalog", catalog, "--store", first.url.path, "level"])
            try #require(seeded.status == 0, "\(seeded.stderr)")
            // --verbose: the share logs each request, with the bytes it sent.
            let share = try RunningProcess(odr, ["share", "--store", first.url.path, "--port", "0", "--rate", "0", "--announce", "--verbose"],
                                           environment: bus)
            defer { share.terminate() }
            try await share.waitForOutput(containing: "Stop with Ctrl-C.", timeout: .seconds(60))
            #expect(share.stdout.contains("Announced as 'odr on "), "\(share.stdout)")
            // A share of another game on the same LAN.
            let other = try PeerAnnouncement(catalogIDs: ["another-game"], port: 9, socketPath: avahi.busSocket)
            defer { other.stop() }
            // Avahi publishes a record once it has probed its name: wait until a browse sees both.
            let discovery = PeerDiscovery(socketPath: avahi.busSocket, timeout: 5)
            var report = PeerDiscovery.Report()
            try await waitUntil("both records to be browsable (last report: \(report))", timeout: .seconds(60)) {
                report = try discovery.discover(catalogID: "peer-game")
                return report.peers.count == 1 && report.ignored.contains { $0.reason == .otherCatalog }
            }
            let peer = try #require(report.peers.first)
            #expect(share.stdout.contains(" at \(peer.absoluteString) "), "\(peer) \(share.stdout)")
            #expect(report.ignored.map(\.reason) == [.otherCatalog])

            cdn.clearRequests()
            let viaPeer = try await Self.run(odr, ["fetch", "--no-sync", "--catalog", catalog, "--store", second.url.path, "--discover",
                                                  // A bound for a loaded machine; the browse ends once the
                                                  // peer Avahi already knows is resolved.
                                                  "--discover-timeout", "20", "level"],
                                             environment: bus)
            #expect(viaPeer.status == 0, "\(viaPeer.stderr)")
            #expect(viaPeer.stdout.contains("from peers (\(peer.absoluteString)"), "\(viaPeer.stdout)")
            await cdn.waitUntilIdle()
            let packBytes = try Self.packBytes(in: fixture.catalog)
            let fromCDN = cdn.requests().filter { $0.target.hasPrefix("/packs/") }.reduce(0) { $0 + $1.bytesSent }
            #expect(fromCDN * 100 <= packBytes, "the CDN sent \(fromCDN) of \(packBytes) pack bytes")
            let served = Self.bytesServed(inShareLog: share.stderr)
            #expect(served >= 2 << 20, "the share sent \(served) bytes: \(share.stderr)")
            for index in 0..<2 {
                let path = "level/part\(index).bin"
                let located = try await Self.run(odr, ["path", "--store", second.url.path, "--offline", path])
                #expect(located.status == 0, "\(located.stderr)")
                let file = URL(filePath: located.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
                #expect(try Data(contentsOf: file) == fixture.contents(of: path), "\(path)")
            }
            let log = try await Self.run(odr, ["log", "--store", second.url.path])
            #expect(log.stdout.contains("found 1 peer (\(peer.absoluteString))"), "\(log.stdout)")
            #expect(log.stdout.contains("ignored 'odr on "), "\(log.stdout)")
            #expect(log.stdout.contains(":9: other-catalog"), "\(log.stdout)")
        }
    }

    /// Without Avahi, or without a bus, discovery says why at once, and a fetch with `--discover`
    /// installs from the CDN.
    @Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)))
    func withoutAvahiDiscoveryFailsWithATypedReasonAndTheFetchGoesOn() async throws {
        let folder = try TemporaryDirectory(prefix: "odr-discover-none")
        let noBus = folder.url.appending(path: "no-bus.sock").path
        #expect(Self.code { try PeerDiscovery(socketPath: noBus, timeout: 60).discover(catalogID: "peer-game") } == .busUnavailable)
        #expect(Self.code { try PeerAnnouncement(catalogIDs: ["peer-game"], port: 7420, socketPath: noBus, timeout: 60) } == .busUnavailable)
        let bus = try await PrivateAvahi(avahi: false)
        do {
            defer { bus.stop() }
            #expect(Self.code { try PeerDiscovery(socketPath: bus.busSocket, timeout: 60).discover(catalogID: "peer-game") } == .avahiUnavailable)
            #expect(Self.code { try PeerAnnouncement(catalogIDs: ["peer-game"], port: 7420, socketPath: bus.busSocket, timeout: 60) } == .avahiUnavailable)
        }
        let fixture = try await PeerInstallTests.game(files: 1, fileBytes: 1 << 16)
        let store = try TemporaryDirectory(prefix: "odr-discover-cdn")
        try await withTestServer(root: fixture.catalog) { cdn in
            let fetched = try await ODRExecutable.run(["fetch", "--no-sync", "--catalog", cdn.baseURL.absoluteString, "--store", store.url.path,
                                                       "--discover", "level"], environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(noBus)"])
            #expect(fetched.status == 0, "\(fetched.stderr)")
            let log = try await ODRExecutable.run(["log", "--store", store.url.path])
            #expect(log.stdout.contains("failed: bus-unavailable"), "\(log.stdout)")
        }
    }

    /// Records are judged before they become peers: the catalog id in the TXT record must be the
    /// device's, and a loopback address counts only in a record of this machine's own Avahi.
    @Test(arguments: [
        ("peer-game", "192.168.1.20", UInt16(7420), UInt32(4), "http://192.168.1.20:7420/"),
        ("another-game", "192.168.1.20", 7420, 4, "other-catalog"),
        (nil, "192.168.1.20", 7420, 4, "no-catalog"),
        ("peer-game", "127.0.0.1", 7420, 4, "loopback-of-another-machine"),
        ("peer-game", "127.8.9.10", 7420, 4, "loopback-of-another-machine"),
        ("peer-game", "::1", 7420, 4, "loopback-of-another-machine"),
        ("peer-game", "::ffff:127.0.0.1", 7420, 4, "loopback-of-another-machine"),
        ("peer-game", "127.0.0.1", 7420, 8 | 4, "http://127.0.0.1:7420/"),
        ("peer-game", "2001:db8::5", 7420, 4, "http://[2001:db8::5]:7420/"),
        ("peer-game", "fe80::1", 7420, 4, "unusable-address"),
        ("peer-game", "0.0.0.0", 7420, 4, "unusable-address"),
        ("peer-game", "224.0.0.251", 7420, 4, "unusable-address"),
        ("peer-game", "peer.local", 7420, 4, "unusable-address"),
        ("peer-game", "192.168.1.20", 0, 4, "unusable-port"),
    ] as [(String?, String, UInt16, UInt32, String)])
    func recordsAreJudged(catalog: String?, address: String, port: UInt16, flags: UInt32, expected: String) {
        let service = DiscoveredService(name: "odr on box:7420", host: "box.local", address: address, port: port,
                                        txt: catalog.map { ["catalog": $0] } ?? ["v": "1"], flags: flags)
        switch service.verdict(catalogID: "peer-game") {
        case .peer(let url): #expect(url.absoluteString == expected)
        case .ignored(let reason): #expect(reason.rawValue == expected)
        }
    }

    /// When a browse ends, fed the messages a live Avahi sends (in its order: the browser's path,
    /// `ItemNew` for what it knows, `CacheExhausted` at once, `AllForNow` about a second later): as
    /// soon as a peer of the catalog is resolved among what Avahi knew, without waiting for
    /// `AllForNow`; with only records of other catalogs known, not before `AllForNow`.
    @Test func aBrowseEndsOnceAKnownPeerIsResolvedOrAvahiHasHeardFromTheNetwork() throws {
        let browser = "/Client3/ServiceBrowser1"
        func message(_ type: UInt8, serial: UInt32, replyTo: UInt32? = nil, member: String? = nil, body: [DBusMessage.Value]) throws -> DBusMessage {
            var fields: [(UInt8, DBusMessage.Value)] = []
            if let replyTo { fields.append((5, .uint32(replyTo))) }
            if let member {
                fields += [(1, .objectPath(browser)), (2, .string("org.freedesktop.Avahi.ServiceBrowser")), (3, .string(member))]
            }
            if !body.isEmpty { fields.append((8, .signature(body.map(\.signature).joined()))) }
            return try #require(DBusMessage.read(from: BusBytes(DBusMessage.encode(type: type, flags: 1, serial: serial, fields: fields, body: body))))
        }
        func itemNew(_ name: String, serial: UInt32) throws -> DBusMessage {
            try message(DBusMessage.signal, serial: serial, member: "ItemNew",
                        body: [.int32(1), .int32(0), .string(name), .string("_odr._tcp"), .string("local"), .uint32(8)])
        }
        func resolved(_ name: String, catalog: String, port: UInt16, serial: UInt32, replyTo: UInt32) throws -> DBusMessage {
            try message(DBusMessage.methodReturn, serial: serial, replyTo: replyTo,
                        body: [.int32(1), .int32(0), .string(name), .string("_odr._tcp"), .string("local"), .string("vm.local"), .int32(0),
                               .string("127.0.0.1"), .uint16(port), .byteArrays([Array("catalog=\(catalog)".utf8)]), .uint32(8)])
        }
        let path = try message(DBusMessage.methodReturn, serial: 26, replyTo: 3, body: [.objectPath(browser)])
        let exhausted = try message(DBusMessage.signal, serial: 40, member: "CacheExhausted", body: [])
        let allForNow = try message(DBusMessage.signal, serial: 41, member: "AllForNow", body: [])

        var known = PeerDiscovery.Conversation(catalogID: "peer-game", maximumPeers: 8)
        #expect(try known.take(path).isEmpty)
        #expect(try known.take(itemNew("odr on vm:7420", serial: 27)).count == 1)
        #expect(try known.take(exhausted).isEmpty)
        #expect(!known.isDone)
        _ = try known.take(resolved("odr on vm:7420", catalog: "peer-game", port: 7420, serial: 28, replyTo: 4))
        #expect(known.isDone && !known.report.complete)
        #expect(known.report.peers.map(\.absoluteString) == ["http://127.0.0.1:7420/"])

        var other = PeerDiscovery.Conversation(catalogID: "peer-game", maximumPeers: 8)
        _ = try other.take(path)
        _ = try other.take(itemNew("odr on vm:9", serial: 27))
        _ = try other.take(exhausted)
        _ = try other.take(resolved("odr on vm:9", catalog: "another-game", port: 9, serial: 28, replyTo: 4))
        #expect(!other.isDone)
        _ = try other.take(allForNow)
        #expect(other.isDone && other.report.complete && other.report.peers.isEmpty)
        #expect(other.report.ignored.map(\.reason) == [.otherCatalog])
    }

    /// Avahi's resolved record as it comes off the bus (an `aay` TXT record among other types)
    /// reads back into the service, and truncated bytes read as nothing.
    @Test func aResolvedRecordIsReadFromItsWireForm() throws {
        let txt: [[UInt8]] = [Array("CATALOG=peer-game".utf8), Array("flag".utf8), Array("catalog=second".utf8), [0xFF, 0x3D]]
        let bytes = DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 9, fields: [(5, .uint32(4)), (8, .signature("iissssisqaayu"))],
                                       body: [.int32(1), .int32(0), .string("odr on box:7420"), .string("_odr._tcp"), .string("local"),
                                              .string("box.local"), .int32(0), .string("192.168.1.20"), .uint16(7420), .byteArrays(txt), .uint32(4)])
        let message = try #require(DBusMessage.read(from: BusBytes(bytes)))
        let service = try #require(PeerDiscovery.Conversation.service(fromResolved: message))
        #expect(service == DiscoveredService(name: "odr on box:7420", host: "box.local", address: "192.168.1.20", port: 7420,
                                             txt: ["catalog": "peer-game", "flag": ""], flags: 4))
        for cut in stride(from: 16, to: bytes.count, by: 7) {
            if let partial = DBusMessage.read(from: BusBytes(Array(bytes[..<cut]))) {
                #expect(PeerDiscovery.Conversation.service(fromResolved: partial) == nil)
            }
        }
    }
}

extension PeerDiscoveryTests {
    /// Runs the built `odr` (or another executable) to its end, waiting at most `timeout`; the
    /// child is killed and reaped however this returns.
    static func run(_ executable: URL, _ arguments: [String], environment: [String: String] = [:],
                    timeout: Duration = .seconds(120)) async throws -> (status: Int32, stdout: String, stderr: String) {
        let child = try RunningProcess(executable, arguments, environment: environment)
        defer { child.terminate() }
        child.closeInput()
        let status = try await child.waitForExit(timeout: timeout)
        // The readers may still hold the last bytes: the pipes close when the child has exited.
        try await waitUntil("the child's output to end", timeout: .seconds(10)) { child.outputEnded }
        return (status, child.stdout, child.stderr)
    }

    /// The bytes of every pack of the catalog folder.
    static func packBytes(in catalog: URL) throws -> Int {
        let packs = catalog.appending(path: "packs")
        return try FileManager.default.contentsOfDirectory(atPath: packs.path).reduce(0) { total, name in
            total + ((try FileManager.default.attributesOfItem(atPath: packs.appending(path: name).path)[.size] as? NSNumber)?.intValue ?? 0)
        }
    }

    /// The body bytes an `odr share --verbose` log says it sent with status 200 or 206.
    static func bytesServed(inShareLog log: String) -> Int {
        log.split(separator: "\n").reduce(0) { total, line in
            guard let match = line.firstMatch(of: /GET \/odr\/v1\/sha256\/[0-9a-f]{64} 20[06] (\d+) bytes/) else { return total }
            return total + (Int(match.1) ?? 0)
        }
    }

    /// The code of the ``PeerDiscoveryError`` `body` throws; `nil` when it throws none (or another error).
    static func code(_ body: () throws -> Any) -> PeerDiscoveryError.Code? {
        do {
            _ = try body()
            return nil
        } catch {
            return (error as? PeerDiscoveryError)?.code
        }
    }
}
