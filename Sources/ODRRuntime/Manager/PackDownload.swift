#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// One pack being installed for one or more requests. Requests that need a pack already being
/// installed join this download instead of starting another.
final class PackDownload: Sendable {
    let pack: String
    /// The hint that started the download, when one did (not a request, prefetch or fetch): its
    /// steps go to the store's log as ``StoreEvent/Kind/hint`` lines.
    let startedByHint: HintedPrefetch?
    private let state: Locked<State>

    private struct State {
        /// The bytes the download moves: the archive size until the install has its plan.
        var bytes: Int64
        var received: Int64 = 0
        /// The archive's size, the download's share of a request's progress.
        let archiveBytes: Int64
        /// Of `archiveBytes`, what the install held already or received so far; never decreases.
        var done: Int64 = 0
        /// The latest failed attempt while the transfer waits to try again; `nil` while bytes flow.
        var retry: TransferRetry?
        /// The loading priority of each request waiting on it, by requester.
        var priorities: [UInt64: TransferPriority] = [:]
        var result: Result<Void, ResourceError>?
        /// What the install did, once it succeeded.
        var summary: InstallSummary?
        var waiters: [UInt64: CheckedContinuation<Void, any Error>] = [:]
        var observers: [UInt64: @Sendable (Int64) -> Void] = [:]
        var interested = 0
        /// The last request left before the work finished, so the work is being cancelled.
        var abandoned = false
        var nextID: UInt64 = 0
        var task: Task<Void, Never>?
    }

    init(pack: String, bytes: Int64, startedByHint: HintedPrefetch? = nil) {
        self.pack = pack
        self.startedByHint = startedByHint
        state = Locked(State(bytes: bytes, archiveBytes: bytes))
    }

    /// The bytes the download moves: the archive's size at first, then what the install plans to
    /// fetch (less when installed files are reused or an earlier attempt left verified entries).
    var bytes: Int64 { state.withLock { $0.bytes } }

    /// Starts the work; `work` runs once, and its outcome ends every wait.
    func start(_ work: @escaping @Sendable () async throws(ResourceError) -> Void) {
        let task = Task {
            do throws(ResourceError) {
                try await work()
                self.complete(.success(()))
            } catch {
                self.complete(.failure(error))
            }
        }
        state.withLock { $0.task = task }
    }

    /// Bytes received so far.
    var received: Int64 { state.withLock { $0.received } }

    /// The bytes the download has left to move; `nil` once it is abandoned (a request would start
    /// another download) or has failed.
    var remainingUnlessAbandoned: Int64? {
        state.withLock { state in
            if state.abandoned { return nil }
            switch state.result {
            case .success?: return 0
            case .failure?: return nil
            case nil: return max(0, state.bytes - state.received)
            }
        }
    }

    /// Whether the last request left before the work finished (the work is being cancelled).
    var isAbandoned: Bool { state.withLock { $0.abandoned } }

    /// Whether the work has ended, well or not.
    var isFinished: Bool { state.withLock { $0.result != nil } }

    /// What the install did: set by the work before it ends; `nil` until then or after a failure.
    var summary: InstallSummary? {
        get { state.withLock { $0.summary } }
        set { state.withLock { $0.summary = newValue } }
    }

    /// Records progress and tells the observers.
    func update(received: Int64, of total: Int64? = nil) {
        let observers = state.withLock { state in
            if let total { state.bytes = total }
            state.received = max(state.received, min(received, state.bytes))
            return Array(state.observers.values)
        }
        for observer in observers { observer(received) }
    }

    /// Records an install's progress and tells the observers.
    ///
    /// - Returns: whether `progress` carries a retry the download had not reported yet.
    func update(_ progress: InstallProgress) -> Bool {
        let (observers, newRetry) = state.withLock { state in
            state.bytes = progress.totalBytes
            state.received = max(state.received, min(progress.completedBytes, state.bytes))
            let done = min(state.archiveBytes, progress.heldBytes.clampedAdding(progress.completedBytes))
            state.done = max(state.done, done)
            let newRetry = progress.retry != nil && progress.retry != state.retry
            state.retry = progress.retry
            return (Array(state.observers.values), newRetry)
        }
        for observer in observers { observer(progress.completedBytes) }
        return newRetry
    }

    /// This download's share of a request's progress, in archive bytes: what the install held
    /// already (entries kept by an earlier attempt or reused from installed packs) plus what arrived,
    /// of the archive's size; all of it once installed. With the pending retry while stalled.
    var requestProgress: (done: Int64, total: Int64, retry: TransferRetry?) {
        state.withLock { state in
            if case .success = state.result { return (state.archiveBytes, state.archiveBytes, nil) }
            return (state.done, state.archiveBytes, state.result == nil ? state.retry : nil)
        }
    }

    /// Records `requester`'s priority; returns the download's: the highest among its requesters.
    func setPriority(_ priority: TransferPriority, for requester: UInt64) -> TransferPriority {
        state.withLock { state in
            state.priorities[requester] = priority
            return Self.highest(state.priorities.values) ?? priority
        }
    }

    /// Who has set a priority on the download and not withdrawn it (requests, prefetches, hints).
    var requesters: [UInt64] { state.withLock { Array($0.priorities.keys) } }

    /// The download's priority: the highest among its requesters, `nil` while none has set one.
    var priority: TransferPriority? { state.withLock { Self.highest($0.priorities.values) } }

    /// Forgets `requester`'s priority; returns the highest of the rest, `nil` when none is left.
    func withdrawPriority(of requester: UInt64) -> TransferPriority? {
        state.withLock { state in
            guard state.priorities.removeValue(forKey: requester) != nil else { return nil }
            return Self.highest(state.priorities.values)
        }
    }

    private static func highest(_ priorities: some Sequence<TransferPriority>) -> TransferPriority? {
        priorities.reduce(nil) { best, next in best.map { next.runsBefore($0) ? next : $0 } ?? next }
    }

    /// A request starts needing this download.
    func retain() { state.withLock { $0.interested += 1 } }

    /// A request starts needing this download, unless it was abandoned (its last request left and
    /// its work is being cancelled): joining it would only fail with `cancelled`, so the caller
    /// starts another download instead.
    func retainUnlessAbandoned() -> Bool {
        state.withLock { state in
            guard !state.abandoned else { return false }
            state.interested += 1
            return true
        }
    }

    /// A request stops needing it; the last one out cancels the work.
    func release() {
        let task: Task<Void, Never>? = state.withLock { state in
            state.interested -= 1
            guard state.interested == 0, state.result == nil else { return nil }
            state.abandoned = true
            return state.task
        }
        task?.cancel()
    }

    /// Returns once the work has finished, whatever its outcome.
    func finished() async {
        await state.withLock { $0.task }?.value
    }

    /// Calls `observer` with the bytes received whenever they change; returns a token for ``removeObserver(_:)``.
    func addObserver(_ observer: @escaping @Sendable (Int64) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            state.observers[state.nextID] = observer
            return state.nextID
        }
    }

    func removeObserver(_ token: UInt64) { _ = state.withLock { $0.observers.removeValue(forKey: token) } }

    /// Waits for the outcome; a cancelled waiter stops waiting at once (the work goes on for others).
    func wait() async throws(ResourceError) {
        let id = state.withLock { state -> UInt64 in
            state.nextID += 1
            return state.nextID
        }
        do {
            try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                    let early: Result<Void, any Error>? = state.withLock { state in
                        if let result = state.result { return result.mapError { $0 } }
                        if Task.isCancelled { return .failure(CancellationError()) }
                        state.waiters[id] = continuation
                        return nil
                    }
                    if let early { continuation.resume(with: early) }
                }
            } onCancel: {
                let waiter = state.withLock { $0.waiters.removeValue(forKey: id) }
                waiter?.resume(throwing: CancellationError())
            }
        } catch let error as ResourceError {
            throw error
        } catch {
            throw ResourceError(.cancelled, "The request was cancelled before its resources were ready.")
        }
    }

    private func complete(_ result: Result<Void, ResourceError>) {
        let waiters = state.withLock { state in
            state.result = result
            defer { state.waiters.removeAll() }
            return Array(state.waiters.values)
        }
        for waiter in waiters { waiter.resume(with: result.mapError { $0 }) }
    }
}
