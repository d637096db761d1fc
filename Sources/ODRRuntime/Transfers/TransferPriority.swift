/// How soon a transfer should run: `urgent` before everything, then loading priority 1 down to 0.
///
/// Transfers of equal priority run in the order they were queued, except that the resource manager
/// starts the one whose pack a likelier anticipation hint names first
/// (``ResourceManager/anticipate(tags:likelihood:)``). While an urgent transfer runs,
/// non-urgent ones that are already running are paused so the urgent one gets the bandwidth.
///
/// ```swift
/// let handle = engine.transfer(TransferRequest(url: packURL, priority: .loading(0.8)), into: sink)
/// handle.setPriority(.urgent)   // the player is waiting for it now
/// ```
public enum TransferPriority: Sendable, Hashable, CustomStringConvertible {
    /// Needed right now: runs first, at full speed.
    case urgent
    /// A loading priority in 0...1 (values outside are clamped); higher runs sooner.
    case loading(Double)

    /// The default for background downloads.
    public static let normal = TransferPriority.loading(0.5)

    /// Whether this is ``urgent``.
    public var isUrgent: Bool {
        if case .urgent = self { return true }
        return false
    }

    /// The loading priority, clamped to 0...1 (1 for urgent).
    public var level: Double {
        switch self {
        case .urgent: 1
        case .loading(let value): value.isNaN ? 0 : min(max(value, 0), 1)
        }
    }

    /// Whether `self` runs before `other` (ties are broken by arrival order elsewhere).
    func runsBefore(_ other: TransferPriority) -> Bool {
        if isUrgent != other.isUrgent { return isUrgent }
        return level > other.level
    }

    /// `urgent`, or the loading level.
    public var description: String {
        isUrgent ? "urgent" : "\(level)"
    }
}
