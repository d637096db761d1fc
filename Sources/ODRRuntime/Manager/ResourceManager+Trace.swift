#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

extension ResourceManager {
    /// Starts writing what the app asks this manager for to `url`, as a trace that
    /// `odrsim run --trace FILE` replays (the format is ``TraceEvent``'s, written with ``TraceCodec``).
    ///
    /// ```swift
    /// try manager.startRecordingTrace(to: URL(filePath: "/tmp/session.jsonl"))
    /// // ... play: requests begin and end as usual ...
    /// try manager.stopRecordingTrace()
    /// ```
    ///
    /// What is recorded:
    /// - a `catalog` line first: the version the manager uses at the first event (or at the stop),
    ///   with the catalog's default preservation priorities and each pack's installed and archive
    ///   bytes, followed at time 0 by the priorities the app set earlier (they persist in the store);
    /// - a `begin` for each ``ResourceRequest`` that begins (`beginAccessingResources()` once the
    ///   manager accepted its tags, `conditionallyBeginAccessingResources()` when it returns `true`),
    ///   numbered by the recorder, `urgent` or with its loading priority;
    /// - an `end` when a request ends, explicitly, by `deinit`, or because its begin failed after it
    ///   was accepted (a download error or a cancellation: the manager held the tags until then);
    /// - a `preservation-priority` line for each successful ``setPreservationPriority(_:forTags:)``;
    /// - a `hint` line for each ``anticipate(tags:likelihood:)`` that returns a hint (its tags and
    ///   likelihood, numbered by the recorder apart from requests), and a `hint-end` when that hint
    ///   ends, by ``ResourceHint/end()`` or when its last reference goes.
    ///
    /// A begin refused at once (`invalid-tag`, `exceeded-maximum-in-use-size`, `begin-twice`), a
    /// conditional begin that returns `false` and a refused hint record nothing. Requests and hints
    /// that began before recording started are not recorded, not even their ends. Times are
    /// seconds since this call, read from the configuration's ``Configuration/clock``.
    ///
    /// A trace describes one catalog version: if the manager moves to a newer one while recording,
    /// events go on, but tags only the newer version has are unknown to the trace's catalog line and
    /// its replay rejects them. Stop and start a new recording on ``ResourceManagerEvent/catalogUpdated(version:)``
    /// to keep one trace per version.
    ///
    /// Events are buffered and written in the background about once a second, and all of them by
    /// ``stopRecordingTrace()`` or when the manager is deinitialized. Starting again while recording
    /// stops the current recording once the new file is open (call ``stopRecordingTrace()`` first to
    /// see its write errors).
    ///
    /// - Parameter url: the file to create; an existing file is replaced.
    /// - Throws: ``TraceError`` `write-failed` when the file cannot be created (its directory is
    ///   missing, or not writable); the current recording, if any, goes on then.
    public func startRecordingTrace(to url: URL) throws(TraceError) {
        let recorder = try TraceRecorder(url: url, clock: configuration.clock) { [weak self] in self?.traceCatalogEvents() }
        let previous = traceRecorder.withLock { current in
            defer { current = recorder }
            return current
        }
        try? previous?.finish()
    }

    /// Writes the rest of the trace and closes the file; does nothing when not recording.
    ///
    /// - Throws: ``TraceError`` `write-failed` when writing the file failed since recording started
    ///   (a full disk); the events from then on are lost, the recording is stopped all the same.
    public func stopRecordingTrace() throws(TraceError) {
        let recorder = traceRecorder.withLock { current in
            defer { current = nil }
            return current
        }
        try recorder?.finish()
    }

    /// The file being recorded, or `nil` when the manager is not recording a trace.
    public var traceRecordingURL: URL? { traceRecorder.withLock { $0?.url } }

    /// Records a begin of `tags` if a trace is being recorded.
    func traceBegin(_ tags: Set<String>, priority: TransferPriority) -> TraceTicket? {
        guard let recorder = traceRecorder.withLock({ $0 }),
              let number = recorder.begin(tags: tags, priority: priority) else { return nil }
        return TraceTicket(recorder: recorder, subject: .request, number: number)
    }

    /// Records an anticipation hint of `tags` if a trace is being recorded.
    func traceHint(_ tags: Set<String>, likelihood: Double) -> TraceTicket? {
        guard let recorder = traceRecorder.withLock({ $0 }),
              let number = recorder.hint(tags: tags, likelihood: likelihood) else { return nil }
        return TraceTicket(recorder: recorder, subject: .hint, number: number)
    }

    /// The catalog line of the current version, then the app's persisted preservation priorities
    /// (one line per value, at time 0); `nil` without a catalog.
    func traceCatalogEvents() -> [TraceEvent]? {
        guard let snapshot = state.withLock({ $0.snapshot }) else { return nil }
        let lookup = snapshot.lookup
        // The catalog as this device sees it: packs of variants it did not choose never install.
        var events: [TraceEvent] = [.catalog(TraceCatalog(
            tags: lookup.tags.map { .init(name: $0.name, preservationPriority: $0.preservationPriority) },
            packs: lookup.manifest.packs.filter { lookup.isChosen(packID: $0.id) }
                .map { .init(id: $0.id, bytes: $0.installedBytes, downloadBytes: $0.archiveBytes, tags: $0.tags) }))]
        let overrides = (try? store.preservationPriorityOverrides(catalogURL: snapshot.catalogURL)) ?? [:]
        let byPriority = Dictionary(grouping: overrides.filter { snapshot.lookup.tag(named: $0.key) != nil }, by: \.value)
        for (priority, tags) in byPriority.sorted(by: { $0.key < $1.key }) {
            events.append(.preservationPriority(time: 0, tags: tags.map(\.key).sorted(), priority: priority))
        }
        return events
    }
}

/// A request's begin or a hint in a trace recording: the recording that saw it and the number it
/// gave it, so the end goes to the same recording (and nowhere once that recording stopped).
struct TraceTicket: Sendable {
    enum Subject: Sendable { case request, hint }

    let recorder: TraceRecorder
    let subject: Subject
    let number: Int

    func end() {
        switch subject {
        case .request: recorder.end(request: number)
        case .hint: recorder.endHint(number)
        }
    }
}
