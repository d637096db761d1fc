/// Where a queued download stands: the order in which the runtime's ``TransferQueue`` starts
/// transfers, and the simulator's link its queued downloads (one rule for both).
///
/// Higher priority first (urgent, then loading priority 1 down to 0). Among equal priorities the
/// download whose pack a likelier anticipation hint names starts first (``hintLikelihood``: the
/// likeliest live hint naming the pack or one of its tags, 0 when none), then arrival order. A hint
/// never moves a download ahead of one of higher priority, and without hints the order is priority
/// then arrival.
package struct TransferOrder: Sendable, Equatable {
    package var priority: TransferPriority
    /// The likelihood of the likeliest live hint naming the download's pack; 0 when none does.
    package var hintLikelihood: Double
    /// Arrival order; a retried transfer keeps its original number and so its place among equals.
    package var sequence: UInt64

    package init(priority: TransferPriority, hintLikelihood: Double = 0, sequence: UInt64) {
        self.priority = priority
        self.hintLikelihood = hintLikelihood
        self.sequence = sequence
    }

    /// Whether a download ordered by `self` starts before one ordered by `other`.
    package func startsBefore(_ other: TransferOrder) -> Bool {
        if priority.runsBefore(other.priority) { return true }
        if other.priority.runsBefore(priority) { return false }
        if hintLikelihood != other.hintLikelihood { return hintLikelihood > other.hintLikelihood }
        return sequence < other.sequence
    }

    /// Whether the two have the same priority (a hint can order them).
    package func hasSamePriority(as other: TransferOrder) -> Bool {
        !priority.runsBefore(other.priority) && !other.priority.runsBefore(priority)
    }
}

/// A transfer handle whose place among queued transfers of equal priority follows the likelihood of
/// the likeliest anticipation hint naming its pack (``TransferOrder``): the ``TransferEngine``'s
/// own handles. Handles of other transports do not implement it, and ignore hints.
protocol HintOrderedTransfer: TransferHandle {
    /// Sets the tie-break among queued transfers of equal priority (0: no hint); a running
    /// transfer keeps running.
    func setHintLikelihood(_ likelihood: Double)
}

/// The waiting transfers, in the order they should start (``TransferOrder``): urgent first, then
/// higher loading priority, then the likelier hinted, then arrival order.
///
/// A plain array: queues hold tens to a few hundred transfers, and every decision scans them once.
struct TransferQueue<Element> {
    struct Entry {
        var order: TransferOrder
        var element: Element
        /// Arrival order; a retried transfer keeps its original number and so its place among equals.
        var sequence: UInt64 { order.sequence }
        var priority: TransferPriority { order.priority }
    }

    private var entries: [Entry] = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// Whether `a` starts before `b`.
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        a.order.startsBefore(b.order)
    }

    mutating func insert(_ element: Element, sequence: UInt64, priority: TransferPriority, hintLikelihood: Double = 0) {
        entries.append(Entry(order: TransferOrder(priority: priority, hintLikelihood: hintLikelihood, sequence: sequence), element: element))
    }

    @discardableResult
    mutating func remove(sequence: UInt64) -> Element? {
        guard let index = entries.firstIndex(where: { $0.sequence == sequence }) else { return nil }
        return entries.remove(at: index).element
    }

    func contains(sequence: UInt64) -> Bool {
        entries.contains { $0.sequence == sequence }
    }

    mutating func setPriority(_ priority: TransferPriority, sequence: UInt64) {
        guard let index = entries.firstIndex(where: { $0.sequence == sequence }) else { return }
        entries[index].order.priority = priority
    }

    /// Sets the likelihood of the likeliest live hint naming the transfer's pack (0: none).
    mutating func setHintLikelihood(_ likelihood: Double, sequence: UInt64) {
        guard let index = entries.firstIndex(where: { $0.sequence == sequence }) else { return }
        entries[index].order.hintLikelihood = likelihood
    }

    /// The first entry in start order among those `isEligible` accepts.
    func first(where isEligible: (Entry) -> Bool) -> Entry? {
        var best: Entry?
        for entry in entries where isEligible(entry) {
            if let current = best, !Self.precedes(entry, current) { continue }
            best = entry
        }
        return best
    }

    /// All elements in start order.
    var ordered: [Element] {
        entries.sorted(by: Self.precedes).map(\.element)
    }

    /// Every element, in no particular order.
    var elements: [Element] {
        entries.map(\.element)
    }
}

/// Whether a transfer of `priority` may start now, given what runs.
///
/// Urgent transfers start while fewer than `limit` urgent ones run (paused non-urgent ones do not
/// block them); others start only while fewer than `limit` run in total and, when non-urgent
/// transfers `yieldToUrgent` (``NonUrgentBandwidth/paused``), nothing urgent runs.
func transferMayStart(priority: TransferPriority, running: Int, runningUrgent: Int, limit: Int,
                      yieldToUrgent: Bool = true) -> Bool {
    if priority.isUrgent { return runningUrgent < limit }
    return (runningUrgent == 0 || !yieldToUrgent) && running < limit
}
