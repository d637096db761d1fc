import ODRFormat

/// Every request of a server's lifetime (or the newest `capacity` of them), in arrival order, and a
/// way to wait until none is in flight.
final class RequestLog: Sendable {
    private struct State {
        var nextSequence = 0
        /// Requests numbered below this were forgotten by ``clear()``, even those still in flight.
        var firstKept = 0
        var entries: [Int: ServedRequest] = [:]
        var inFlight = 0
        var idleWaiters: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Locked(State())
    /// How many requests are kept, the newest; `nil` keeps every one (a test or development
    /// server). A share server runs as long as a game does, so it keeps a bounded number.
    let capacity: Int?

    init(capacity: Int? = nil) {
        self.capacity = capacity.map { max(1, $0) }
    }

    /// Requests that arrived since the start, including those no longer kept.
    var count: Int { state.withLock { $0.nextSequence } }

    /// Counts a request as in flight and returns its sequence number.
    func arrive() -> Int {
        state.withLock { state in
            defer { state.nextSequence += 1 }
            state.inFlight += 1
            return state.nextSequence
        }
    }

    /// Records the response chosen for a request that is still being sent.
    func record(_ request: ServedRequest) {
        state.withLock { state in
            guard isKept(request.sequence, in: state) else { return }
            state.entries[request.sequence] = request
            if let capacity { state.entries[request.sequence - capacity] = nil }
        }
    }

    /// Whether the request numbered `sequence` is kept: not forgotten by ``clear()`` and among
    /// the newest `capacity`.
    private func isKept(_ sequence: Int, in state: State) -> Bool {
        sequence >= state.firstKept && (capacity.map { sequence >= state.nextSequence - $0 } ?? true)
    }

    /// Records how a request ended and stops counting it as in flight.
    func finish(_ request: ServedRequest) {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            if isKept(request.sequence, in: state) { state.entries[request.sequence] = request }
            state.inFlight -= 1
            guard state.inFlight == 0 else { return [] }
            defer { state.idleWaiters.removeAll() }
            return state.idleWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    var requests: [ServedRequest] {
        state.withLock { state in state.entries.values.sorted { $0.sequence < $1.sequence } }
    }

    /// Forgets every request that has arrived so far. One still in flight stays forgotten when it
    /// finishes: a response the client already read must not reappear in the next step's log.
    func clear() {
        state.withLock { state in
            state.entries.removeAll()
            state.firstKept = state.nextSequence
        }
    }

    /// Returns once no request is in flight.
    func waitUntilIdle() async {
        await withCheckedContinuation { continuation in
            let idle = state.withLock { state in
                if state.inFlight == 0 { return true }
                state.idleWaiters.append(continuation)
                return false
            }
            if idle { continuation.resume() }
        }
    }
}
