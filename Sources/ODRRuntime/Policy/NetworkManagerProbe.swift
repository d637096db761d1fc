// Only with the FoundationAPI trait: `Process` is in Foundation, not FoundationEssentials.
#if FoundationAPI
import Foundation

/// Asks NetworkManager through `nmcli` whether a connected device is metered. Opt-in, for tools:
/// it starts a process (`/usr/bin/env nmcli ...`) at every check, which a game must not do behind
/// its engine's back, so no manager uses it unless configured to; the default,
/// ``NetworkManagerBusProbe``, asks the same NetworkManager over D-Bus without one.
///
/// It runs `nmcli -t -f GENERAL.DEVICE,GENERAL.TYPE,GENERAL.STATE,GENERAL.METERED device show` with
/// `LC_ALL=C` and reads it with ``parse(_:)``. When `nmcli` is missing, fails, or NetworkManager
/// does not run, the network counts as ``NetworkCondition/unmetered``: a machine that cannot tell
/// is never kept from downloading. It never reports ``NetworkCondition/offline`` (devices that
/// NetworkManager does not manage may still be online); inject a probe of your own for that.
///
/// Only with the package trait `FoundationAPI` (on by default): it runs `nmcli` with Foundation's
/// `Process`, which FoundationEssentials does not have.
public struct NetworkManagerProbe: NetworkConditionProbe {
    /// The `nmcli` to run; found on `PATH` by default.
    public var executable: String

    /// A probe that runs `executable` (by default `nmcli` from `PATH`).
    public init(executable: String = "nmcli") {
        self.executable = executable
    }

    /// Runs `nmcli` and parses its answer; ``NetworkCondition/unmetered`` when that fails.
    public func currentCondition() -> NetworkCondition {
        guard let output = run() else { return .unmetered }
        return Self.parse(output)
    }

    /// The condition `nmcli -t -f GENERAL.DEVICE,GENERAL.TYPE,GENERAL.STATE,GENERAL.METERED device show`
    /// describes: ``NetworkCondition/metered`` when a connected device other than loopback says
    /// `yes` or `yes (guessed)` (`guess-yes` in some versions), ``NetworkCondition/unmetered`` otherwise (`no`, `no (guessed)`,
    /// `unknown`, no connected device, or output it cannot read).
    ///
    /// Devices are told apart by their `GENERAL.DEVICE` line or a blank line; a device without a
    /// `GENERAL.STATE` line counts as connected, so `-f GENERAL.METERED` output alone works too, and
    /// so does the padded output of `nmcli device show` without `-t`.
    ///
    /// ```swift
    /// NetworkManagerProbe.parse("GENERAL.DEVICE:wwan0\nGENERAL.TYPE:gsm\nGENERAL.STATE:100 (connected)\nGENERAL.METERED:yes\n")
    /// // .metered
    /// ```
    public static func parse(_ output: String) -> NetworkCondition {
        struct Device { var type = ""; var state: Int?; var metered = "" }
        var devices: [Device] = []
        var current: Device?
        func flush() {
            if let device = current { devices.append(device) }
            current = nil
        }
        for rawLine in output.split(separator: "\n", omittingEmptySubsequences: false) {
            let line = rawLine.trimmingCharacters(in: .whitespaces)
            if line.isEmpty {
                flush()
                continue
            }
            guard let colon = line.firstIndex(of: ":") else { continue }
            let field = line[..<colon].uppercased()
            let value = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
            if field == "GENERAL.DEVICE" { flush() }
            var device = current ?? Device()
            switch field {
            case "GENERAL.TYPE": device.type = value.lowercased()
            case "GENERAL.STATE": device.state = Int(value.prefix { $0.isNumber })
            case "GENERAL.METERED":
                // A second METERED line without a DEVICE line between starts another device.
                if !device.metered.isEmpty {
                    flush()
                    device = Device()
                }
                device.metered = value.lowercased()
            default: break
            }
            current = device
        }
        flush()
        // NetworkManager's device states: 100 is "connected"; anything lower is not (yet) carrying traffic.
        let metered = devices.contains { device in
            device.type != "loopback" && (device.state ?? 100) >= 100
                && (device.metered == "yes" || device.metered.hasPrefix("yes ") || device.metered == "guess-yes")
        }
        return metered ? .metered : .unmetered
    }

    private func run() -> String? {
        let process = Process()
        process.executableURL = URL(filePath: "/usr/bin/env")
        process.arguments = [executable, "-t", "-f", "GENERAL.DEVICE,GENERAL.TYPE,GENERAL.STATE,GENERAL.METERED", "device", "show"]
        var environment = ProcessInfo.processInfo.environment
        // nmcli translates "yes (guessed)"; the parser reads the untranslated words.
        environment["LC_ALL"] = "C"
        environment["LANG"] = "C"
        process.environment = environment
        let output = Pipe()
        process.standardOutput = output
        process.standardError = FileHandle.nullDevice
        process.standardInput = FileHandle.nullDevice
        do {
            try process.run()
        } catch {
            return nil
        }
        let data = output.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        guard process.terminationReason == .exit, process.terminationStatus == 0 else { return nil }
        return String(decoding: data, as: UTF8.self)
    }
}
#endif
