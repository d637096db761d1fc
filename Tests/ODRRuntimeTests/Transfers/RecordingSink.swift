import Foundation
import ODRRuntime
import ODRFormat

/// A ``TransferSink`` for tests: keeps the body in memory and records what the engine told it.
///
/// It can hold back writes behind a gate (to keep a transfer running and its slot taken), slow
/// every write down (to make the engine apply backpressure), and start with held bytes (to test
/// resuming).
final class RecordingSink: TransferSink {
    struct State {
        var bytes = Data()
        /// The most bytes one ``write(_:)`` was handed.
        var largestWrite = 0
        /// How many times ``write(_:)`` was called.
        var writes = 0
        var heads: [TransferResponseHead] = []
        var finished = false
        var failure: ResourceError?
        var gateOpen: Bool
        var gateWaiters: [CheckedContinuation<Void, Never>] = []
    }

    let name: String
    private let log: EventLog?
    private let writeDelay: Duration?
    private let held: TransferResumePoint?
    private let state: Locked<State>

    init(name: String = "", log: EventLog? = nil, gated: Bool = false, writeDelay: Duration? = nil,
         heldBytes: Data? = nil, heldValidators: TransferValidators = .init()) {
        self.name = name
        self.log = log
        self.writeDelay = writeDelay
        held = heldBytes.map { TransferResumePoint(offset: Int64($0.count), validators: heldValidators) }
        state = Locked(State(bytes: heldBytes ?? Data(), gateOpen: !gated))
    }

    var bytes: Data { state.withLock { $0.bytes } }
    var largestWrite: Int { state.withLock { $0.largestWrite } }
    var writes: Int { state.withLock { $0.writes } }
    var heads: [TransferResponseHead] { state.withLock { $0.heads } }
    var finished: Bool { state.withLock { $0.finished } }
    var failure: ResourceError? { state.withLock { $0.failure } }

    /// Lets gated writes through.
    func openGate() {
        let waiters = state.withLock { state in
            state.gateOpen = true
            defer { state.gateWaiters.removeAll() }
            return state.gateWaiters
        }
        for waiter in waiters { waiter.resume() }
    }

    /// Waits (polling, with a hang guard) until the sink holds at least `count` bytes.
    func waitForBytes(atLeast count: Int, timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while bytes.count < count {
            guard ContinuousClock.now < deadline else { throw HangGuard(what: "\(count) bytes in \(name)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits (polling, with a hang guard) until a response began.
    func waitForBegin(timeout: Duration = .seconds(60)) async throws {
        let deadline = ContinuousClock.now + timeout
        while heads.isEmpty {
            guard ContinuousClock.now < deadline else { throw HangGuard(what: "a response for \(name)") }
            try await Task.sleep(for: .milliseconds(10))
        }
    }

    /// Waits until the byte count has not changed for `window`, and returns it.
    func waitUntilSteady(for window: Duration, timeout: Duration = .seconds(60)) async throws -> Int {
        let deadline = ContinuousClock.now + timeout
        var count = bytes.count
        var since = ContinuousClock.now
        while ContinuousClock.now - since < window {
            guard ContinuousClock.now < deadline else { throw HangGuard(what: "\(name) to stop receiving") }
            try await Task.sleep(for: .milliseconds(20))
            let now = bytes.count
            if now != count {
                count = now
                since = ContinuousClock.now
            }
        }
        return count
    }

    func resumePoint() -> TransferResumePoint? { held }

    func readHeldBytes(count: Int64, _ consume: (UnsafeRawBufferPointer) throws -> Void) async throws {
        let prefix = bytes.prefix(Int(count))
        try prefix.withUnsafeBytes { try consume($0) }
    }

    func begin(_ head: TransferResponseHead) async throws {
        state.withLock { state in
            state.bytes = state.bytes.prefix(Int(head.offset))
            state.heads.append(head)
        }
        log?.append(name)
    }

    func write(_ bytes: Data) async throws {
        await withCheckedContinuation { continuation in
            let open = state.withLock { state in
                if !state.gateOpen { state.gateWaiters.append(continuation) }
                return state.gateOpen
            }
            if open { continuation.resume() }
        }
        if let writeDelay { try await Task.sleep(for: writeDelay) }
        state.withLock { state in
            state.bytes.append(bytes)
            state.largestWrite = max(state.largestWrite, bytes.count)
            state.writes += 1
        }
    }

    func finish() async throws {
        state.withLock { $0.finished = true }
    }

    func fail(_ error: ResourceError) async {
        state.withLock { $0.failure = error }
    }
}

/// An ordered record of events from several transfers.
final class EventLog: Sendable {
    private let entries = Locked<[String]>([])
    func append(_ entry: String) { entries.withLock { $0.append(entry) } }
    var all: [String] { entries.withLock { $0 } }
}

/// A test waited far longer than anything should take: a hang, reported instead of blocking forever.
struct HangGuard: Error, CustomStringConvertible {
    var what: String
    var description: String { "gave up waiting for \(what)" }
}
