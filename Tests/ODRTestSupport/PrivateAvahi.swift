import Foundation

/// A private system D-Bus and an Avahi daemon on it, for tests of DNS-SD discovery: `dbus-daemon`
/// with a policy that allows everything, listening on a socket in a temporary folder, and
/// `avahi-daemon` on the loopback interface only, in a mount namespace of its own (a tmpfs over
/// `/run/avahi-daemon`) and a network namespace of its own (only `lo`), so it neither meets nor
/// disturbs a system Avahi or another test's (several daemons on one `lo` hear each other, see
/// each other's records and fight over the host name). It publishes `127.0.0.1` for the records
/// of its clients, and a child on the host's network reaches a share there on its loopback.
/// Needs root, `dbus-daemon`, `avahi-daemon`, `unshare`, `nsenter` and `ip`: tests skip when the daemons
/// are not installed (``isInstalled``, `make deps` installs them), and ``init(avahi:)`` throws
/// for the rest. ``init(sharingNetworkWith:)`` starts a second machine on the same network, and
/// ``restartAvahi()`` kills the Avahi daemon and starts a new one on the same bus.
///
/// ```swift
/// let avahi = try await PrivateAvahi()
/// defer { avahi.stop() }
/// let report = try PeerDiscovery(socketPath: avahi.busSocket).discover(catalogID: "game")
/// ```
public final class PrivateAvahi: Sendable {
    public let folder: TemporaryDirectory
    /// The bus's socket path, and its address as `DBUS_SYSTEM_BUS_ADDRESS` takes it.
    public let busSocket: String
    public var busAddress: String { "unix:path=\(busSocket)" }
    private let bus: RunningProcess
    /// The Avahi daemon, replaced by ``restartAvahi()``; `nil` for a bus without Avahi.
    private let avahiDaemon: LockedBox<RunningProcess?>
    private var avahi: RunningProcess? { avahiDaemon.value }
    private let avahiConfig: URL

    private static let daemons = ["/usr/bin/dbus-daemon", "/usr/sbin/avahi-daemon"]

    /// Whether `dbus-daemon` and `avahi-daemon` are installed; a test that needs them skips
    /// without them: `@Test(.enabled(if: PrivateAvahi.isInstalled, Comment(rawValue: PrivateAvahi.notInstalled)))`.
    public static var isInstalled: Bool { daemons.allSatisfy { FileManager.default.isExecutableFile(atPath: $0) } }
    /// Why such a test was skipped, and what to do.
    public static let notInstalled = "needs dbus-daemon and avahi-daemon: install them with make deps (apt-get install dbus-daemon avahi-daemon)"

    /// Starts the bus, and Avahi on it unless `avahi` is false (a machine with a bus and no Avahi).
    public convenience init(avahi withAvahi: Bool = true) async throws {
        try await self.init(avahi: withAvahi, network: nil)
    }

    /// Starts a bus and an Avahi of their own whose Avahi is on `other`'s network (its `lo`): a
    /// second machine of the same network, with the same host name (Avahi renames its host
    /// `<host>-2`). The two daemons hear each other: a service one announces under a name the other
    /// already announces collides, as with two devices of one household.
    public convenience init(sharingNetworkWith other: PrivateAvahi) async throws {
        guard let pid = other.avahi?.processIdentifier, other.avahi?.isRunning == true else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "the other PrivateAvahi runs no avahi-daemon"])
        }
        try await self.init(avahi: true, network: "/proc/\(pid)/ns/net")
    }

    /// `network`: the network namespace to join (a file of /proc), or `nil` for a new one.
    private init(avahi withAvahi: Bool, network: String?) async throws {
        for tool in Self.daemons + ["/usr/bin/unshare", "/usr/sbin/ip", "/usr/bin/nsenter"] where !FileManager.default.isExecutableFile(atPath: tool) {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "\(tool) is missing: install the packages dbus-daemon, avahi-daemon, util-linux and iproute2 (make deps does)"])
        }
        folder = try TemporaryDirectory(prefix: "odr-avahi")
        busSocket = folder.url.appending(path: "bus.sock").path
        let busConfig = folder.url.appending(path: "bus.conf")
        try """
            <!DOCTYPE busconfig PUBLIC "-//freedesktop//DTD D-BUS Bus Configuration 1.0//EN"
             "http://www.freedesktop.org/standards/dbus/1.0/busconfig.dtd">
            <busconfig>
              <type>system</type>
              <listen>unix:path=\(busSocket)</listen>
              <auth>EXTERNAL</auth>
              <policy context="default">
                <allow user="*"/>
                <allow own="*"/>
                <allow send_destination="*"/>
                <allow receive_sender="*"/>
              </policy>
            </busconfig>
            """.write(to: busConfig, atomically: true, encoding: .utf8)
        avahiConfig = folder.url.appending(path: "avahi.conf")
        avahiDaemon = LockedBox(nil)
        try """
            [server]
            use-ipv4=yes
            use-ipv6=no
            allow-interfaces=lo
            enable-dbus=yes
            ratelimit-interval-usec=1000000
            ratelimit-burst=1000
            [wide-area]
            enable-wide-area=no
            [publish]
            publish-hinfo=no
            publish-workstation=no
            [reflector]
            [rlimits]
            """.write(to: avahiConfig, atomically: true, encoding: .utf8)
        let bus = try RunningProcess(URL(filePath: "/usr/bin/dbus-daemon"), ["--config-file=\(busConfig.path)", "--nofork", "--print-address"])
        self.bus = bus
        try await bus.waitForOutput(containing: "unix:path=", timeout: .seconds(60))
        guard withAvahi else { return }
        do {
            avahiDaemon.value = try await startAvahi(network: network)
        } catch {
            stop()
            throw error
        }
    }

    /// Kills the Avahi daemon (SIGKILL: it leaves the bus, and forgets every service its clients
    /// registered, as when it crashes or restarts) and starts a new one on the same bus, in a new
    /// network namespace; returns once it has started. A second machine sharing the old daemon's
    /// network (``init(sharingNetworkWith:)``) no longer hears it.
    public func restartAvahi() async throws {
        guard let old = avahi else {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "this PrivateAvahi runs no avahi-daemon"])
        }
        old.terminate()
        avahiDaemon.value = try await startAvahi(network: nil)
    }

    /// Starts avahi-daemon on the bus in `network` (a file of /proc) or a network namespace of its
    /// own, and waits until it has started.
    private func startAvahi(network: String?) async throws -> RunningProcess {
        // Its log goes to a file, a new one for each daemon. The bus is a socket in the file
        // system, which a network namespace does not hide.
        let log = folder.url.appending(path: "avahi-\(UUID().uuidString).log")
        // nsenter and unshare exec what they run (neither forks), as the shell's last command
        // does: the process started is avahi-daemon, in its namespaces.
        let start = "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && exec /usr/sbin/avahi-daemon --no-drop-root --no-chroot --no-rlimits -f '\(avahiConfig.path)' >'\(log.path)' 2>&1"
        let arguments = if let network {
            ["--net=\(network)", "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c", start]
        } else {
            ["--mount", "--net", "--propagation", "private", "/bin/sh", "-c", "/usr/sbin/ip link set lo up && \(start)"]
        }
        let avahi = try RunningProcess(URL(filePath: network == nil ? "/usr/bin/unshare" : "/usr/bin/nsenter"), arguments,
                                       environment: ["DBUS_SYSTEM_BUS_ADDRESS": "unix:path=\(busSocket)"])
        do {
            try await waitUntil("avahi-daemon to start", timeout: .seconds(60)) {
                let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
                if !avahi.isRunning { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "avahi-daemon exited: \(text) \(avahi.stderr)"]) }
                return text.contains("Server startup complete")
            }
        } catch {
            avahi.terminate()
            throw error
        }
        return avahi
    }

    deinit { stop() }

    /// Kills and reaps both daemons (the ones this fixture started, by their process ids); calling
    /// it again does nothing. Blocks for the moment that takes, so it can run in a `defer`.
    public func stop() {
        avahi?.terminate()
        bus.terminate()
    }
}
