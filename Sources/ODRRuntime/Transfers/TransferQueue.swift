/// The waiting transfers, in the order they should start: urgent first, then higher loading
/// priority, then arrival order.
///
/// A plain array: queues hold tens to a few hundred transfers, and every decision scans them once.
struct TransferQueue<Element> {
    struct Entry {
        /// Arrival order; a retried transfer keeps its original number and so its place among equals.
        var sequence: UInt64
        var priority: TransferPriority
        var element: Element
    }

    private var entries: [Entry] = []

    var count: Int { entries.count }
    var isEmpty: Bool { entries.isEmpty }

    /// Whether `a` starts before `b`.
    static func precedes(_ a: Entry, _ b: Entry) -> Bool {
        if a.priority.runsBefore(b.priority) { return true }
        if b.priority.runsBefore(a.priority) { return false }
        return a.sequence < b.sequence
    }

    mutating func insert(_ element: Element, sequence: UInt64, priority: TransferPriority) {
        entries.append(Entry(sequence: sequence, priority: priority, element: element))
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
        entries[index].priority = priority
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
