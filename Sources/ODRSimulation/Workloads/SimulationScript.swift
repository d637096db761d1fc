import ODRRuntime

/// Everything that happens to a simulated device, fixed before any policy runs: requests beginning
/// and ending, other apps taking and giving back disk space, preservation priorities changing, and
/// when the network is offline.
///
/// Because the script does not depend on the policy (stalls are accounted, not fed back into the
/// timeline), every policy sees the same sequence, which is what makes Belady's MIN a valid
/// reference for the others.
public struct SimulationScript: Sendable {
    /// One request: its tags and whether a player waits for it.
    public struct Request: Sendable, Equatable {
        /// The request's tags: `tagPool[tags]`.
        public var tags: Range<Int>
        /// Whether a player waits for it (its time to usable counts as stall), or it is a prefetch.
        public var isUrgent: Bool
    }

    /// An anticipation hint the game gives: the tags it expects to ask for soon, and how likely it
    /// thinks that is (``ODRRuntime/ResourceManager/anticipate(tags:likelihood:)`` in the runtime).
    public struct Hint: Sendable, Equatable {
        /// The hinted tags: `tagPool[tags]`.
        public var tags: Range<Int>
        /// The likelihood the game gives it, in 0...1.
        public var likelihood: Double
        /// Whether the hint names what the game asks for next (the simulator's knowledge, for
        /// reports; no policy reads it).
        public var isRight: Bool
    }

    /// What happens at one instant.
    public enum Action: Sendable, Equatable {
        /// Request number `request` begins.
        case begin(request: Int32)
        /// Request number `request` ends.
        case end(request: Int32)
        /// Other apps now use this many bytes of the disk.
        case otherApps(bytes: Int64)
        /// The tags `tagPool[tags]` get preservation priority `priority`.
        case preservationPriority(tags: Range<Int>, priority: Double)
        /// Hint number `hint` begins; only policies that take hints (`hinted`) read it.
        case hint(Int32)
        /// Hint number `hint` ends: the game withdraws it.
        case endHint(Int32)
    }

    /// One timed action.
    public struct Event: Sendable, Equatable {
        /// Seconds since the start.
        public var time: Double
        public var action: Action
    }

    /// The catalog the requests refer to.
    public let catalog: SimulatedCatalog
    /// All events but hints, by time.
    public let events: [Event]
    /// The hints' beginnings and ends (``Action/hint(_:)``, ``Action/endHint(_:)``), by time: a
    /// timeline of their own, so that policies that take no hints do not walk them. At equal times
    /// they come after ``events``.
    public let hintEvents: [Event]
    /// All requests, by number.
    public let requests: [Request]
    /// All hints, by number.
    public let hints: [Hint]
    /// The tags of every request, one after the other.
    public let tagPool: [TagIndex]
    /// The periods when the network is unreachable, by start, not overlapping.
    public let offlineWindows: [Range<Double>]
    /// The bytes other apps use at the start.
    public let initialOtherAppsBytes: Int64
    /// The time of the last event (or the planned length, if longer).
    public let duration: Double

    init(
        catalog: SimulatedCatalog, events: [Event], requests: [Request], hints: [Hint] = [], hintEvents: [Event] = [],
        tagPool: [TagIndex], offlineWindows: [Range<Double>], initialOtherAppsBytes: Int64, duration: Double
    ) {
        self.catalog = catalog
        self.events = events
        self.hintEvents = hintEvents
        self.requests = requests
        self.hints = hints
        self.tagPool = tagPool
        self.offlineWindows = offlineWindows
        self.initialOtherAppsBytes = initialOtherAppsBytes
        self.duration = max(duration, events.last?.time ?? 0, hintEvents.last?.time ?? 0)
    }

    /// The same requests with every tag at preservation priority `priority` and no priority
    /// changes: the workload without the developer's hints, to see what a policy does without them.
    ///
    /// The requests do not change (a workload that favours hubs still does), only what the policies
    /// are told.
    public func withEqualPriorities(_ priority: Double = 0.5) -> SimulationScript {
        SimulationScript(
            catalog: catalog.withEqualPriorities(priority),
            events: events.filter { if case .preservationPriority = $0.action { false } else { true } },
            requests: requests, hints: hints, hintEvents: hintEvents, tagPool: tagPool, offlineWindows: offlineWindows,
            initialOtherAppsBytes: initialOtherAppsBytes, duration: duration)
    }

    /// The tags of hint number `hint`.
    public func tags(ofHint hint: Int) -> ArraySlice<TagIndex> { tagPool[hints[hint].tags] }

    /// The tags of request number `request`.
    public func tags(of request: Int) -> ArraySlice<TagIndex> { tagPool[requests[request].tags] }

    /// The number of pack accesses request `request` makes: one per pack of each of its tags.
    func accessCount(of request: Int) -> Int {
        tags(of: request).reduce(0) { $0 + catalog.ledgerCatalog.packs(of: $1).count }
    }

    /// Calls `body` for every pack access of every request, in the order the simulator makes them:
    /// requests in the order they begin, their tags in order, each tag's packs in order. The first
    /// argument is the number of the beginning (0 for the first request to begin).
    func forEachPackAccess(_ body: (_ beginning: Int, _ pack: PackIndex) -> Void) {
        var beginning = 0
        for event in events {
            guard case .begin(let request) = event.action else { continue }
            for tag in tags(of: Int(request)) {
                for pack in catalog.ledgerCatalog.packs(of: tag) { body(beginning, pack) }
            }
            beginning += 1
        }
    }
}
