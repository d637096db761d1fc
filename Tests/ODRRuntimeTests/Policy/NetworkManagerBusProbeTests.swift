import Foundation
import Glibc
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// The default network probe against a fake system bus on a Unix socket: it reads NetworkManager's
/// `Metered`, and anything else (no bus, a refusal, an error, hostile bytes) is unmetered.
struct NetworkManagerBusProbeTests {
    @Test(arguments: [(UInt32(1), NetworkCondition.metered), (3, .metered), (0, .unmetered), (2, .unmetered), (4, .unmetered), (99, .unmetered)])
    func nmMeteredIsReadAsNetworkManagerMeansIt(_ value: UInt32, _ expected: NetworkCondition) throws {
        let (condition, request) = try FakeSystemBus.probe(answering: .metered(value))
        #expect(condition == expected)
        // The call the probe made: Properties.Get of NetworkManager's Metered, after Hello.
        let text = String(decoding: request, as: UTF8.self)
        for part in ["Hello", "org.freedesktop.DBus.Properties", "Get", "org.freedesktop.NetworkManager", "Metered"] {
            #expect(text.contains(part), "\(part)")
        }
    }

    @Test func noBusARefusalAnErrorOrHostileBytesAreUnmetered() throws {
        let directory = try TemporaryDirectory(prefix: "odr-bus")
        #expect(NetworkManagerBusProbe(socketPath: directory.appending("none").path).currentCondition() == .unmetered)
        #expect(try FakeSystemBus.probe(answering: .refuseAuthentication).condition == .unmetered)
        #expect(try FakeSystemBus.probe(answering: .error).condition == .unmetered)
        // A reply whose body length claims 4 GiB, one with an unknown endianness, a truncated one,
        // and one whose variant holds a string: refused, not trapped on, not waited for forever.
        let huge: [UInt8] = [UInt8(ascii: "l"), 2, 0, 1, 0xFF, 0xFF, 0xFF, 0xFF, 9, 0, 0, 0, 0, 0, 0, 0]
        let oddEndian: [UInt8] = [UInt8(ascii: "x"), 2, 0, 1] + [UInt8](repeating: 0, count: 12)
        let truncated = Array(DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 3,
                                                 fields: [(5, .uint32(2)), (8, .signature("v"))], body: [.variantUInt32(1)]).dropLast(3))
        let stringVariant = DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 3,
                                               fields: [(5, .uint32(2)), (8, .signature("v"))], body: [.signature("s"), .string("yes")])
        for bytes in [huge, oddEndian, truncated, stringVariant] {
            #expect(try FakeSystemBus.probe(answering: .raw(bytes)).condition == .unmetered)
        }
    }

    @Test func theBusPathComesFromTheSystemBusAddress() {
        #expect(NetworkManagerBusProbe.systemBusPath(nil) == "/run/dbus/system_bus_socket")
        #expect(NetworkManagerBusProbe.systemBusPath("unix:path=/var/run/dbus/system_bus_socket") == "/var/run/dbus/system_bus_socket")
        #expect(NetworkManagerBusProbe.systemBusPath("tcp:host=x;unix:guid=1,path=/tmp/bus") == "/tmp/bus")
    }
}

/// A system bus on a Unix socket that answers NetworkManager's `Metered` as told, for the probe in
/// this process or for `odr` run as a child (`DBUS_SYSTEM_BUS_ADDRESS` = ``address``).
final class FakeSystemBus: Sendable {
    /// What the fake bus answers to the `Get`.
    enum Answer: Sendable {
        case metered(UInt32)
        case error
        case raw([UInt8])
        case refuseAuthentication
    }

    let path: String
    /// The value of `DBUS_SYSTEM_BUS_ADDRESS` that points at this bus.
    var address: String { "unix:path=\(path)" }
    private let listener: Int32
    private let directory: TemporaryDirectory
    private let received = Locked<[UInt8]>([])
    private let finished = DispatchSemaphore(value: 0)

    /// Starts serving every connection with `answer`, one at a time, until ``stop()``.
    init(answering answer: Answer) throws {
        directory = try TemporaryDirectory(prefix: "odr-bus")
        path = directory.appending("bus").path
        listener = try Self.listen(at: path)
        Thread { [listener, received, finished] in
            defer { finished.signal() }
            while true {
                let connection = accept(listener, nil, nil)
                guard connection >= 0 else { return }
                Self.serve(connection, answer) { bytes in received.withLock { $0 += bytes } }
                close(connection)
            }
        }.start()
    }

    /// Stops serving; returns the bytes the clients sent after authenticating.
    @discardableResult
    func stop() -> [UInt8] {
        shutdown(listener, Int32(SHUT_RDWR))
        finished.wait()
        close(listener)
        return received.withLock { $0 }
    }

    /// Runs the probe once against a bus that answers `answer`; its condition and what it sent.
    static func probe(answering answer: Answer) throws -> (condition: NetworkCondition, request: [UInt8]) {
        let bus = try FakeSystemBus(answering: answer)
        let condition = NetworkManagerBusProbe(socketPath: bus.path, timeout: 5).currentCondition()
        return (condition, bus.stop())
    }

    private static func listen(at path: String) throws -> Int32 {
        let descriptor = socket(AF_UNIX, Int32(SOCK_STREAM.rawValue), 0)
        var address = sockaddr_un()
        address.sun_family = sa_family_t(AF_UNIX)
        withUnsafeMutableBytes(of: &address.sun_path) { $0.copyBytes(from: Array(path.utf8) + [0]) }
        let bound = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(descriptor, $0, socklen_t(MemoryLayout<sockaddr_un>.size)) }
        }
        guard bound == 0, Glibc.listen(descriptor, 8) == 0 else { throw POSIXError(.EADDRINUSE) }
        return descriptor
    }

    private static func serve(_ connection: Int32, _ answer: Answer, record: ([UInt8]) -> Void) {
        func write(_ bytes: [UInt8]) { _ = bytes.withUnsafeBytes { send(connection, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) } }
        func read(_ count: Int) -> [UInt8]? {
            var bytes = [UInt8](repeating: 0, count: count), done = 0
            while done < count {
                let got = bytes[done...].withUnsafeMutableBytes { recv(connection, $0.baseAddress, $0.count, 0) }
                guard got > 0 else { return nil }
                done += got
            }
            return bytes
        }
        func readLine() -> String? {
            var line: [UInt8] = []
            while line.suffix(2) != [0x0D, 0x0A] {
                guard let byte = read(1) else { return nil }
                line += byte
            }
            return String(decoding: line, as: UTF8.self)
        }
        func readMessage() -> [UInt8]? {
            guard let head = read(16) else { return nil }
            let body = Int(head[4]) | Int(head[5]) << 8 | Int(head[6]) << 16
            let fields = Int(head[12]) | Int(head[13]) << 8
            guard let rest = read((fields + 7) / 8 * 8 + body) else { return nil }
            return head + rest
        }
        guard let auth = readLine(), auth.hasPrefix("\u{0}AUTH EXTERNAL ") else { return }
        if case .refuseAuthentication = answer {
            write(Array("REJECTED EXTERNAL\r\n".utf8))
            return
        }
        write(Array("OK 0123456789abcdef0123456789abcdef\r\n".utf8))
        guard readLine() == "BEGIN\r\n", let hello = readMessage(), let get = readMessage() else { return }
        record(hello + get)
        write(DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 1,
                                 fields: [(5, .uint32(1)), (8, .signature("s"))], body: [.string(":1.42")]))
        write(DBusMessage.encode(type: DBusMessage.signal, flags: 1, serial: 2,
                                 fields: [(1, .objectPath("/org/freedesktop/DBus")), (2, .string("org.freedesktop.DBus")),
                                          (3, .string("NameAcquired")), (8, .signature("s"))], body: [.string(":1.42")]))
        switch answer {
        case .metered(let value):
            write(DBusMessage.encode(type: DBusMessage.methodReturn, flags: 1, serial: 3,
                                     fields: [(5, .uint32(2)), (8, .signature("v"))], body: [.variantUInt32(value)]))
        case .error:
            write(DBusMessage.encode(type: DBusMessage.error, flags: 1, serial: 3,
                                     fields: [(4, .string("org.freedesktop.DBus.Error.ServiceUnknown")), (5, .uint32(2)),
                                              (8, .signature("s"))], body: [.string("The name is not activatable")]))
        case .raw(let bytes):
            write(bytes)
        case .refuseAuthentication:
            break
        }
    }
}
