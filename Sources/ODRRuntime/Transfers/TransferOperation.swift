#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// One transfer as its caller, the transfer loop and the delivery task share it; the handle that
/// ``TransferEngine/transfer(_:into:)`` returns.
///
/// The loop thread appends response events and body bytes; the delivery task hands them to the sink
/// and is the only one that ends the transfer; callers change priority, pause, resume or cancel. All
/// of it meets in ``state``.
final class TransferOperation: TransferHandle, HintOrderedTransfer {
    /// Arrival order, unique per engine.
    let sequence: UInt64
    let request: TransferRequest
    let sink: any TransferSink
    /// What the sink held when the transfer was queued, when it can be continued with `Range`.
    let initialResumePoint: TransferResumePoint?
    /// How many body bytes may wait between the network and the sink before the transfer pauses.
    let bufferLimit: Int
    private let inbox: TransferInbox
    let state: Locked<State>
    /// Where a full buffer's network side waits for the sink to make room (``offer(_:mayWait:)``).
    private let room = ConditionLock()
    /// The buffers body bytes are gathered in, ``coalescingLimit(bufferLimit:)`` bytes each, reused.
    private let chunks: BodyChunkPool

    struct State {
        var priority: TransferPriority
        /// The tie-break among queued transfers of equal priority (``TransferOrder/hintLikelihood``).
        var hintLikelihood: Double
        var userPaused = false
        /// Set by ``cancel()`` or when delivery failed: the loop drops the transfer.
        var stopped = false
        var cancelledByCaller = false
        var events: [DeliveryEvent] = []
        /// Body bytes after `events`, gathered into the next chunk (``offer(_:mayWait:)``).
        var filling: FillingChunk?
        /// Body bytes appended to `events` or `filling` and not yet written by the sink.
        var bufferedBytes = 0
        var peakBufferedBytes = 0
        /// Body bytes taken from the network (appended to `events`) over every attempt.
        var networkBytes: Int64 = 0
        /// The write callback refused bytes (curl paused the transfer) until the sink catches up.
        var writeBlocked = false
        /// The network side waits in ``offer(_:mayWait:)`` for the sink to make room.
        var offerWaiting = false
        var deliveryWaiter: CheckedContinuation<Void, Never>?
        /// When body bytes first waited in `events` or `filling` since the delivery task last took them.
        var dataWaitingSince: ContinuousClock.Instant?
        var outcome: Result<TransferResult, ResourceError>?
        var outcomeWaiters: [CheckedContinuation<Result<TransferResult, ResourceError>, Never>] = []
        var progress: TransferProgress
    }

    /// What the loop tells the delivery task, in order.
    enum DeliveryEvent {
        case begin(TransferResponseHead)
        case data(Data)
        case finished(TransferCompletion)
        case notModified(TransferCompletion)
        case failed(ResourceError)
        /// An attempt failed; another follows.
        case retrying(TransferRetry)
        /// The transfer moved to another origin.
        case originSwitched(TransferOriginSwitch)
    }

    init(sequence: UInt64, request: TransferRequest, sink: any TransferSink, bufferLimit: Int, inbox: TransferInbox) {
        self.sequence = sequence
        self.request = request
        self.sink = sink
        self.bufferLimit = bufferLimit
        self.inbox = inbox
        // Enough for the buffer's four full chunks, the one being filled, and one more: the
        // buffer may run over by one callback's bytes.
        chunks = BodyChunkPool(chunkBytes: Self.coalescingLimit(bufferLimit: bufferLimit), keep: 6)
        let point = sink.resumePoint()
        // Without a validator the server cannot tell us whether the held bytes still match, so the
        // download starts over (the sink is told so by a head at offset 0).
        if let point, point.offset > 0, point.validators.ifRangeValue != nil, !request.url.isFileURL,
           Self.heldBytesFit(point, request) {
            initialResumePoint = point
        } else {
            initialResumePoint = nil
        }
        state = Locked(State(priority: request.priority, hintLikelihood: request.hintLikelihood,
                            progress: TransferProgress(receivedBytes: 0, expectedBytes: request.expectedSize)))
    }

    /// Whether held bytes can continue a byte-range request: they must leave part of the range to
    /// fetch, and come from the version of the file the caller planned the range against (one
    /// `If-Range` cannot vouch for two sets of validators).
    private static func heldBytesFit(_ point: TransferResumePoint, _ request: TransferRequest) -> Bool {
        guard let range = request.byteRange else { return true }
        guard point.offset < range.upperBound - range.lowerBound else { return false }
        guard let planned = request.ifRange?.ifRangeValue else { return true }
        return planned == point.validators.ifRangeValue
    }

    deinit {
        // A transfer dropped before it was resolved may still hold a chunk being filled.
        if let filling = state.withLock({ $0.filling }) { chunks.give(filling.buffer) }
    }

    // MARK: TransferHandle

    var url: URL { request.url }

    var priority: TransferPriority { state.withLock { $0.priority } }

    var progress: TransferProgress { state.withLock { $0.progress } }

    func setPriority(_ priority: TransferPriority) {
        let changed = state.withLock { state in
            defer { state.priority = priority }
            return state.priority != priority
        }
        if changed { inbox.post(.changed(self)) }
    }

    func setHintLikelihood(_ likelihood: Double) {
        let changed = state.withLock { state in
            defer { state.hintLikelihood = likelihood }
            return state.hintLikelihood != likelihood
        }
        if changed { inbox.post(.changed(self)) }
    }

    func pause() {
        setUserPaused(true)
    }

    func resume() {
        setUserPaused(false)
    }

    private func setUserPaused(_ paused: Bool) {
        let (changed, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.userPaused != paused else { return (false, nil) }
            state.userPaused = paused
            defer { state.deliveryWaiter = nil }
            return (true, state.deliveryWaiter)
        }
        // The delivery task of a `file://` transfer waits for this; others just look again.
        waiter?.resume()
        if changed { inbox.post(.changed(self)) }
    }

    func cancel() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.stopped else { return nil }
            state.stopped = true
            state.cancelledByCaller = true
            defer { state.deliveryWaiter = nil }
            return state.deliveryWaiter
        }
        waiter?.resume()
        inbox.post(.changed(self))
    }

    func outcome() async -> Result<TransferResult, ResourceError> {
        await withCheckedContinuation { continuation in
            let ready = state.withLock { state -> Result<TransferResult, ResourceError>? in
                if let outcome = state.outcome { return outcome }
                state.outcomeWaiters.append(continuation)
                return nil
            }
            if let ready { continuation.resume(returning: ready) }
        }
    }

    // MARK: Loop side (called on the transfer loop's thread)

    enum Offer {
        case accepted
        /// The buffer is full: curl must pause until the sink catches up.
        case full
        /// The caller paused the transfer since the loop last looked: curl must pause now, at this
        /// chunk, rather than at the loop's next turn (a request's first byte waits for no more).
        case paused
        /// The transfer was cancelled or its delivery failed: abort the exchange.
        case stopped
    }

    /// Appends body bytes for the sink unless the buffer is full.
    ///
    /// - Parameter mayWait: whether the caller (the loop thread, when this is the only transfer
    ///   running) may wait up to ``roomWait`` for the sink to make room in a full buffer before
    ///   curl has to pause. A pause costs a round trip through the loop and lets the socket fill,
    ///   so the server stops sending; waiting a moment keeps the bytes flowing with no more held in
    ///   memory (issue 44: a 256 MiB install from nginx took a median 0.594 s instead of 0.667 s).
    func offer(_ bytes: UnsafeRawBufferPointer, mayWait: Bool = false) -> Offer {
        if mayWait { waitForRoom() }
        let (offer, waiter) = state.withLock { state -> (Offer, CheckedContinuation<Void, Never>?) in
            if state.stopped { return (.stopped, nil) }
            if state.userPaused { return (.paused, nil) }
            if state.bufferedBytes >= bufferLimit {
                state.writeBlocked = true
                defer { state.deliveryWaiter = nil }
                return (.full, state.deliveryWaiter)
            }
            if state.events.isEmpty, state.filling == nil { state.dataWaitingSince = .now }
            // Coalesce small callback chunks so the sink sees fewer, larger writes.
            var copied = 0
            while copied < bytes.count {
                var filling = state.filling ?? FillingChunk(buffer: chunks.take())
                let count = min(bytes.count - copied, chunks.chunkBytes - filling.count)
                (filling.buffer + filling.count).copyMemory(from: bytes.baseAddress! + copied, byteCount: count)
                filling.count += count
                copied += count
                state.filling = filling
                if filling.count == chunks.chunkBytes { closeFilling(&state) }
            }
            state.bufferedBytes += bytes.count
            state.networkBytes += Int64(bytes.count)
            state.peakBufferedBytes = max(state.peakBufferedBytes, state.bufferedBytes)
            // The delivery task is woken by flushDelivery() once per loop turn, not per callback:
            // a wakeup per 16 KiB costs more than the copy.
            return (.accepted, nil)
        }
        waiter?.resume()
        return offer
    }

    /// The longest the network side waits for room in a full buffer before curl pauses.
    static let roomWait = Duration.microseconds(500)

    /// Waits, when the buffer is full, until the sink took half of it (``resumeLevel``), the
    /// transfer stopped or paused, or ``roomWait`` passed; wakes the delivery task first, which the
    /// loop would only do after its turn.
    private func waitForRoom() {
        let (full, waiter) = state.withLock { state -> (Bool, CheckedContinuation<Void, Never>?) in
            guard state.bufferedBytes >= bufferLimit, !state.stopped, !state.userPaused else { return (false, nil) }
            state.offerWaiting = true
            defer { state.deliveryWaiter = nil }
            return (true, state.deliveryWaiter)
        }
        guard full else { return }
        waiter?.resume()
        let wait = Self.roomWait.components
        let deadline = Date(timeIntervalSinceNow: Double(wait.seconds) + Double(wait.attoseconds) / 1e18)
        // The state is read under `room`'s lock, and `consumed` takes that lock to broadcast, so a
        // sink that makes room between the check and the wait still wakes this thread.
        room.withLock {
            while state.withLock({ $0.bufferedBytes > resumeLevel && !$0.stopped && !$0.userPaused }) {
                if !room.wait(until: deadline) { break }
            }
        }
        state.withLock { $0.offerWaiting = false }
    }

    /// Wakes the delivery task if events are ready for it (``isReady(_:now:)``); the loop calls
    /// this after each turn.
    func flushDelivery(now: ContinuousClock.Instant = .now) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard state.deliveryWaiter != nil, isReady(state, now: now) else { return nil }
            defer { state.deliveryWaiter = nil }
            return state.deliveryWaiter
        }
        waiter?.resume()
    }

    /// Whether body bytes wait that are not ready yet: the loop then polls again within
    /// ``deliveryDelay``, so that they reach the sink even if the network goes quiet.
    var holdsUndeliveredBytes: Bool {
        state.withLock { ($0.filling != nil || !$0.events.isEmpty) && !isReady($0, now: .now) }
    }

    /// Ends the chunk being filled: its bytes join `events` as `Data` that gives the buffer back
    /// to ``chunks`` once the sink is done with it.
    private func closeFilling(_ state: inout State) {
        guard let filling = state.filling else { return }
        state.filling = nil
        state.events.append(.data(chunks.data(filling.buffer, count: filling.count)))
    }

    /// Whether the delivery task should take what waits: any event but body bytes, a coalesced
    /// write's worth of bytes (``coalescingLimit(bufferLimit:)``), or bytes that waited ``deliveryDelay`` (a slow
    /// network). A sink that took every turn's few kilobytes made thousands of small writes and
    /// as many thread wake-ups per 256 MiB (issue 44: 21,558 futex calls against 846 before).
    private func isReady(_ state: State, now: ContinuousClock.Instant) -> Bool {
        // A chunk is closed into `events` when it is full or an event follows it.
        guard state.events.isEmpty else { return true }
        guard state.filling != nil, let since = state.dataWaitingSince else { return false }
        return since.duration(to: now) >= Self.deliveryDelay
    }

    /// How long body bytes short of a coalesced write may wait for more before the sink gets them.
    static let deliveryDelay = Duration.milliseconds(5)

    /// The most bytes coalesced into one write for the sink: a quarter of the buffer, so that the
    /// network goes on filling the other three while the sink writes one. When one write could take
    /// the whole buffer (256 KiB writes in a 256 KiB buffer), curl paused at every write and the
    /// network and the sink took turns instead of overlapping: installs were 30% slower (issue 44).
    static func coalescingLimit(bufferLimit: Int) -> Int { max(1, bufferLimit / 4) }

    /// Queues a non-data event for the delivery task.
    func deliver(_ event: DeliveryEvent) {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            closeFilling(&state)
            state.events.append(event)
            defer { state.deliveryWaiter = nil }
            return state.deliveryWaiter
        }
        waiter?.resume()
    }

    /// What the loop needs to know to schedule and pause the transfer.
    struct Control {
        var priority: TransferPriority
        var hintLikelihood: Double
        var userPaused: Bool
        var writeBlocked: Bool
        var stopped: Bool
    }

    var control: Control {
        state.withLock { Control(priority: $0.priority, hintLikelihood: $0.hintLikelihood, userPaused: $0.userPaused, writeBlocked: $0.writeBlocked, stopped: $0.stopped) }
    }

    // MARK: Delivery side

    /// Waits for events; `nil` once the transfer was stopped.
    func nextEvents() async -> [DeliveryEvent]? {
        while true {
            let taken = state.withLock { state -> [DeliveryEvent]?? in
                if state.stopped { return .some(nil) }
                if !isReady(state, now: .now) { return nil }
                closeFilling(&state)
                defer {
                    state.events.removeAll(keepingCapacity: true)
                    state.dataWaitingSince = nil
                }
                return .some(state.events)
            }
            if let taken { return taken }
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.stopped || isReady(state, now: .now) { return true }
                    state.deliveryWaiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// Waits while the caller has the transfer paused; `false` once it was stopped.
    func waitWhilePaused() async -> Bool {
        while true {
            let proceed = state.withLock { state -> Bool? in
                if state.stopped { return false }
                return state.userPaused ? nil : true
            }
            if let proceed { return proceed }
            await withCheckedContinuation { continuation in
                let ready = state.withLock { state -> Bool in
                    if state.stopped || !state.userPaused { return true }
                    state.deliveryWaiter = continuation
                    return false
                }
                if ready { continuation.resume() }
            }
        }
    }

    /// The sink wrote `count` bytes: free buffer space, and let the loop continue a paused exchange.
    func consumed(_ count: Int, receivedBytes: Int64, expectedBytes: Int64?) {
        let (wake, offerWaiting) = state.withLock { state -> (Bool, Bool) in
            state.bufferedBytes -= count
            state.progress = TransferProgress(receivedBytes: receivedBytes, expectedBytes: expectedBytes)
            guard state.bufferedBytes <= resumeLevel else { return (false, false) }
            guard state.writeBlocked else { return (false, state.offerWaiting) }
            state.writeBlocked = false
            return (true, state.offerWaiting)
        }
        if offerWaiting { room.withLock { room.broadcast() } }
        if wake { inbox.post(.changed(self)) }
    }

    /// How full the buffer may be for a network side that found it full to go on: half. Woken at
    /// every chunk the sink took, the transfer thread slept and woke once per 64 KiB (4,096 times
    /// per 256 MiB) and took only one more chunk each time; at half it takes two (issue 44).
    private var resumeLevel: Int { bufferLimit / 2 }

    func updateProgress(_ progress: TransferProgress) {
        state.withLock { $0.progress = progress }
    }

    var isStopped: Bool { state.withLock { $0.stopped } }

    var wasCancelledByCaller: Bool { state.withLock { $0.cancelledByCaller } }

    var peakBufferedBytes: Int { state.withLock { $0.peakBufferedBytes } }

    /// Body bytes the transfer has taken from the network so far (the sink may not have them yet).
    var networkBytes: Int64 { state.withLock { $0.networkBytes } }

    /// Ends the transfer once; later calls are ignored. Stops the loop's side when it failed.
    func resolve(_ outcome: Result<TransferResult, ResourceError>) {
        let (waiters, notifyLoop) = state.withLock { state -> ([CheckedContinuation<Result<TransferResult, ResourceError>, Never>], Bool) in
            guard state.outcome == nil else { return ([], false) }
            state.outcome = outcome
            let wasStopped = state.stopped
            state.stopped = true
            state.events.removeAll()
            if let filling = state.filling { chunks.give(filling.buffer) }
            state.filling = nil
            state.bufferedBytes = 0
            defer { state.outcomeWaiters.removeAll() }
            // A failure from the delivery side must stop the exchange; a success means it is over.
            let failed = if case .failure = outcome { true } else { false }
            return (state.outcomeWaiters, failed && !wasStopped)
        }
        if notifyLoop { inbox.post(.changed(self)) }
        for waiter in waiters { waiter.resume(returning: outcome) }
    }
}

/// What the loop knows about a finished exchange.
struct TransferCompletion: Sendable {
    var statusCode: Int
    var validators: TransferValidators
    var attempts: Int
    var resumedBytes: Int64
    /// Body bytes taken from the network over all attempts, and the URLs that sent them.
    var receivedBytes: Int64 = 0
    var receivedFrom: [URL] = []
    /// The URL that answered.
    var servedBy: URL?
}
