import ODRRuntime

/// Collects a workload's events in any order and produces a ``SimulationScript`` sorted by time.
struct ScriptBuilder {
    let catalog: SimulatedCatalog
    private var events: [SimulationScript.Event] = []
    private var requests: [SimulationScript.Request] = []
    private var hints: [SimulationScript.Hint] = []
    private var hintEvents: [SimulationScript.Event] = []
    private var tagPool: [TagIndex] = []
    var offlineWindows: [Range<Double>] = []
    var initialOtherAppsBytes: Int64 = 0

    init(catalog: SimulatedCatalog) { self.catalog = catalog }

    /// The number of requests so far.
    var requestCount: Int { requests.count }

    /// Adds a request for `tags` that begins at `time`; returns its number for ``end(_:at:)``.
    @discardableResult
    mutating func begin(_ tags: some Sequence<TagIndex>, at time: Double, urgent: Bool) -> Int32 {
        let start = tagPool.count
        tagPool.append(contentsOf: tags)
        requests.append(.init(tags: start ..< tagPool.count, isUrgent: urgent))
        let number = Int32(requests.count - 1)
        events.append(.init(time: time, action: .begin(request: number)))
        return number
    }

    /// Ends request `request` at `time`.
    mutating func end(_ request: Int32, at time: Double) {
        events.append(.init(time: time, action: .end(request: request)))
    }

    /// Adds the hints a game gives of what it asks for next: at every urgent request's beginning, a
    /// hint of `likelihood` for the tags of the next urgent request (the next level, the region the
    /// player heads into or fast-travels to, the next destination), which the game withdraws when
    /// that request begins. Each hinted tag is right with probability `accuracy`; otherwise the hint
    /// names what `wrong` makes of it: a plausible alternative the player could have taken
    /// (``WrongHints/neighbour``, through `alternative`) or a tag drawn uniformly among the others
    /// (``WrongHints/random``), so no policy that reads hints is an oracle.
    ///
    /// Call it once, after the workload added its requests; it draws only from `random`, so the
    /// requests are the same with and without hints, and under either model.
    ///
    /// - Parameter alternative: for a wrong hint under the neighbour model, the tag the game names
    ///   instead of `right` while the player is at `current` (the tags of the urgent request that
    ///   gives the hint), with `frontier` the highest tag any earlier urgent request asked for; `nil`
    ///   falls back to a uniform draw.
    mutating func addNextRequestHints(
        likelihood: Double, accuracy: Double, wrong: WrongHints = .random, random: inout SimulationRandom,
        alternative: (_ right: TagIndex, _ current: TagIndex, _ frontier: Int, _ random: inout SimulationRandom) -> TagIndex? = { _, _, _, _ in nil }
    ) {
        let tagCount = catalog.tags.count
        let urgent = events.enumerated().compactMap { offset, event -> (time: Double, offset: Int, request: Int)? in
            guard case .begin(let request) = event.action, requests[Int(request)].isUrgent else { return nil }
            return (event.time, offset, Int(request))
        }.sorted { ($0.time, $0.offset) < ($1.time, $1.offset) }
        var frontier = -1
        for (current, next) in zip(urgent, urgent.dropFirst()) {
            let start = tagPool.count
            var isRight = true
            // Copied out: appending to the pool while iterating a slice of it would copy the pool
            // on every append.
            let rightTags = Array(tagPool[requests[next.request].tags])
            let here = tagPool[requests[current.request].tags].first ?? TagIndex(0)
            frontier = max(frontier, tagPool[requests[current.request].tags].map(\.index).max() ?? frontier)
            for tag in rightTags {
                if tagCount < 2 || random.chance(accuracy) {
                    tagPool.append(tag)
                    continue
                }
                isRight = false
                if wrong == .neighbour, let other = alternative(tag, here, frontier, &random), other != tag, other.index < tagCount {
                    tagPool.append(other)
                } else {
                    // Uniform over the other tags: draw among tagCount - 1 and skip the right one.
                    let drawn = Int(random.next() % UInt64(tagCount - 1))
                    tagPool.append(TagIndex(drawn >= tag.index ? drawn + 1 : drawn))
                }
            }
            // Hint events come after request events at equal times, so a hint begins after the
            // request that gives it and ends after the request it announced has begun.
            addHint(poolRange: start ..< tagPool.count, likelihood: likelihood, isRight: isRight, from: current.time, until: next.time)
        }
    }

    /// Adds a hint of `tags` at `likelihood`, alive from `start` until `end`.
    mutating func hint(_ tags: some Sequence<TagIndex>, likelihood: Double, from start: Double, until end: Double) {
        let first = tagPool.count
        tagPool.append(contentsOf: tags)
        addHint(poolRange: first ..< tagPool.count, likelihood: likelihood, isRight: true, from: start, until: end)
    }

    private mutating func addHint(poolRange: Range<Int>, likelihood: Double, isRight: Bool, from start: Double, until end: Double) {
        let number = beginHint(poolRange: poolRange, likelihood: likelihood, isRight: isRight, at: start)
        endHint(number, at: end)
    }

    /// Adds a hint of `tags` at `likelihood` that begins at `time` (a recorded hint, whose end comes
    /// later); returns its number for ``endHint(_:at:)`` and ``setHint(_:isRight:)``.
    mutating func beginHint(_ tags: some Sequence<TagIndex>, likelihood: Double, at time: Double) -> Int32 {
        let first = tagPool.count
        tagPool.append(contentsOf: tags)
        return beginHint(poolRange: first ..< tagPool.count, likelihood: likelihood, isRight: false, at: time)
    }

    private mutating func beginHint(poolRange: Range<Int>, likelihood: Double, isRight: Bool, at time: Double) -> Int32 {
        hints.append(.init(tags: poolRange, likelihood: likelihood, isRight: isRight))
        let number = Int32(hints.count - 1)
        hintEvents.append(.init(time: time, action: .hint(number)))
        return number
    }

    /// Ends hint `hint` at `time`.
    mutating func endHint(_ hint: Int32, at time: Double) {
        hintEvents.append(.init(time: time, action: .endHint(hint)))
    }

    /// Records whether hint `hint` named what was asked for (for reports; no policy reads it).
    mutating func setHint(_ hint: Int32, isRight: Bool) {
        hints[Int(hint)].isRight = isRight
    }

    /// Other apps use `bytes` from `time` on.
    mutating func otherApps(_ bytes: Int64, at time: Double) {
        events.append(.init(time: time, action: .otherApps(bytes: bytes)))
    }

    /// `tags` get preservation priority `priority` at `time`.
    mutating func setPriority(_ priority: Double, of tags: some Sequence<TagIndex>, at time: Double) {
        let start = tagPool.count
        tagPool.append(contentsOf: tags)
        events.append(.init(time: time, action: .preservationPriority(tags: start ..< tagPool.count, priority: priority)))
    }

    /// The script; events at the same time keep the order they were added in.
    func build(duration: Double) -> SimulationScript {
        func sorted(_ events: [SimulationScript.Event]) -> [SimulationScript.Event] {
            events.enumerated().sorted {
                $0.element.time != $1.element.time ? $0.element.time < $1.element.time : $0.offset < $1.offset
            }.map(\.element)
        }
        return SimulationScript(
            catalog: catalog, events: sorted(events), requests: requests, hints: hints, hintEvents: sorted(hintEvents), tagPool: tagPool,
            offlineWindows: offlineWindows.sorted { $0.lowerBound < $1.lowerBound }, initialOtherAppsBytes: initialOtherAppsBytes,
            duration: duration)
    }
}
