import ODRRuntime

extension SimulationScript {
    /// A script that replays a recorded trace, on the trace's own catalog line or on `catalog`.
    ///
    /// The device's other apps and offline periods are generated from `device` and `seed` over the
    /// trace's length, since a trace records only what the game asked for.
    ///
    /// The trace's `hint` and `hint-end` lines become the script's hints (``hints``,
    /// ``hintEvents``), which the `hinted` policy reads; a hint still live at the trace's end lives
    /// on to the end of the replay. A replayed hint counts as right (``Hint/isRight``) when a
    /// request for each of its tags began while it lived.
    ///
    /// - Throws: ``TraceError`` `invalid-value` when the trace has no catalog (and none is given),
    ///   names a tag the catalog does not have, ends a request or hint that never began (or already
    ///   ended), begins a hint whose number is still live, or ends a hint before it began.
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
        /// Live hints by the trace's number: the script's number and when it began.
        var hints: [Int: (number: Int32, began: Double)] = [:]
        /// By the script's number, the hinted tags no request asked for while the hint lived; and
        /// the live hints with some.
        var unasked: [Set<TagIndex>] = []
        var waiting: Set<Int32> = []
        for event in events {
            switch event {
            case .catalog:
                continue
            case .begin(let time, let request, let tags, let priority):
                let indices = try tagIndices(tags)
                requests[request] = builder.begin(indices, at: time, urgent: priority == .urgent)
                for hint in waiting {
                    unasked[Int(hint)].subtract(indices)
                    if unasked[Int(hint)].isEmpty { waiting.remove(hint) }
                }
            case .end(let time, let request):
                guard let number = requests.removeValue(forKey: request) else {
                    throw TraceError(.invalidValue, "The trace ends request \(request), which did not begin (or already ended).")
                }
                builder.end(number, at: time)
            case .preservationPriority(let time, let tags, let priority):
                builder.setPriority(priority, of: try tagIndices(tags), at: time)
            case .hint(let time, let hint, let tags, let likelihood):
                guard hints[hint] == nil else {
                    throw TraceError(.invalidValue, "The trace begins hint \(hint) while a hint of that number is live; each hint needs its own number until its hint-end.")
                }
                // The codec checks the likelihood; a trace built in code is checked here too.
                guard likelihood.isFinite, (0 ... 1).contains(likelihood) else {
                    throw TraceError(.invalidValue, "The likelihood \(likelihood) of hint \(hint) is outside 0...1.")
                }
                let indices = try tagIndices(tags)
                let number = builder.beginHint(indices, likelihood: likelihood, at: time)
                hints[hint] = (number, time)
                unasked.append(Set(indices))
                if !indices.isEmpty { waiting.insert(number) }
            case .endHint(let time, let hint):
                guard let live = hints.removeValue(forKey: hint) else {
                    throw TraceError(.invalidValue, "The trace ends hint \(hint), which did not begin (or already ended).")
                }
                guard time >= live.began else {
                    throw TraceError(.invalidValue, "The trace ends hint \(hint) at \(time) s, before it began (\(live.began) s).")
                }
                builder.endHint(live.number, at: time)
                waiting.remove(live.number)
            }
        }
        for (number, tags) in unasked.enumerated() { builder.setHint(Int32(number), isRight: tags.isEmpty) }
        self = builder.build(duration: duration)
    }

    /// The script's requests and anticipation hints as a trace (catalog line first), which
    /// ``init(trace:catalog:device:seed:)`` replays; other apps and offline periods are not part
    /// of a trace. Hint lines follow the other lines of the same time, as the simulator plays them.
    public var traceEvents: [TraceEvent] {
        var events: [TraceEvent] = [.catalog(catalog.traceCatalog)]
        events.reserveCapacity(self.events.count + hintEvents.count + 1)
        let names = catalog.tags.map(\.name)
        var hintPosition = 0
        func appendHints(before time: Double?) {
            while hintPosition < hintEvents.count, time.map({ hintEvents[hintPosition].time < $0 }) ?? true {
                let event = hintEvents[hintPosition]
                hintPosition += 1
                switch event.action {
                case .hint(let hint):
                    events.append(.hint(time: event.time, hint: Int(hint), tags: tags(ofHint: Int(hint)).map { names[$0.index] },
                                        likelihood: hints[Int(hint)].likelihood))
                case .endHint(let hint):
                    events.append(.endHint(time: event.time, hint: Int(hint)))
                case .begin, .end, .otherApps, .preservationPriority:
                    continue
                }
            }
        }
        for event in self.events {
            appendHints(before: event.time)
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
        appendHints(before: nil)
        return events
    }
}
