#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// What kind of network the device is on, as a ``NetworkConditionProbe`` reports it.
///
/// ``ResourceManager`` reads it to apply its ``DownloadPolicy``: metered networks (a phone's hotspot,
/// a mobile broadband modem, a capped plan) may be closed to some downloads, and nothing starts
/// offline.
public enum NetworkCondition: String, Sendable, Hashable, CustomStringConvertible {
    /// A network whose bytes cost nothing extra (Ethernet, home Wi-Fi), or one whose cost is not
    /// known: unknown counts as unmetered, so a device that cannot tell is never stuck.
    case unmetered
    /// A network the user pays by the byte or has a cap on.
    case metered
    /// No network at all: downloads wait (or fail with `network-unavailable` when the policy does
    /// not wait).
    case offline

    /// `unmetered`, `metered` or `offline`.
    public var description: String { rawValue }
}
