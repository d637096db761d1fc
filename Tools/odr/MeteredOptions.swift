import ArgumentParser
import ODRRuntime

/// `--allow-metered` / `--no-metered`: whether a command that installs may download over a metered
/// network (NetworkManager's GENERAL.METERED), the runtime's download policy for one run.
struct MeteredOptions: ParsableArguments {
    enum Choice: String, EnumerableFlag {
        case allowMetered, noMetered

        static func help(for value: Choice) -> ArgumentHelp? {
            switch value {
            case .allowMetered:
                "Download over a metered network even for non-urgent work (what a game allows with downloadPolicy.allowsMeteredNonUrgent)."
            case .noMetered:
                "Never download over a metered network: fail with network-policy instead (the default allows an urgent fetch on one)."
            }
        }
    }

    @Flag(exclusivity: .exclusive)
    var metered: Choice?

    /// The runtime's download policy with these flags: the command never waits for the network
    /// to change, it says why it cannot download (network-policy) and exits.
    func apply(to policy: inout DownloadPolicy) {
        policy.waitsWhenForbidden = false
        switch metered {
        case .allowMetered?:
            policy.allowsMeteredUrgent = true
            policy.allowsMeteredNonUrgent = true
        case .noMetered?:
            policy.allowsMeteredUrgent = false
            policy.allowsMeteredNonUrgent = false
        case nil:
            break
        }
    }
}
