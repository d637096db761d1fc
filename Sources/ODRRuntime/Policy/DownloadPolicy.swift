#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// When a ``ResourceManager`` may download: which work may use a metered network, how many bytes a
/// day it may take from one, and how much bandwidth background transfers keep while an urgent one
/// runs. Part of ``ResourceManager/Configuration/downloadPolicy``.
///
/// A download is *urgent* for this policy when a request waiting for it has
/// ``TransferPriority/urgent`` or a loading priority of at least ``urgentLoadingPriority`` (0.5, the
/// default priority of a ``ResourceRequest``, so a game that begins a request and waits is urgent).
/// Everything else is *non-urgent*: the prefetch tags (priority 0), and requests given a lower
/// loading priority. ``ResourceManager/fetch(tags:priority:maximumConcurrentPacks:progress:)`` is
/// urgent by default.
///
/// The policy applies per pack, before its download starts: a pack that may not start waits (and
/// ``ResourceManagerEvent/downloadWaiting(packID:reason:)`` says why) until the network, the
/// request's priority or the day changes, then starts
/// (``ResourceManagerEvent/downloadResumed(packID:)``). A pack already downloading finishes.
///
/// ```swift
/// configuration.downloadPolicy.allowsMeteredNonUrgent = false       // the default
/// configuration.downloadPolicy.dailyMeteredByteBudget = 200 << 20   // 200 MiB a day on metered networks
/// configuration.downloadPolicy.nonUrgentBandwidthWhileUrgent = .limited(bytesPerSecond: 256 << 10)
/// ```
public struct DownloadPolicy: Sendable, Equatable {
    /// Whether urgent downloads may use a metered network (default `true`: the player is waiting).
    public var allowsMeteredUrgent = true
    /// Whether non-urgent downloads (prefetch, low loading priority) may use a metered network
    /// (default `false`: they wait for an unmetered one).
    public var allowsMeteredNonUrgent = false
    /// The most bytes downloads may transfer over metered networks per calendar day (UTC); `nil`
    /// (the default) for no limit. Counted as bytes arrive while the network is metered and kept
    /// in the store (`metered-usage.json`), so a restart does not reset it. A pack whose planned
    /// download would go past what is left of the day's budget does not start.
    public var dailyMeteredByteBudget: Int64?
    /// The loading priority from which a download counts as urgent (default 0.5); ``TransferPriority/urgent``
    /// always is.
    public var urgentLoadingPriority: Double = 0.5
    /// What a download that may not start does: wait for a change that allows it (`true`, the
    /// default), or fail at once with `network-policy` (`false`, as `odr fetch` does: a
    /// command-line fetch says why rather than hanging).
    public var waitsWhenForbidden = true
    /// How often to ask the ``NetworkConditionProbe`` again while downloads run or wait (default 30
    /// seconds, on the manager's clock); `nil` asks only before the first download, after a
    /// transfer failure and on ``ResourceManager/checkNetworkCondition()``.
    public var networkCheckInterval: Duration? = .seconds(30)
    /// How much of the bandwidth non-urgent transfers keep while a ``TransferPriority/urgent`` one
    /// runs (default ``NonUrgentBandwidth/paused``, what the transfer engine has always done).
    /// Applies to the ``TransferEngine`` the manager creates; an injected transport has its own.
    public var nonUrgentBandwidthWhileUrgent: NonUrgentBandwidth = .paused

    /// The defaults: metered networks for urgent downloads only, no daily budget, non-urgent
    /// transfers paused while an urgent one runs.
    public init() {}

    /// Whether a download of `priority` is urgent under this policy.
    public func isUrgent(_ priority: TransferPriority) -> Bool {
        priority.isUrgent || priority.level >= urgentLoadingPriority
    }

    /// Why a download may not start now, or `nil` when it may.
    ///
    /// - Parameters:
    ///   - urgent: whether the download is urgent (``isUrgent(_:)``).
    ///   - bytes: the bytes it plans to transfer.
    ///   - condition: the network now.
    ///   - meteredBytesLeft: what is left of today's metered budget (`nil` for no budget).
    public func hold(urgent: Bool, bytes: Int64, condition: NetworkCondition, meteredBytesLeft: Int64?) -> DownloadHold? {
        switch condition {
        case .unmetered: return nil
        case .offline: return .offline
        case .metered:
            guard urgent ? allowsMeteredUrgent : allowsMeteredNonUrgent else {
                return urgent ? .meteredUrgentNotAllowed : .meteredNonUrgentNotAllowed
            }
            if let left = meteredBytesLeft, bytes > left { return .meteredBudgetExhausted }
            return nil
        }
    }
}

/// Why a download waits: the rule of the ``DownloadPolicy`` that holds it back.
public enum DownloadHold: String, Sendable, Hashable, CustomStringConvertible {
    /// The network is metered and ``DownloadPolicy/allowsMeteredUrgent`` is `false`.
    case meteredUrgentNotAllowed = "metered-urgent-not-allowed"
    /// The network is metered and ``DownloadPolicy/allowsMeteredNonUrgent`` is `false`.
    case meteredNonUrgentNotAllowed = "metered-non-urgent-not-allowed"
    /// The network is metered and the download would go past ``DownloadPolicy/dailyMeteredByteBudget``.
    case meteredBudgetExhausted = "metered-budget-exhausted"
    /// The probe reports no network.
    case offline

    /// The stable raw value, such as `metered-budget-exhausted`.
    public var description: String { rawValue }
}
