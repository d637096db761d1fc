#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Tells a ``ResourceManager`` whether the network is metered; tests inject a probe whose answer
/// they set, as they inject a ``ManagerClock`` or a ``DiskSpaceProbe``.
///
/// The manager asks before the first download, then every
/// ``DownloadPolicy/networkCheckInterval`` while downloads are active or waiting, after a transfer
/// fails, and on ``ResourceManager/checkNetworkCondition()``.
///
/// The default is ``NetworkManagerBusProbe``, which asks NetworkManager over the system D-Bus and
/// never starts a process. An app that knows better (a game on a handheld with a modem) supplies a
/// probe of its own, or ``FixedNetworkProbe`` to turn probing off; from C,
/// `odr_config_set_network_probe` or `ODR_OPT_NETWORK_METERED`.
///
/// ```swift
/// struct AlwaysMetered: NetworkConditionProbe {
///     func currentCondition() -> NetworkCondition { .metered }
/// }
/// configuration.networkProbe = AlwaysMetered()
/// ```
public protocol NetworkConditionProbe: Sendable {
    /// The network's condition now. May block briefly; it is called on a short-lived thread of
    /// the library's, off the caller's path, one call at a time.
    func currentCondition() -> NetworkCondition
}

/// A probe that always gives the same answer, which turns probing off; by default
/// ``NetworkCondition/unmetered``, which lets every download through as far as the network is
/// concerned. It reads nothing.
public struct FixedNetworkProbe: NetworkConditionProbe {
    /// The answer.
    public var condition: NetworkCondition

    /// A probe that answers `condition` (by default unmetered).
    public init(_ condition: NetworkCondition = .unmetered) {
        self.condition = condition
    }

    /// ``condition``.
    public func currentCondition() -> NetworkCondition { condition }
}
