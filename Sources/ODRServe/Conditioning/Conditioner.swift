import ODRFormat

/// Decides, for each request, which faults of the current ``NetworkConditions`` and of the faults
/// tests scheduled apply to it.
///
/// Shared by every connection of one server; all state sits behind one lock held only for
/// bookkeeping, never while a response is being sent.
final class Conditioner: Sendable {
    /// Faults a test scheduled, consumed in order by the requests they match.
    private struct Scheduled {
        let fault: Fault
        var remaining: Int
        let path: String?

        func matches(_ requestPath: String) -> Bool {
            path.map { $0 == requestPath } ?? true
        }
    }

    private struct State {
        var conditions: NetworkConditions
        var scheduled: [Scheduled] = []
        /// How many times each request key was seen, so the same request repeated (a retry)
        /// draws fresh decisions, yet the same run of requests draws the same ones.
        var occurrences: [String: UInt64] = [:]

        /// Takes one use of the first scheduled fault that matches `path` and `accepts`.
        mutating func takeScheduled(path: String, where accepts: (Fault) -> Bool) -> Fault? {
            guard let index = scheduled.firstIndex(where: { $0.matches(path) && accepts($0.fault) }) else { return nil }
            let fault = scheduled[index].fault
            scheduled[index].remaining -= 1
            if scheduled[index].remaining <= 0 { scheduled.remove(at: index) }
            return fault
        }
    }

    private let state: Locked<State>

    init(conditions: NetworkConditions) {
        state = Locked(State(conditions: conditions))
    }

    var conditions: NetworkConditions {
        state.withLock { $0.conditions }
    }

    func setConditions(_ conditions: NetworkConditions) {
        state.withLock { $0.conditions = conditions }
    }

    func schedule(_ fault: Fault, count: Int, path: String?) {
        guard count > 0 else { return }
        let path = path.map { $0.hasPrefix("/") ? $0 : "/" + $0 }
        state.withLock { $0.scheduled.append(Scheduled(fault: fault, remaining: count, path: path)) }
    }

    /// Scheduled faults not yet consumed, one entry per remaining use.
    var pendingFaults: [Fault] {
        state.withLock { state in state.scheduled.flatMap { Array(repeating: $0.fault, count: $0.remaining) } }
    }

    func clearScheduled() {
        state.withLock { $0.scheduled.removeAll() }
    }

    /// Decides what happens before a response is chosen: delay, an error status, a dropped connection.
    ///
    /// - Parameters:
    ///   - key: what identifies the request for random decisions (method, target, range).
    ///   - path: the decoded path scheduled faults are matched against.
    func admit(key: String, path: String) -> RequestConditioning {
        let (conditions, occurrence, scheduled) = state.withLock { state in
            let occurrence = state.occurrences[key, default: 0]
            state.occurrences[key] = occurrence + 1
            return (state.conditions, occurrence, state.takeScheduled(path: path) { !$0.actsOnBody })
        }
        var request = RequestConditioning(
            conditions: conditions,
            path: path,
            random: SplitMix64(seed: conditions.seed, key: key, occurrence: occurrence)
        )
        request.delay = conditions.latency
        let failsAtRandom = request.random.chance(conditions.failRate)
        switch scheduled?.kind {
        case .status(let code)?:
            request.failStatus = code
        case .dropConnection?:
            request.dropsConnection = true
        case .delay(let extra)?:
            request.delay += extra
        case .truncate?, .corrupt?, .stall?, nil:
            break
        }
        if let scheduled { request.applied.append(scheduled) }
        if failsAtRandom, request.failStatus == nil, !request.dropsConnection {
            request.failStatus = 503
            request.applied.append(.status(503))
        }
        return request
    }

    /// Decides how a body of `length` bytes is sent: its pace, where it is cut, which bytes flip.
    func shapeBody(of request: inout RequestConditioning, length: Int) -> BodyShaping {
        var shaping = BodyShaping(bytesPerSecond: request.conditions.bytesPerSecond)
        guard length > 0 else { return shaping }
        let scheduled = state.withLock { state in
            state.takeScheduled(path: request.path) { $0.actsOnBody && $0.applies(toBodyOfLength: length) }
        }
        // Draw every random value whatever the rates, so one rate does not shift another's draws.
        let truncates = request.random.chance(request.conditions.truncateRate)
        let truncateAt = Int(request.random.next() % UInt64(length))
        let corrupts = request.random.chance(request.conditions.corruptRate)
        let corruptAt = Int(request.random.next() % UInt64(length))

        switch scheduled?.kind {
        case .truncate(let after)?:
            shaping.truncateAfter = after
        case .corrupt(let offset)?:
            shaping.corruptOffsets.append(offset)
        case .stall(let after, let duration)?:
            shaping.stall = (after, duration)
        case .status?, .dropConnection?, .delay?, nil:
            break
        }
        if let scheduled { request.applied.append(scheduled) }
        if truncates, shaping.truncateAfter == nil, shaping.stall == nil {
            shaping.truncateAfter = truncateAt
            request.applied.append(.truncate(afterBytes: truncateAt))
        }
        if corrupts, !shaping.corruptOffsets.contains(corruptAt) {
            shaping.corruptOffsets.append(corruptAt)
            shaping.corruptOffsets.sort()
            request.applied.append(.corrupt(atOffset: corruptAt))
        }
        return shaping
    }
}

/// What the conditioner decided for one request before its response is chosen.
struct RequestConditioning {
    let conditions: NetworkConditions
    let path: String
    var random: SplitMix64
    var delay: Duration = .zero
    var failStatus: Int?
    var dropsConnection = false
    /// Faults applied so far, for the request log.
    var applied: [Fault] = []
}

/// How one response body is sent.
struct BodyShaping: Sendable {
    var bytesPerSecond: Int?
    /// Close the connection after this many body bytes.
    var truncateAfter: Int?
    /// Stop sending after `after` bytes, wait `duration`, then close the connection.
    var stall: (after: Int, duration: Duration)?
    /// Body offsets whose bytes are inverted, ascending.
    var corruptOffsets: [Int] = []

    /// Whether the body goes out untouched, at full speed.
    var isPassThrough: Bool {
        bytesPerSecond == nil && truncateAfter == nil && stall == nil && corruptOffsets.isEmpty
    }
}
