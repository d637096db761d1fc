import ODRRuntime

/// Collects a workload's events in any order and produces a ``SimulationScript`` sorted by time.
struct ScriptBuilder {
    let catalog: SimulatedCatalog
    private var events: [SimulationScript.Event] = []
    private var requests: [SimulationScript.Request] = []
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
        let sorted = events.enumerated().sorted {
            $0.element.time != $1.element.time ? $0.element.time < $1.element.time : $0.offset < $1.offset
        }.map(\.element)
        return SimulationScript(
            catalog: catalog, events: sorted, requests: requests, tagPool: tagPool,
            offlineWindows: offlineWindows.sorted { $0.lowerBound < $1.lowerBound }, initialOtherAppsBytes: initialOtherAppsBytes,
            duration: duration)
    }
}
