import Foundation

/// A private system D-Bus and an Avahi daemon on it, for tests of DNS-SD discovery: `dbus-daemon`
/// with a policy that allows everything, listening on a socket in a temporary folder, and
/// `avahi-daemon` on the loopback interface only, in a mount namespace of its own (a tmpfs over
/// `/run/avahi-daemon`), so it neither meets nor disturbs a system Avahi or another test's.
/// Needs root, `dbus-daemon`, `avahi-daemon` and `unshare`; without them ``init()`` throws, so a
/// test that needs it fails rather than skips.
///
/// ```swift
/// let avahi = try await PrivateAvahi()
/// defer { Task { await avahi.stop() } }
/// let report = try PeerDiscovery(socketPath: avahi.busSocket).discover(catalogID: "game")
/// ```
public final class PrivateAvahi: Sendable {
    public let folder: TemporaryDirectory
    /// The bus's socket path, and its address as `DBUS_SYSTEM_BUS_ADDRESS` takes it.
    public let busSocket: String
    public var busAddress: String { "unix:path=\(busSocket)" }
    private let bus: RunningProcess
    private let avahi: RunningProcess?

    /// Starts the bus, and Avahi on it unless `avahi` is false (a machine with a bus and no Avahi).
    public init(avahi withAvahi: Bool = true) async throws {
        for tool in ["/usr/bin/dbus-daemon", "/usr/sbin/avahi-daemon", "/usr/bin/unshare", "/usr/bin/env"]
        where !FileManager.default.isExecutableFile(atPath: tool) {
            throw CocoaError(.fileNoSuchFile, userInfo: [NSLocalizedDescriptionKey: "\(tool) is missing: install the packages dbus-daemon and avahi-daemon (make test does)"])
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
        let avahiConfig = folder.url.appending(path: "avahi.conf")
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
        bus = try RunningProcess(URL(filePath: "/usr/bin/dbus-daemon"), ["--config-file=\(busConfig.path)", "--nofork", "--print-address"])
        try await bus.waitForOutput(containing: "unix:path=", timeout: .seconds(60))
        guard withAvahi else {
            avahi = nil
            return
        }
        // Its log goes to a file.
        let log = folder.url.appending(path: "avahi.log")
        let avahi = try RunningProcess(URL(filePath: "/usr/bin/env"), [
            "DBUS_SYSTEM_BUS_ADDRESS=unix:path=\(busSocket)", "/usr/bin/unshare", "--mount", "--propagation", "private", "/bin/sh", "-c",
            "mkdir -p /run/avahi-daemon && mount -t tmpfs tmpfs /run/avahi-daemon && exec /usr/sbin/avahi-daemon --no-drop-root --no-chroot --no-rlimits -f '\(avahiConfig.path)' >'\(log.path)' 2>&1",
        ])
        self.avahi = avahi
        try await waitUntil("avahi-daemon to start", timeout: .seconds(60)) {
            let text = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
            if !avahi.isRunning { throw CocoaError(.fileReadUnknown, userInfo: [NSLocalizedDescriptionKey: "avahi-daemon exited: \(text) \(avahi.stderr)"]) }
            return text.contains("Server startup complete")
        }
    }

    /// Kills both daemons (the ones this fixture started, by their process ids).
    public func stop() async {
        try? await avahi?.kill()
        try? await bus.kill()
    }
}
