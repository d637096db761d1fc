@testable import ODRRuntime
import Testing

struct TransferQueueTests {
    private func queue(_ items: [(String, TransferPriority)]) -> TransferQueue<String> {
        var queue = TransferQueue<String>()
        for (index, item) in items.enumerated() {
            queue.insert(item.0, sequence: UInt64(index), priority: item.1)
        }
        return queue
    }

    @Test func urgentFirstThenHigherPriorityThenArrival() {
        let queue = queue([("low", .loading(0.1)), ("mid-a", .loading(0.5)), ("urgent", .urgent),
                           ("high", .loading(0.9)), ("mid-b", .loading(0.5))])
        #expect(queue.ordered == ["urgent", "high", "mid-a", "mid-b", "low"])
        #expect(queue.first(where: { _ in true })?.element == "urgent")
    }

    @Test func changingPriorityReorders() {
        var queue = queue([("a", .loading(0.2)), ("b", .loading(0.5)), ("c", .loading(0.5))])
        queue.setPriority(.loading(0.9), sequence: 0)
        #expect(queue.ordered == ["a", "b", "c"])
        queue.setPriority(.urgent, sequence: 2)
        #expect(queue.ordered == ["c", "a", "b"])
    }

    @Test func aLikelierHintBreaksTiesWithinOnePriorityOnly() {
        var queue = queue([("urgent", .urgent), ("a", .loading(0.5)), ("b", .loading(0.5)), ("c", .loading(0.5)),
                           ("low", .loading(0))])
        queue.setHintLikelihood(0.6, sequence: 3)
        queue.setHintLikelihood(0.9, sequence: 4)
        // c moves ahead of a and b, not of urgent; the hinted low one stays below every 0.5.
        #expect(queue.ordered == ["urgent", "c", "a", "b", "low"])
        queue.setHintLikelihood(0.6, sequence: 2)
        #expect(queue.ordered == ["urgent", "b", "c", "a", "low"], "equal likelihoods keep arrival order")
        queue.setHintLikelihood(0, sequence: 2)
        queue.setHintLikelihood(0, sequence: 3)
        #expect(queue.ordered == ["urgent", "a", "b", "c", "low"], "hints ended: arrival order again")
    }

    @Test func eligibilityFilterSkipsWaitingEntries() {
        let queue = queue([("retrying", .urgent), ("next", .loading(0.4))])
        #expect(queue.first(where: { $0.element != "retrying" })?.element == "next")
    }

    @Test func removeKeepsOthersInOrder() {
        var queue = queue([("a", .loading(0.5)), ("b", .loading(0.5)), ("c", .loading(0.5))])
        #expect(queue.remove(sequence: 1) == "b")
        #expect(queue.ordered == ["a", "c"])
        #expect(queue.remove(sequence: 7) == nil)
    }

    @Test func prioritiesOutsideTheRangeAreClamped() {
        #expect(TransferPriority.loading(7).level == 1)
        #expect(TransferPriority.loading(-3).level == 0)
        #expect(TransferPriority.loading(.nan).level == 0)
        #expect(TransferPriority.urgent.runsBefore(.loading(1)))
    }

    @Test(arguments: [
        // priority, running, runningUrgent, limit, may start
        (TransferPriority.loading(0.5), 3, 0, 4, true),
        (TransferPriority.loading(0.5), 4, 0, 4, false),
        (TransferPriority.loading(0.9), 1, 1, 4, false),
        (TransferPriority.urgent, 4, 0, 4, true),
        (TransferPriority.urgent, 5, 4, 4, false),
    ])
    func startRules(priority: TransferPriority, running: Int, runningUrgent: Int, limit: Int, mayStart: Bool) {
        #expect(transferMayStart(priority: priority, running: running, runningUrgent: runningUrgent, limit: limit) == mayStart)
    }
}
