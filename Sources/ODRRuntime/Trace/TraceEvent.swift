/// One line of a request trace: what a game asked a resource manager for, and when.
///
/// A trace is a JSON Lines file (one ``TraceEvent`` per line, see ``TraceCodec``). It usually starts
/// with a ``catalog(_:)`` line describing the tags and packs, so it can be replayed without the
/// catalog directory, followed by timestamped ``begin(time:request:tags:priority:)`` and
/// ``end(time:request:)`` lines, and the game's anticipation hints as
/// ``hint(time:hint:tags:likelihood:)`` and ``endHint(time:hint:)`` lines.
/// ``ResourceManager/startRecordingTrace(to:)`` records one from a real manager; `odrsim run --trace
/// FILE` replays one under every purge policy (the `hinted` policy reads the hints).
///
/// ```json
/// {"event":"catalog","packs":[{"bytes":1048576,"downloadBytes":700000,"id":"p1","tags":["level1"]}],"tags":[{"name":"level1","preservationPriority":0.5}]}
/// {"event":"begin","priority":"urgent","request":1,"t":0,"tags":["level1"]}
/// {"event":"hint","hint":1,"likelihood":0.9,"t":0.5,"tags":["level2"]}
/// {"event":"end","request":1,"t":600}
/// {"event":"hint-end","hint":1,"t":601}
/// ```
public enum TraceEvent: Sendable, Equatable {
    /// The tags and packs the following events refer to.
    case catalog(TraceCatalog)
    /// A request began accessing `tags` at `time` (seconds since the trace started).
    case begin(time: Double, request: Int, tags: [String], priority: Priority)
    /// The request numbered `request` ended (explicitly or by deinit).
    case end(time: Double, request: Int)
    /// The app set the preservation priority of `tags`.
    case preservationPriority(time: Double, tags: [String], priority: Double)
    /// The game gave anticipation hint number `hint` (numbered by the recorder, apart from
    /// requests): `tags` will probably be requested soon, with `likelihood` in 0...1 (see
    /// ``ResourceManager/anticipate(tags:likelihood:)``).
    case hint(time: Double, hint: Int, tags: [String], likelihood: Double)
    /// Hint number `hint` ended (``ResourceHint/end()``, or its last reference went).
    case endHint(time: Double, hint: Int)

    /// How urgently a request wanted its packs.
    public enum Priority: Sendable, Equatable {
        /// A player is waiting: the time until the packs are usable is a stall.
        case urgent
        /// A loading priority in 0...1; nobody waits (a prefetch).
        case background(Double)
    }

    /// When the event happened, in seconds since the trace started; `nil` for the catalog line.
    public var time: Double? {
        switch self {
        case .catalog: nil
        case .begin(let time, _, _, _), .end(let time, _), .preservationPriority(let time, _, _),
             .hint(let time, _, _, _), .endHint(let time, _): time
        }
    }
}

/// The catalog a trace was recorded against, reduced to what replaying it needs.
public struct TraceCatalog: Sendable, Equatable, Codable {
    /// A tag and its preservation priority.
    public struct Tag: Sendable, Equatable, Codable {
        /// The tag's name.
        public var name: String
        /// Its preservation priority (0...1) when the trace was recorded.
        public var preservationPriority: Double

        /// Describes a tag.
        public init(name: String, preservationPriority: Double) {
            self.name = name
            self.preservationPriority = preservationPriority
        }
    }

    /// A pack: its sizes and its tag set.
    public struct Pack: Sendable, Equatable, Codable {
        /// The pack's id.
        public var id: String
        /// Installed bytes: what it takes on disk and counts against the in-use limit.
        public var bytes: Int64
        /// Archive bytes: what downloading it costs.
        public var downloadBytes: Int64
        /// The tags whose requests need this pack.
        public var tags: [String]

        /// Describes a pack.
        public init(id: String, bytes: Int64, downloadBytes: Int64, tags: [String]) {
            self.id = id
            self.bytes = bytes
            self.downloadBytes = downloadBytes
            self.tags = tags
        }
    }

    /// Every tag of the catalog.
    public var tags: [Tag]
    /// Every pack of the catalog.
    public var packs: [Pack]

    /// A catalog of `tags` and `packs`.
    public init(tags: [Tag], packs: [Pack]) {
        self.tags = tags
        self.packs = packs
    }
}
