#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#endif
import ODRFormat

/// A DNS-SD announcement of a shared store (`_odr._tcp`, one service per catalog id, the id in the
/// TXT record as `catalog=<id>`), registered with Avahi over the system D-Bus. It lasts as long as
/// this object's bus connection: ``stop()`` (or the end of the process) withdraws it, since Avahi
/// removes what a client registered when the client leaves the bus.
///
/// Names are unique on a link, and devices of one household often share a host name (every Steam
/// Deck is `steamdeck`), so the first name may be taken. The announcement follows the state of
/// Avahi's entry group for as long as it lasts, on a thread of its own: when Avahi finds a name
/// taken (at registration, or later when a device with the same name joins the network), it asks
/// Avahi for the next one (`GetAlternativeServiceName`: `name #2`, `name #3`, ...) and registers
/// again, at most ``maximumRenames`` times in a row before it fails with
/// ``PeerDiscoveryError/Code/nameCollision``. ``status`` says where it stands and
/// under which names; the names are final once it is
/// ``State/established`` (Avahi has probed them and answers for them).
///
/// An avahi-daemon that leaves the bus (it stopped, crashed or restarts) takes the services with
/// it. The announcement then waits for it (``State/waitingForAvahi``: the bus says when a program
/// takes Avahi's name again) and registers the same names again on the new daemon, through the
/// same collision handling as at the start.
///
/// What the LAN learns from it: that this machine shares odr content of these catalogs on this
/// port (docs/SECURITY.md, "Discovery").
///
/// ```swift
/// let announcement = try PeerAnnouncement(catalogIDs: ["com.example.game"], port: 7420)
/// let status = await announcement.waitUntilSettled(timeout: .seconds(5))
/// if status.state == .established { print("Announced as \(status.names)") }
/// ```
public final class PeerAnnouncement: Sendable {
    /// Where an announcement stands.
    public enum State: Sendable, Equatable {
        /// Avahi is probing the names (about a second after each registration), or registering
        /// them again after a collision.
        case registering
        /// Avahi has probed the names and answers for them: devices that browse see the services.
        case established
        /// avahi-daemon left the system bus and the services with it (it stopped or restarts):
        /// nothing is announced until a daemon takes its name on the bus again; the names are then
        /// registered again (``registering``, then ``established``).
        case waitingForAvahi
        /// The announcement ended and is no longer visible; the error says why and what to do.
        case failed(PeerDiscoveryError)
    }

    /// The state and the names, as one value.
    public struct Status: Sendable, Equatable {
        public var state: State
        /// The DNS-SD instance names, one per catalog id; final once ``state`` is established.
        public var names: [String]
        /// How many times a name was found taken and changed since the announcement began.
        public var renames: Int
        /// How many times avahi-daemon left the bus (and the names were, or are to be, registered
        /// again) since the announcement began: a status that is established again after a restart
        /// differs from the one before it by this count.
        public var avahiRestarts = 0
    }

    /// The most times in a row a name found taken is replaced before the announcement fails.
    public static let maximumRenames = 16
    /// The most bytes of UTF-8 in a DNS-SD instance name (one DNS label).
    public static let maximumNameBytes = 63

    private let follower: Follower

    /// Where the announcement stands now, and under which names.
    public var status: Status { follower.status }

    /// The DNS-SD instance names, one per catalog id (see ``status``).
    public var names: [String] { status.names }

    /// Announces `catalogIDs` shared on `port`, and returns once Avahi has taken the registration
    /// (the names are then being probed: see ``waitUntilSettled(timeout:)``).
    ///
    /// - Parameters:
    ///   - name: the instance name; by default `odr on <host>:<port>`. At most 63 bytes of UTF-8
    ///     (``maximumNameBytes``). With several catalogs, the second and later are announced as
    ///     `<name> 2`, `<name> 3`, ...
    ///   - socketPath: the system bus's socket; by default from `DBUS_SYSTEM_BUS_ADDRESS`.
    ///   - timeout: the most seconds to wait for each answer (default 2).
    /// - Throws: ``PeerDiscoveryError``: no bus, no Avahi, a refusal, every name taken
    ///   (`nameCollision`), no answer, a name that is not a DNS-SD instance name or a catalog id too
    ///   long for a TXT record (247 bytes).
    public init(catalogIDs: [String], port: Int, name: String? = nil, socketPath: String? = nil,
                timeout: Double = 2) throws(PeerDiscoveryError) {
        guard let port = UInt16(exactly: port), port != 0 else {
            throw PeerDiscoveryError(.invalidRecord, "Port \(port) cannot be announced; give the port the share server listens on.")
        }
        if let name, let problem = Self.problem(withName: name) { throw PeerDiscoveryError(.invalidRecord, problem) }
        let ids = catalogIDs.reduce(into: [String]()) { if !$0.contains($1) { $0.append($1) } }
        guard !ids.isEmpty else { throw PeerDiscoveryError(.invalidRecord, "There is no catalog to announce: the store holds none yet.") }
        for id in ids where id.utf8.count + DiscoveredService.catalogKey.utf8.count + 1 > 255 || id.isEmpty {
            throw PeerDiscoveryError(.invalidRecord, "The catalog id '\(id.prefix(40))…' does not fit in a DNS-SD TXT entry (255 bytes).")
        }
        let path = socketPath ?? BusConnection.systemBusPathFromEnvironment
        guard let connection = BusConnection.systemBus(path: path, timeout: timeout) else {
            throw PeerDiscoveryError(.busUnavailable, "No system D-Bus at '\(path)' (or it refused this user), so the store cannot be announced; start dbus and avahi-daemon, or give peers the URL.")
        }
        let base = name ?? Self.instanceName(port: port)
        let names = ids.indices.map { ids.count == 1 ? base : Self.name(base, suffix: " \($0 + 1)") }
        var registration = Registration(catalogIDs: ids, names: names, port: port)
        // Until Avahi has taken the registration (or refused it): answers to wait for in turn,
        // with a bound on the messages read, for a bus that sends only other things.
        var calls = registration.start()
        var budget = 64 + (Self.maximumRenames + 1) * (2 * ids.count + 8)
        while case .registering = registration.status.state, !registration.isCommitted || registration.awaited != nil {
            guard calls.allSatisfy({ connection.send($0) }) else {
                connection.close()
                throw PeerDiscoveryError(.busUnavailable, "The system D-Bus closed the connection; the store cannot be announced.")
            }
            guard budget > 0, let message = DBusMessage.read(from: connection) else {
                connection.close()
                throw PeerDiscoveryError(.timedOut, "Avahi did not answer \(registration.awaited ?? "the announcement") in time; check that avahi-daemon runs (systemctl status avahi-daemon).")
            }
            budget -= 1
            calls = registration.take(message)
        }
        if case .failed(let error) = registration.status.state {
            connection.close()
            throw error
        }
        follower = Follower(registration: registration, connection: connection)
        let follower = follower
        let first = calls
        RuntimeThreads.start(name: "odr-announce") { follower.run(calls: first) }
    }

    deinit { stop() }

    /// Withdraws the announcement (ends the bus connection); calling it again does nothing.
    public func stop() { follower.stop() }

    /// Waits until Avahi has established the names or the announcement has failed, at most
    /// `timeout`; returns the status then (still ``State/registering`` or
    /// ``State/waitingForAvahi`` when the time ran out: Avahi probes each name for about a
    /// second, and longer after a collision).
    public func waitUntilSettled(timeout: Duration) async -> Status {
        let deadline = ContinuousClock.now + timeout
        while true {
            let now = status
            guard now.state == .registering || now.state == .waitingForAvahi, ContinuousClock.now < deadline else { return now }
            try? await Task.sleep(for: .milliseconds(20))
        }
    }

    /// `odr on <host>:<port>`, at most 63 bytes (a DNS label).
    static func instanceName(port: UInt16) -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        let host = gethostname(&buffer, buffer.count) == 0
            ? String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : "host"
        return name("odr on \(host)", suffix: ":\(port)")
    }

    /// `base` followed by `suffix`, `base` cut at a character so that the whole takes at most
    /// ``maximumNameBytes`` bytes.
    static func name(_ base: String, suffix: String) -> String {
        var kept = ""
        for character in base where kept.utf8.count + character.utf8.count + suffix.utf8.count <= maximumNameBytes {
            kept.append(character)
        }
        return kept + suffix
    }

    /// Why `name` cannot be a DNS-SD instance name, and what to do; `nil` when it can.
    public static func problem(withName name: String) -> String? {
        if name.isEmpty { return "The announced name is empty; give a name such as 'Living room Deck', or none for 'odr on <host>:<port>'." }
        if name.utf8.count > maximumNameBytes {
            return "The announced name '\(name.prefix(20))…' takes \(name.utf8.count) bytes of UTF-8; DNS-SD allows \(maximumNameBytes): give a shorter one."
        }
        if name.unicodeScalars.contains(where: { $0.properties.generalCategory == .control }) {
            return "The announced name contains a control character; give a name of letters, digits, spaces and punctuation."
        }
        return nil
    }

    /// The announcement's status and bus connection, shared by its owner and the thread that
    /// follows the entry group's state.
    private final class Follower: @unchecked Sendable {
        private let lock = ConditionLock()
        // Read and written only with `lock` held: `registration`'s status (the thread keeps
        // `registration` itself), `stopped`, `closed`. The connection's reads and sends happen only
        // on the follower thread; `stop()` only shuts it down, with `lock` held, before it is
        // closed (by the thread, with `lock` held).
        private var current: Status
        private var stopped = false
        private var closed = false
        private var registration: Registration
        private let connection: BusConnection

        init(registration: Registration, connection: BusConnection) {
            self.registration = registration
            self.connection = connection
            current = registration.status
        }

        var status: Status { lock.withLock { current } }

        func stop() {
            lock.withLock {
                stopped = true
                if !closed { connection.shutdown() }
            }
        }

        /// Sends `calls`, then reads Avahi's messages and answers them until the announcement
        /// stops or fails; closes the connection at the end.
        func run(calls first: [[UInt8]]) {
            var calls = first
            while true {
                if !calls.allSatisfy({ connection.send($0) }) {
                    end(.failed(PeerDiscoveryError(.busUnavailable, "The system D-Bus closed the connection, so the store is no longer announced; restart the share once dbus runs.")))
                    return
                }
                calls = []
                let readable = connection.waitUntilReadable(milliseconds: 500)
                if lock.withLock({ stopped }) { return end(nil) }
                guard readable else { continue }
                guard let message = DBusMessage.read(from: connection) else {
                    if lock.withLock({ stopped }) { return end(nil) }
                    end(.failed(PeerDiscoveryError(.busUnavailable, "The system D-Bus closed the connection (or sent bytes that are not a message), so the store is no longer announced; restart the share once dbus and avahi-daemon run.")))
                    return
                }
                calls = registration.take(message)
                let status = registration.status
                lock.withLock { current = status }
                if case .failed = status.state { return end(nil) }
            }
        }

        /// Closes the connection, with `state` as the last state unless the announcement was stopped.
        private func end(_ state: State?) {
            lock.withLock {
                if let state, !stopped { current.state = state }
                if !closed { connection.close() }
                closed = true
            }
        }
    }
}

extension PeerAnnouncement {
    /// The registration as a state machine over the bus's messages: pure, so it can be fed bytes in
    /// tests. Calls go one at a time (each waits for the answer to the one before): `AddMatch` for
    /// the entry group's signals and for Avahi leaving the bus, `EntryGroupNew`, `AddService` for each catalog, `Commit`; then it
    /// follows `StateChanged`. A name taken (a `CollisionError` answer to `AddService`, or the state
    /// COLLISION) leads to `Reset`, `GetAlternativeServiceName` for each name, and `AddService` and
    /// `Commit` again; state FAILURE, an error answer or an answer of another shape ends it. Avahi
    /// leaving the bus (`NameOwnerChanged` with no new owner: the daemon has forgotten the group)
    /// makes it wait; when a daemon owns the name again, it starts over at `EntryGroupNew` with
    /// the same names.
    struct Registration {
        /// Avahi's entry group states (`AvahiEntryGroupState`).
        static let uncommitted: Int32 = 0, registering: Int32 = 1, established: Int32 = 2, collision: Int32 = 3, failure: Int32 = 4
        static let groupInterface = "org.freedesktop.Avahi.EntryGroup"
        static let avahi = "org.freedesktop.Avahi"
        /// The bus's own name, interface and signals' sender.
        static let bus = "org.freedesktop.DBus"
        /// The D-Bus errors Avahi answers `AddService` with when a name is taken on this machine.
        static let collisionErrors: Set<String> = ["org.freedesktop.Avahi.CollisionError", "org.freedesktop.Avahi.LocalCollisionError"]

        private enum Step: Equatable {
            case addMatch, watchAvahi, newGroup, add(Int), commit, reset, rename(Int)

            var member: String {
                switch self {
                case .addMatch, .watchAvahi: "AddMatch"
                case .newGroup: "EntryGroupNew"
                case .add: "AddService"
                case .commit: "Commit"
                case .reset: "Reset"
                case .rename: "GetAlternativeServiceName"
                }
            }
        }

        let catalogIDs: [String]
        let port: UInt16
        private(set) var status: Status
        /// The entry group's object path, once Avahi has answered `EntryGroupNew`.
        private(set) var group: String?
        /// Whether the services are committed (Avahi is probing them, or has established them).
        private(set) var isCommitted = false
        /// Names found taken since the group was last established.
        private var renamesInARow = 0
        private var pending: (serial: UInt32, step: Step)?
        private var nextSerial: UInt32 = 2

        init(catalogIDs: [String], names: [String], port: UInt16) {
            self.catalogIDs = catalogIDs
            self.port = port
            status = Status(state: .registering, names: names, renames: 0)
        }

        /// The method whose answer is awaited, if any.
        var awaited: String? { pending?.step.member }

        /// The first call (serial 1 is the connection's `Hello`).
        mutating func start() -> [[UInt8]] { [call(.addMatch)] }

        /// Takes one message; returns the calls to send.
        mutating func take(_ message: DBusMessage) -> [[UInt8]] {
            if case .failed = status.state { return [] }
            if message.type == DBusMessage.signal, message.member == "NameOwnerChanged", message.sender == Self.bus {
                return ownerChanged(message)
            }
            if message.type == DBusMessage.signal {
                guard message.interface == Self.groupInterface, message.member == "StateChanged", let group, message.path == group else { return [] }
                return stateChanged(message)
            }
            guard let pending, message.replySerial == pending.serial,
                  message.type == DBusMessage.methodReturn || message.type == DBusMessage.error else { return [] }
            self.pending = nil
            let step = pending.step
            if message.type == DBusMessage.error {
                switch step {
                case .addMatch, .watchAvahi:
                    return fail(.busUnavailable, "The system D-Bus refused to deliver Avahi's signals (\(message.errorName ?? "no error name")), so the store cannot be announced.")
                case .add where message.errorName.map(Self.collisionErrors.contains) == true:
                    return collided()
                default:
                    status.state = .failed(PeerDiscoveryError.refused(message.errorName, doing: "announced"))
                    return []
                }
            }
            let expected = switch step {
            case .newGroup: "o"
            case .rename: "s"
            default: ""
            }
            guard message.signature == expected else {
                return fail(.malformedReply, "Avahi's answer to \(step.member) has signature '\(message.signature)', not '\(expected)'.")
            }
            switch step {
            case .addMatch:
                return [call(.watchAvahi)]
            case .watchAvahi:
                return [call(.newGroup)]
            case .newGroup:
                var arguments = message.arguments
                guard let path = arguments.string(), path.hasPrefix("/") else {
                    return fail(.malformedReply, "Avahi's answer to EntryGroupNew is not an object path.")
                }
                group = path
                return [call(.add(0))]
            case .add(let index):
                return [call(index + 1 < status.names.count ? .add(index + 1) : .commit)]
            case .commit:
                // StateChanged may come before this answer; both orders are fine.
                return []
            case .reset:
                return [call(.rename(0))]
            case .rename(let index):
                var arguments = message.arguments
                let old = status.names[index]
                guard let name = arguments.string(), name != old, PeerAnnouncement.problem(withName: name) == nil else {
                    return fail(.malformedReply, "Avahi's answer to GetAlternativeServiceName for '\(old)' is not another instance name.")
                }
                status.names[index] = name
                return [call(index + 1 < status.names.count ? .rename(index + 1) : .add(0))]
            }
        }

        /// A `StateChanged` signal of the group (`is`: the state, and an error name for FAILURE).
        private mutating func stateChanged(_ message: DBusMessage) -> [[UInt8]] {
            var arguments = message.arguments
            guard message.signature == "is", let state = arguments.int32(), let error = arguments.string() else {
                return fail(.malformedReply, "Avahi's StateChanged signal has signature '\(message.signature)', not 'is'.")
            }
            // States of a group being rebuilt (UNCOMMITED after Reset) say nothing about the names.
            guard isCommitted else { return [] }
            switch state {
            case Self.registering:
                status.state = .registering
            case Self.established:
                status.state = .established
                renamesInARow = 0
            case Self.collision:
                return collided()
            case Self.failure:
                return fail(.announcementFailed, "Avahi could not publish the announcement (\(error.isEmpty ? "no reason given" : error)); check avahi-daemon's log (journalctl -u avahi-daemon), then restart the share.")
            default:
                break
            }
            return []
        }

        /// The bus's `NameOwnerChanged` (`sss`: a name, its old owner, its new one). Avahi's name
        /// without a new owner: the daemon left and forgot the group, and answers no call awaited.
        /// With a new owner: a daemon (re)started, which knows nothing of this client yet.
        private mutating func ownerChanged(_ message: DBusMessage) -> [[UInt8]] {
            var arguments = message.arguments
            guard message.signature == "sss", let name = arguments.string(), arguments.string() != nil, let owner = arguments.string() else {
                return fail(.malformedReply, "The bus's NameOwnerChanged signal has signature '\(message.signature)', not 'sss'.")
            }
            guard name == Self.avahi else { return [] }
            group = nil
            isCommitted = false
            pending = nil
            guard !owner.isEmpty else {
                if status.state != .waitingForAvahi { status.avahiRestarts += 1 }
                status.state = .waitingForAvahi
                return []
            }
            // The same names again: one taken meanwhile collides, as at the start.
            status.state = .registering
            renamesInARow = 0
            return [call(.newGroup)]
        }

        /// A name is taken: the next names, unless that has happened too often in a row.
        private mutating func collided() -> [[UInt8]] {
            guard renamesInARow < PeerAnnouncement.maximumRenames else {
                return fail(.nameCollision, "Every name up to '\(status.names[0])' is taken on the local network (\(PeerAnnouncement.maximumRenames) tried); give the share a name of its own (odr share --name, or PeerAnnouncement's name).")
            }
            renamesInARow += 1
            status.renames += 1
            status.state = .registering
            isCommitted = false
            return [call(.reset)]
        }

        private mutating func fail(_ code: PeerDiscoveryError.Code, _ message: String) -> [[UInt8]] {
            status.state = .failed(PeerDiscoveryError(code, message))
            return []
        }

        /// The call for `step`, which becomes the awaited one.
        private mutating func call(_ step: Step) -> [UInt8] {
            defer { nextSerial += 1 }
            pending = (nextSerial, step)
            let avahi = Self.avahi
            switch step {
            case .addMatch, .watchAvahi:
                let match = step == .addMatch ? "type='signal',sender='\(avahi)',interface='\(Self.groupInterface)'"
                    : "type='signal',sender='\(Self.bus)',interface='\(Self.bus)',member='NameOwnerChanged',arg0='\(avahi)'"
                return DBusMessage.methodCall(serial: nextSerial, path: "/org/freedesktop/DBus", interface: Self.bus,
                                              member: "AddMatch", destination: Self.bus, arguments: [.string(match)])
            case .newGroup, .rename:
                var arguments: [DBusMessage.Value] = []
                if case .rename(let index) = step { arguments = [.string(status.names[index])] }
                return DBusMessage.methodCall(serial: nextSerial, path: "/", interface: "\(avahi).Server", member: step.member,
                                              destination: avahi, arguments: arguments)
            case .add(let index):
                let txt: [[UInt8]] = [Array("\(DiscoveredService.catalogKey)=\(catalogIDs[index])".utf8)]
                return DBusMessage.methodCall(serial: nextSerial, path: group ?? "/", interface: Self.groupInterface, member: step.member,
                                              destination: avahi,
                                              arguments: [.int32(-1), .int32(-1), .uint32(0), .string(status.names[index]),
                                                          .string(DiscoveredService.serviceType), .string(""), .string(""), .uint16(port),
                                                          .byteArrays(txt)])
            case .commit, .reset:
                if step == .commit { isCommitted = true }
                return DBusMessage.methodCall(serial: nextSerial, path: group ?? "/", interface: Self.groupInterface, member: step.member,
                                              destination: avahi, arguments: [])
            }
        }
    }
}

extension PeerAnnouncement {
    /// A registration of one catalog fed the messages in `bytes` one after another (at most 64), as
    /// Avahi's answers and signals; its status at the end, or `nil` when the bytes hold no message.
    /// For the `dbus-reply` fuzz target, which feeds it untrusted bytes.
    package static func status(afterMessages bytes: [UInt8]) -> Status? {
        var registration = Registration(catalogIDs: ["game"], names: ["odr on box:7420"], port: 7420)
        _ = registration.start()
        let source = BusBytes(bytes)
        var count = 0
        while count < 64, let message = DBusMessage.read(from: source) {
            _ = registration.take(message)
            count += 1
        }
        return count == 0 ? nil : registration.status
    }
}
