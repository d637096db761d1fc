import ODRFormat
import ODRRuntime

/// Generates a catalog: tags laid out on a line (levels, places) or a grid (regions), each with a few
/// packs of its own, and packs shared between neighbouring tags, with sizes drawn from distributions.
///
/// ```swift
/// var generator = CatalogGenerator(tagCount: 100, layout: .line, tagPrefix: "level")
/// generator.packSize = .logNormal(median: 120 << 20, sigma: 0.7)
/// let catalog = generator.generate(seed: 1)
/// ```
public struct CatalogGenerator: Sendable {
    /// Which tags are neighbours.
    public enum Layout: Sendable, Equatable {
        /// Tag `i` neighbours `i + 1`.
        case line
        /// Tags fill rows of `columns`; each neighbours the tags to its right and below.
        case grid(columns: Int)
    }

    public var tagCount: Int
    public var layout: Layout
    /// Tag names are `<prefix>-0001` on a line and `<prefix>-<column>-<row>` on a grid.
    public var tagPrefix: String
    /// Sizes of each tag's own packs.
    public var packSize: SizeDistribution = .logNormal(median: 48 << 20, sigma: 0.8)
    /// How many packs of its own each tag has.
    public var packsPerTag: ClosedRange<Int> = 1 ... 3
    /// Sizes of packs shared by two neighbours.
    public var sharedPackSize: SizeDistribution = .logNormal(median: 24 << 20, sigma: 0.8)
    /// The chance that two neighbours share a pack.
    public var shareProbability: Double = 0.5
    /// Download bytes as a fraction of installed bytes (packs are compressed archives).
    public var downloadRatio: Double = 0.7
    /// One tag in `n` is a hub (a boss level, a town, a top sight) and gets the high preservation
    /// priority: every `n`-th tag on a line; on a grid, one in `n` of each row, shifted from row to
    /// row so that hubs are scattered over the map rather than lined up in columns. The workloads
    /// return to hubs more often than to other tags, which is what the priority tells the runtime.
    public var highPriorityEvery: Int = 10
    /// The priority of hub tags and of the others.
    public var priorities: (high: Double, normal: Double) = (0.8, 0.4)

    public init(tagCount: Int, layout: Layout, tagPrefix: String) {
        self.tagCount = tagCount
        self.layout = layout
        self.tagPrefix = tagPrefix
    }

    /// The catalog for `seed`; the same seed gives the same catalog.
    public func generate(seed: UInt64) -> SimulatedCatalog {
        var random = SimulationRandom(seed: seed, stream: "catalog")
        let tags = (0 ..< tagCount).map { i in
            SimulatedCatalog.Tag(
                name: name(ofTag: i),
                preservationPriority: isHub(i) ? priorities.high : priorities.normal)
        }
        var packs: [SimulatedCatalog.Pack] = []
        func addPack(_ tags: [TagIndex], _ size: SizeDistribution) {
            let bytes = size.sample(using: &random)
            let download = max(1, Int64((Double(bytes) * downloadRatio).rounded()))
            packs.append(.init(id: "pack-\(packs.count + 1)", bytes: bytes, downloadBytes: download, tags: tags))
        }
        for i in 0 ..< tagCount {
            let own = packsPerTag.lowerBound + Int(random.next() % UInt64(packsPerTag.count))
            for _ in 0 ..< own { addPack([TagIndex(i)], packSize) }
            for neighbour in neighbours(of: i) where random.chance(shareProbability) {
                addPack([TagIndex(i), TagIndex(neighbour)], sharedPackSize)
            }
        }
        // Only names and sizes are generated, so the catalog is valid by construction.
        do {
            return try SimulatedCatalog(name: "generated \(tagPrefix) x\(tagCount)", tags: tags, packs: packs)
        } catch {
            preconditionFailure("generated catalog is invalid: \(error)")
        }
    }

    /// Whether tag `i` is a hub (see ``highPriorityEvery``).
    public func isHub(_ i: Int) -> Bool {
        guard highPriorityEvery > 0 else { return false }
        switch layout {
        case .line:
            return i % highPriorityEvery == 0
        case .grid(let columns):
            let x = i % columns, y = i / columns
            return (x + 3 * y) % highPriorityEvery == 0
        }
    }

    /// The name of tag `i`.
    public func name(ofTag i: Int) -> String {
        switch layout {
        case .line:
            return "\(tagPrefix)-\(Self.padded(i + 1, width: max(4, String(tagCount).count)))"
        case .grid(let columns):
            let width = String(max(columns, tagCount / max(columns, 1))).count
            return "\(tagPrefix)-\(Self.padded(i % columns, width: width))-\(Self.padded(i / columns, width: width))"
        }
    }

    /// The neighbours of tag `i` that come after it (so each pair is considered once).
    private func neighbours(of i: Int) -> [Int] {
        switch layout {
        case .line:
            return i + 1 < tagCount ? [i + 1] : []
        case .grid(let columns):
            var result: [Int] = []
            if (i + 1) % columns != 0, i + 1 < tagCount { result.append(i + 1) }
            if i + columns < tagCount { result.append(i + columns) }
            return result
        }
    }

    private static func padded(_ n: Int, width: Int) -> String {
        let digits = String(n)
        return String(repeating: "0", count: max(0, width - digits.count)) + digits
    }
}
