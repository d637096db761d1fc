#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#endif
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// Writes the trace of one recording session of a ``ResourceManager`` (see
/// ``ResourceManager/startRecordingTrace(to:)``).
///
/// Recording an event is a lock, a clock read and an append to a buffer; the buffer is encoded with
/// ``TraceCodec`` and written off the caller's path, a second after its first event or once it holds
/// ``flushThreshold`` events, and synchronously by ``finish()``.
final class TraceRecorder: Sendable {
    /// Pending events that make a background flush start at once.
    static let flushThreshold = 512

    let url: URL
    private let clock: any ManagerClock
    private let start: Double
    /// The catalog line (and the persisted preservation priorities) of the manager's current
    /// version, or `nil` when it has none; asked once, at the first event.
    private let catalog: @Sendable () -> [TraceEvent]?
    private let pending: Locked<Pending>
    /// Taken before `pending` by a flush, so batches reach the file in order.
    private let output: Locked<Output>

    private struct Pending {
        var events: [TraceEvent] = []
        var nextRequest = 1
        var nextHint = 1
        var lastTime = 0.0
        var catalogResolved = false
        var flushScheduled = false
        var finished = false
    }

    private struct Output {
        var file: WritableFile?
        var error: TraceError?
    }

    /// Creates (or truncates) the file at `url`.
    ///
    /// - Throws: ``TraceError`` `write-failed` naming the file and the reason (a missing directory,
    ///   no permission).
    init(url: URL, clock: any ManagerClock, catalog: @escaping @Sendable () -> [TraceEvent]?) throws(TraceError) {
        let descriptor = open(url.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            let directory = url.deletingLastPathComponent()
            let hint = FileManager.default.fileExists(atPath: directory.path)
                ? "Check that it is writable." : "Its directory \(directory.path) does not exist; create it first."
            throw TraceError(.writeFailed, "Cannot create the trace file \(url.path): \(reason). \(hint)")
        }
        self.url = url
        self.clock = clock
        start = clock.now()
        self.catalog = catalog
        pending = Locked(Pending())
        output = Locked(Output(file: WritableFile(adopting: descriptor, path: url.path)))
    }

    /// Records a begin and returns the request number the recorder assigned to it.
    func begin(tags: Set<String>, priority: TransferPriority) -> Int? {
        let tags = tags.sorted()
        let priority: TraceEvent.Priority = priority.isUrgent ? .urgent : .background(priority.level)
        return record { time, state in
            defer { state.nextRequest += 1 }
            return (.begin(time: time, request: state.nextRequest, tags: tags, priority: priority), state.nextRequest)
        }
    }

    /// Records the end of request `number`.
    func end(request number: Int) {
        _ = record { time, _ in (.end(time: time, request: number), number) }
    }

    /// Records an anticipation hint and returns the hint number the recorder assigned to it.
    func hint(tags: Set<String>, likelihood: Double) -> Int? {
        let tags = tags.sorted()
        return record { time, state in
            defer { state.nextHint += 1 }
            return (.hint(time: time, hint: state.nextHint, tags: tags, likelihood: likelihood), state.nextHint)
        }
    }

    /// Records the end of hint `number`.
    func endHint(_ number: Int) {
        _ = record { time, _ in (.endHint(time: time, hint: number), number) }
    }

    /// Records that the app set the preservation priority of `tags`.
    func preservationPriority(_ priority: Double, tags: Set<String>) {
        let tags = tags.sorted()
        _ = record { time, _ in (.preservationPriority(time: time, tags: tags, priority: priority), 0) }
    }

    /// Writes the catalog line now if it is not written yet, so that it describes the priorities
    /// before a change the caller is about to make.
    func resolveCatalog() {
        pending.withLock { state in
            if !state.finished { resolveCatalog(&state) }
        }
    }

    /// Writes what is pending and closes the file; later events are ignored.
    ///
    /// - Throws: the first ``TraceError`` writing the file met since recording started.
    func finish() throws(TraceError) {
        pending.withLock { state in
            resolveCatalog(&state)
            state.finished = true
        }
        let error = output.withLock { output -> TraceError? in
            write(&output)
            try? output.file?.close(sync: false)
            output.file = nil
            return output.error
        }
        if let error { throw error }
    }

    /// Writes the pending events to the file.
    func flush() {
        output.withLock { write(&$0) }
    }

    // MARK: - Private

    private func record(_ make: (Double, inout Pending) -> (TraceEvent, Int)) -> Int? {
        let (number, schedule): (Int?, (later: Bool, now: Bool)) = pending.withLock { state in
            guard !state.finished else { return (nil, (false, false)) }
            resolveCatalog(&state)
            let elapsed = clock.now() - start
            let time = elapsed.isFinite ? max(elapsed, state.lastTime) : state.lastTime
            state.lastTime = time
            let (event, number) = make(time, &state)
            state.events.append(event)
            let later = !state.flushScheduled
            state.flushScheduled = true
            return (number, (later, state.events.count == Self.flushThreshold))
        }
        if schedule.now {
            Task.detached { [self] in flush() }
        } else if schedule.later {
            Task.detached { [self] in
                try? await Task.sleep(for: .seconds(1))
                flush()
            }
        }
        return number
    }

    private func resolveCatalog(_ state: inout Pending) {
        guard !state.catalogResolved else { return }
        state.catalogResolved = true
        if let lines = catalog() { state.events.insert(contentsOf: lines, at: 0) }
    }

    private func write(_ output: inout Output) {
        let events = pending.withLock { state -> [TraceEvent] in
            state.flushScheduled = false
            defer { state.events = [] }
            return state.events
        }
        guard !events.isEmpty, let file = output.file, output.error == nil else { return }
        do {
            try file.append(Array(try TraceCodec().encode(events)))
            try file.flush()
        } catch let error as TraceError {
            output.error = error
        } catch {
            output.error = TraceError(
                .writeFailed, "Writing the trace file \(url.path) failed; events from then on are lost.",
                cause: error)
        }
    }
}
