import ODRFormat
import ODRRuntime

/// The tags and packs a simulation plays against: generated, read from a catalog directory, or
/// carried by a trace.
public struct SimulatedCatalog: Sendable {
    /// A tag and the preservation priority it starts with.
    public struct Tag: Sendable, Equatable {
        public var name: String
        public var preservationPriority: Double

        public init(name: String, preservationPriority: Double) {
            self.name = name
            self.preservationPriority = preservationPriority
        }
    }

    /// A pack: installed and download sizes, and the tags that need it.
    public struct Pack: Sendable, Equatable {
        public var id: String
        /// Bytes on disk once installed; what purging frees and the in-use limit counts.
        public var bytes: Int64
        /// Bytes on the wire.
        public var downloadBytes: Int64
        /// The pack's tag set, by index into ``SimulatedCatalog/tags``.
        public var tags: [TagIndex]

        public init(id: String, bytes: Int64, downloadBytes: Int64, tags: [TagIndex]) {
            self.id = id
            self.bytes = bytes
            self.downloadBytes = downloadBytes
            self.tags = tags
        }
    }

    /// A name for reports: the catalog id, or how it was generated.
    public var name: String
    public let tags: [Tag]
    public let packs: [Pack]
    /// The same tags and packs as the runtime's ledger sees them.
    public let ledgerCatalog: LedgerCatalog

    /// Creates a catalog; every pack's tags must index into `tags`.
    ///
    /// - Throws: ``ResourceError`` `invalid-catalog` for repeated names, negative sizes, or sizes
    ///   whose sum is more than an `Int64` holds (the simulator adds them up).
    public init(name: String, tags: [Tag], packs: [Pack]) throws(ResourceError) {
        for (key, sizes) in [("installed", packs.lazy.map(\.bytes)), ("download", packs.lazy.map(\.downloadBytes))]
        where sizes.checkedSum() == nil {
            throw ResourceError(.invalidCatalog, "The packs of \(name) have \(key) sizes that add up to more than \(Int64.max) bytes; rebuild the catalog with odrpack.")
        }
        self.name = name
        self.tags = tags
        self.packs = packs
        ledgerCatalog = try LedgerCatalog(
            tags: tags.map(\.name),
            packs: packs.map { .init(id: $0.id, bytes: $0.bytes, tags: $0.tags.map { tags[$0.index].name }) })
    }

    /// The sum of every pack's installed bytes.
    public var totalBytes: Int64 { packs.reduce(0) { $0 + $1.bytes } }

    /// The tags the workloads treat as hubs, in catalog order: those whose preservation priority is
    /// above the lowest any tag has. A developer gives a higher priority to what players come back
    /// to (boss levels, towns, top sights), so the workloads come back to these more often; with
    /// equal priorities there are none.
    public var hubTags: [TagIndex] {
        guard let lowest = tags.map(\.preservationPriority).min() else { return [] }
        return tags.indices.filter { tags[$0].preservationPriority > lowest }.map { TagIndex($0) }
    }

    /// The same catalog with every tag at preservation priority `priority`: the developer's hints
    /// taken away.
    public func withEqualPriorities(_ priority: Double = 0.5) -> SimulatedCatalog {
        do {
            return try SimulatedCatalog(
                name: name, tags: tags.map { Tag(name: $0.name, preservationPriority: priority) }, packs: packs)
        } catch {
            preconditionFailure("a valid catalog with other priorities is valid: \(error)")
        }
    }

    /// The preservation priority of each pack: the highest among its tags.
    public func packPriorities(tagPriorities: [Double]) -> [Double] {
        packs.map { pack in pack.tags.lazy.map { tagPriorities[$0.index] }.max() ?? 0 }
    }
}

extension SimulatedCatalog {
    /// The catalog a trace carries.
    ///
    /// - Throws: ``ResourceError`` `invalid-tag` when a pack names a tag the trace does not list.
    public init(trace: TraceCatalog, name: String = "trace") throws(ResourceError) {
        var index: [String: TagIndex] = [:]
        for (i, tag) in trace.tags.enumerated() { index[tag.name] = TagIndex(i) }
        var packs: [Pack] = []
        for pack in trace.packs {
            var tags: [TagIndex] = []
            for name in pack.tags {
                guard let tag = index[name] else {
                    throw ResourceError(.invalidTag, "The trace's pack '\(pack.id)' names the tag '\(name)', which its catalog line does not list.")
                }
                tags.append(tag)
            }
            packs.append(Pack(id: pack.id, bytes: pack.bytes, downloadBytes: pack.downloadBytes, tags: tags))
        }
        try self.init(
            name: name, tags: trace.tags.map { Tag(name: $0.name, preservationPriority: $0.preservationPriority) },
            packs: packs)
    }

    /// This catalog as a trace's first line describes it.
    public var traceCatalog: TraceCatalog {
        TraceCatalog(
            tags: tags.map { .init(name: $0.name, preservationPriority: $0.preservationPriority) },
            packs: packs.map {
                .init(id: $0.id, bytes: $0.bytes, downloadBytes: $0.downloadBytes, tags: $0.tags.map { tags[$0.index].name })
            })
    }
}
