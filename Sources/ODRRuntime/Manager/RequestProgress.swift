#if FoundationAPI
import Foundation
#elseif canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// A request's progress as its `Progress` (with the `FoundationAPI` trait), its ``ResourceRequest/progressUpdates`` streams and the
/// C API's callback see it.
///
/// Counts archive bytes of the packs the request waits for: what their installs held already
/// (entries kept by an earlier attempt, or reused from installed packs) counts as done, then bytes as
/// the installs report them (see `ProgressTracker` in PackInstaller.swift for how often). Updates from
/// several packs meet under one lock, so values never decrease, and each new value is told once, in
/// order. `completedBytes` reaches `totalBytes` (and the fraction 1) only when the request is usable.
final class RequestProgress: Sendable {
    typealias Snapshot = ResourceRequest.ProgressSnapshot

    /// Where the request's begin stands, as progress sees it.
    private enum Phase {
        /// Not begun, or its begin failed (it may begin again): streams wait for the next begin.
        case idle
        /// Begun; the downloads run.
        case active
        /// Usable (accessing): streams get the final value and finish.
        case usable
        /// Ended: streams finish.
        case ended
    }

    private struct State {
        var phase = Phase.idle
        var snapshot = Snapshot(completedBytes: 0, totalBytes: 0, fractionCompleted: 0)
        var downloads: [PackDownload] = []
        /// This object's observer on each download.
        var tokens: [(PackDownload, UInt64)] = []
        var streams: [UInt64: AsyncStream<Snapshot>.Continuation] = [:]
        var observers: [UInt64: @Sendable (Snapshot) -> Void] = [:]
        var nextID: UInt64 = 0
    }

    private let state = Locked(State())

    #if FoundationAPI
    /// The request's `Progress`: units are bytes, plus one that completes when the request is usable.
    let progress: Progress

    init(progress: Progress) {
        self.progress = progress
    }
    #else
    init() {}
    #endif

    /// The latest value.
    var snapshot: Snapshot { state.withLock { $0.snapshot } }

    /// A stream of the values from now on: the current one first (unless the request has not begun),
    /// then each new one; it finishes when the request becomes usable, its begin fails, or it ends.
    func subscribe() -> AsyncStream<Snapshot> {
        let (stream, continuation) = AsyncStream<Snapshot>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = state.withLock { state -> UInt64? in
            switch state.phase {
            case .idle:
                break
            case .active:
                continuation.yield(state.snapshot)
            case .usable:
                continuation.yield(state.snapshot)
                continuation.finish()
                return nil
            case .ended:
                continuation.finish()
                return nil
            }
            state.nextID += 1
            state.streams[state.nextID] = continuation
            return state.nextID
        }
        if let id {
            continuation.onTermination = { [weak self] _ in _ = self?.state.withLock { $0.streams.removeValue(forKey: id) } }
        }
        return stream
    }

    /// Calls `observer` with each new value until ``removeObserver(_:)``. It runs under this
    /// object's lock, on whatever thread reported the bytes: it must return at once and must not
    /// call back into the request.
    func observe(_ observer: @escaping @Sendable (Snapshot) -> Void) -> UInt64 {
        state.withLock { state in
            state.nextID += 1
            state.observers[state.nextID] = observer
            return state.nextID
        }
    }

    func removeObserver(_ id: UInt64) {
        _ = state.withLock { $0.observers.removeValue(forKey: id) }
    }

    /// A begin waits for `downloads` (joined or started): the total is their archives' size, and
    /// what they hold or received already counts at once.
    func began(_ downloads: [PackDownload]) {
        let total = downloads.map { $0.requestProgress.total }.clampedSum()
        state.withLock { state in
            state.phase = .active
            state.downloads = downloads
            state.snapshot = Snapshot(completedBytes: 0, totalBytes: total, fractionCompleted: 0)
            #if FoundationAPI
            progress.totalUnitCount = total.clampedAdding(1)
            progress.completedUnitCount = 0
            #endif
            state.tokens = downloads.map { ($0, $0.addObserver { [weak self] _ in self?.refresh() }) }
            publish(Self.measure(state), in: &state, always: true)
        }
    }

    /// The downloads reported: tells the new value, if there is one.
    func refresh() {
        state.withLock { state in
            guard state.phase == .active else { return }
            publish(Self.measure(state), in: &state)
        }
    }

    /// The request is usable: the final value, then the streams finish.
    func usable() {
        let streams = state.withLock { state in
            stopObserving(&state)
            let total = state.snapshot.totalBytes
            publish(Snapshot(completedBytes: total, totalBytes: total, fractionCompleted: 1), in: &state)
            #if FoundationAPI
            progress.completedUnitCount = progress.totalUnitCount
            #endif
            state.phase = .usable
            return takeStreams(&state)
        }
        for stream in streams { stream.finish() }
    }

    /// The begin failed (the request may begin again): the streams finish.
    func failed() {
        let streams = state.withLock { state -> [AsyncStream<Snapshot>.Continuation] in
            guard state.phase == .idle || state.phase == .active else { return [] }
            stopObserving(&state)
            var last = state.snapshot
            last.retry = nil
            publish(last, in: &state)
            state.phase = .idle
            return takeStreams(&state)
        }
        for stream in streams { stream.finish() }
    }

    /// Runs `body` (the start of a begin); when it throws, the begin failed.
    func failing<T>(_ body: () throws(ResourceError) -> T) throws(ResourceError) -> T {
        do {
            return try body()
        } catch {
            failed()
            throw error
        }
    }

    /// The request ended (or went away): the streams finish, and new ones finish at once.
    func ended() {
        let streams = state.withLock { state in
            stopObserving(&state)
            state.phase = .ended
            state.observers.removeAll()
            return takeStreams(&state)
        }
        for stream in streams { stream.finish() }
    }

    // MARK: - Private

    /// The downloads' sum, never below the last value, and short of the total until usable.
    private static func measure(_ state: State) -> Snapshot {
        let last = state.snapshot
        var done: Int64 = 0
        var retry: TransferRetry?
        for download in state.downloads {
            let share = download.requestProgress
            done = done.clampedAdding(share.done)
            if let next = share.retry, retry.map({ next.nextAttempt < $0.nextAttempt }) ?? true { retry = next }
        }
        let total = last.totalBytes
        let completed = max(last.completedBytes, min(done, max(0, total - 1)))
        let fraction = max(last.fractionCompleted, Double(completed) / (Double(total) + 1))
        return Snapshot(completedBytes: completed, totalBytes: total, fractionCompleted: fraction, retry: retry)
    }

    /// Makes `next` the value and tells everyone, unless it is the value already.
    private func publish(_ next: Snapshot, in state: inout State, always: Bool = false) {
        guard always || next != state.snapshot else { return }
        state.snapshot = next
        #if FoundationAPI
        if next.fractionCompleted < 1 { progress.completedUnitCount = next.completedBytes }
        #endif
        for continuation in state.streams.values { continuation.yield(next) }
        for observer in state.observers.values { observer(next) }
    }

    private func stopObserving(_ state: inout State) {
        for (download, token) in state.tokens { download.removeObserver(token) }
        state.tokens = []
        state.downloads = []
    }

    /// Forgets the streams, for the caller to finish once the lock is released (finishing one runs
    /// its termination handler, which takes the lock).
    private func takeStreams(_ state: inout State) -> [AsyncStream<Snapshot>.Continuation] {
        defer { state.streams = [:] }
        return Array(state.streams.values)
    }
}
