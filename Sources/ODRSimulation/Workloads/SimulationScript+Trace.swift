import ODRRuntime

extension SimulationScript {
    /// A script that replays a recorded trace, on the trace's own catalog line or on `catalog`.
    ///
    /// The device's other apps and offline periods are generated from `device` and `seed` over the
    /// trace's length, since a trace records only what the game asked for.
    ///
    /// - Throws: ``TraceError`` when the trace has no catalog (and none is given), names a tag the
    ///   catalog does not have, or ends a request that never began.
    public init(
        trace events: [TraceEvent], catalog given: SimulatedCatalog? = nil, device: DeviceSettings, seed: UInt64
    ) throws(TraceError) {
        var catalog = given
        if catalog == nil, case .catalog(let line)? = events.first(where: { if case .catalog = $0 { true } else { false } }) {
            do {
                catalog = try SimulatedCatalog(trace: line)
            } catch {
                throw TraceError(.invalidValue, error.message, cause: error)
            }
        }
        guard let catalog else {
            throw TraceError(.invalidValue, "The trace has no catalog line; replay it with --catalog DIR.")
        }
        func tagIndices(_ names: [String]) throws(TraceError) -> [TagIndex] {
            do {
                return try catalog.ledgerCatalog.tags(named: names)
            } catch {
                throw TraceError(.invalidValue, error.message, cause: error)
            }
        }
        let duration = events.compactMap(\.time).max() ?? 0
        var builder = ScriptBuilder(catalog: catalog)
        var random = SimulationRandom(seed: seed, stream: "device")
        builder.addDeviceActivity(device, days: duration / 86_400, random: &random)
        var requests: [Int: Int32] = [:]
        for event in events {
            switch event {
            case .catalog:
                continue
            case .begin(let time, let request, let tags, let priority):
                requests[request] = builder.begin(try tagIndices(tags), at: time, urgent: priority == .urgent)
            case .end(let time, let request):
                guard let number = requests.removeValue(forKey: request) else {
                    throw TraceError(.invalidValue, "The trace ends request \(request), which did not begin (or already ended).")
                }
                builder.end(number, at: time)
            case .preservationPriority(let time, let tags, let priority):
                builder.setPriority(priority, of: try tagIndices(tags), at: time)
            }
        }
        self = builder.build(duration: duration)
    }

    /// The script's requests as a trace (catalog line first), which ``init(trace:catalog:device:seed:)``
    /// replays; other apps, offline periods and anticipation hints are not part of a trace.
    public var traceEvents: [TraceEvent] {
        var events: [TraceEvent] = [.catalog(catalog.traceCatalog)]
        events.reserveCapacity(self.events.count + 1)
        let names = catalog.tags.map(\.name)
        for event in self.events {
            switch event.action {
            case .begin(let request):
                events.append(.begin(
                    time: event.time, request: Int(request), tags: tags(of: Int(request)).map { names[$0.index] },
                    priority: requests[Int(request)].isUrgent ? .urgent : .background(0.3)))
            case .end(let request):
                events.append(.end(time: event.time, request: Int(request)))
            case .preservationPriority(let tags, let priority):
                events.append(.preservationPriority(time: event.time, tags: tagPool[tags].map { names[$0.index] }, priority: priority))
            case .otherApps, .hint, .endHint:
                continue
            }
        }
        return events
    }
}
