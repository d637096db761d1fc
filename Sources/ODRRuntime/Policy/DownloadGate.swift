#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Applies a ``DownloadPolicy`` to pack downloads: each asks ``admit(bytes:priority:onHold:onResume:)``
/// before its transfer starts and waits there while the policy forbids it.
///
/// Waiters re-decide whenever something that could change the verdict changes (the network, a
/// priority, the day's budget); a generation number counted up on each change means a change that
/// lands between a decision and the wait is never missed.
final class DownloadGate: Sendable {
    let policy: DownloadPolicy
    private let probe: any NetworkConditionProbe
    private let clock: any ManagerClock
    private let usage: MeteredUsage
    private let state = Locked(State())
    /// Held while the probe runs, so concurrent checks ask it once each, in turn.
    private let probing = Locked(())

    private struct State {
        var condition: NetworkCondition?
        var generation: UInt64 = 0
        var waiters: [UInt64: CheckedContinuation<Void, Never>] = [:]
        /// Per admitted ticket on a metered network, the planned bytes not transferred yet: they
        /// count against the budget, so two downloads cannot each take the same remaining bytes.
        var reserved: [UInt64: Int64] = [:]
        var nextID: UInt64 = 0
    }

    init(policy: DownloadPolicy, probe: any NetworkConditionProbe, clock: any ManagerClock, storeDirectory: URL) {
        self.policy = policy
        self.probe = probe
        self.clock = clock
        usage = MeteredUsage(directory: storeDirectory, now: clock.now())
    }

    /// The condition last read from the probe; `nil` before the first check.
    var lastCondition: NetworkCondition? { state.withLock { $0.condition } }

    /// Bytes transferred over metered networks today (UTC).
    var meteredBytesToday: Int64 { usage.bytes(now: clock.now()) }

    /// Asks the probe now and lets waiting downloads decide again.
    @discardableResult
    func refresh() -> NetworkCondition {
        let condition = probing.withLock { _ in probe.currentCondition() }
        state.withLock { $0.condition = condition }
        changed()
        return condition
    }

    /// ``refresh()`` on a thread of its own: an app's probe may block (a C callback, a D-Bus
    /// call), which should not hold one of the few threads of Swift's concurrency pool.
    @discardableResult
    func refreshOffPool() async -> NetworkCondition {
        await withCheckedContinuation { continuation in
            RuntimeThreads.start(name: "odr-net-probe") { [self] in continuation.resume(returning: refresh()) }
        }
    }

    /// Something that could change a verdict changed (a priority, the day): waiters decide again.
    func changed() {
        let waiters = state.withLock { state in
            state.generation &+= 1
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Returns once a download of `bytes` may start, with the ticket that counts its metered bytes.
    ///
    /// - Parameters:
    ///   - bytes: what the download plans to transfer; asked for only on a metered network (it
    ///     reads the store), at most once.
    ///   - priority: the download's priority now (`nil` while no request has set one yet: it then
    ///     waits silently for the first).
    ///   - onHold: called when the download starts waiting, and again when the reason changes.
    ///   - onResume: called when a download that waited may start.
    /// - Throws: `network-policy` (or `network-unavailable` offline) when the policy forbids it and
    ///   does not wait; `cancelled` when the task is cancelled while waiting.
    func admit(bytes plannedBytes: () -> Int64, priority: @Sendable () -> TransferPriority?,
               onHold: (DownloadHold) -> Void, onResume: () -> Void) async throws(ResourceError) -> Ticket {
        if lastCondition == nil { await refreshOffPool() }
        var held: DownloadHold?
        var planned: Int64?
        while true {
            if Task.isCancelled {
                throw ResourceError(.cancelled, "The download was cancelled while it waited for the download policy to allow it.")
            }
            let now = clock.now()
            let spent = usage.bytes(now: now)
            if planned == nil, lastCondition == .metered { planned = plannedBytes() }
            let bytes = planned ?? 0
            let verdict = state.withLock { state -> (generation: UInt64, hold: DownloadHold??, ticket: UInt64?) in
                let generation = state.generation
                guard let priority = priority() else { return (generation, .some(nil), nil) }
                let condition = state.condition ?? .unmetered
                let left = policy.dailyMeteredByteBudget.map { $0 - spent - state.reserved.values.reduce(0, +) }
                if let hold = policy.hold(urgent: policy.isUrgent(priority), bytes: bytes, condition: condition, meteredBytesLeft: left) {
                    return (generation, .some(hold), nil)
                }
                state.nextID += 1
                if condition == .metered { state.reserved[state.nextID] = bytes }
                return (generation, nil, state.nextID)
            }
            if let id = verdict.ticket {
                if held != nil { onResume() }
                return Ticket(id: id, gate: self)
            }
            if case .some(.some(let hold)) = verdict.hold {
                guard policy.waitsWhenForbidden else { throw Self.error(for: hold, bytes: bytes, policy: policy, left: policy.dailyMeteredByteBudget.map { $0 - spent }) }
                if held != hold { onHold(hold) }
                held = hold
            }
            await waitForChange(after: verdict.generation)
        }
    }

    /// Suspends until the generation moves past `generation` or the task is cancelled.
    private func waitForChange(after generation: UInt64) async {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let ready = state.withLock { state -> Bool in
                    if state.generation != generation || Task.isCancelled { return true }
                    state.waiters[id] = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        } onCancel: {
            state.withLock { $0.waiters.removeValue(forKey: id) }?.resume()
        }
    }

    /// Counts bytes as they arrive: on a metered network they go to the day's usage.
    private func transferred(_ count: Int64, ticket: UInt64) {
        guard count > 0 else { return }
        let metered = state.withLock { state -> Bool in
            if let reserved = state.reserved[ticket] { state.reserved[ticket] = max(0, reserved - count) }
            return state.condition == .metered
        }
        if metered { usage.add(count, now: clock.now()) }
    }

    private func finish(ticket: UInt64) {
        let hadReservation = state.withLock { $0.reserved.removeValue(forKey: ticket) != nil }
        usage.save()
        if hadReservation { changed() }
    }

    /// One admitted download: reports its bytes, and ends once.
    final class Ticket: Sendable {
        private let id: UInt64
        private let gate: DownloadGate
        /// Bytes reported so far (progress is cumulative).
        private let reported = Locked<Int64>(0)

        fileprivate init(id: UInt64, gate: DownloadGate) {
            self.id = id
            self.gate = gate
        }

        /// The download has transferred `total` bytes so far.
        func progress(_ total: Int64) {
            let delta = reported.withLock { reported -> Int64 in
                defer { reported = max(reported, total) }
                return total - reported
            }
            gate.transferred(delta, ticket: id)
        }

        /// The download ended, well or not.
        func finish() { gate.finish(ticket: id) }
    }

    /// The error of a download the policy forbids, when the policy does not wait.
    static func error(for hold: DownloadHold, bytes: Int64, policy: DownloadPolicy, left: Int64?) -> ResourceError {
        switch hold {
        case .offline:
            return ResourceError(.networkUnavailable, "The network condition probe reports no network; try again when the device is online.")
        case .meteredUrgentNotAllowed:
            return ResourceError(.networkPolicy, "The network is metered and the download policy keeps urgent downloads off metered networks. Allow them with downloadPolicy.allowsMeteredUrgent = true (ODR_OPT_METERED_URGENT 1 in C, odr fetch --allow-metered), or connect to an unmetered network.")
        case .meteredNonUrgentNotAllowed:
            return ResourceError(.networkPolicy, "The network is metered and the download policy keeps non-urgent downloads (loading priority below \(policy.urgentLoadingPriority), prefetch) off metered networks. Allow them with downloadPolicy.allowsMeteredNonUrgent = true (ODR_OPT_METERED_NON_URGENT 1 in C, odr fetch --allow-metered), make the request urgent, or connect to an unmetered network.")
        case .meteredBudgetExhausted:
            let budget = policy.dailyMeteredByteBudget ?? 0
            return ResourceError(.networkPolicy, "The download needs \(bytes) bytes but only \(max(0, left ?? 0)) of today's metered budget of \(budget) bytes (UTC day) are left. Raise or remove downloadPolicy.dailyMeteredByteBudget (ODR_OPT_METERED_DAILY_BUDGET in C), connect to an unmetered network, or try again tomorrow.")
        }
    }
}
