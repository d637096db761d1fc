import ODRRuntime

/// The usage patterns `odrsim` generates: the three of tag-based asset packs.
public enum Workload: String, CaseIterable, Sendable, Codable {
    /// Linear progression with prefetching (``LevelsWorkload``).
    case levels
    /// A player on a grid of regions holding the neighbourhood (``OpenWorldWorkload``).
    case openworld
    /// Random access with Zipf popularity (``TravelWorkload``).
    case travel

    /// The catalog generator that suits this workload, with `tagCount` tags (a default when `nil`).
    public func catalogGenerator(tagCount: Int? = nil) -> CatalogGenerator {
        switch self {
        case .levels:
            var generator = CatalogGenerator(tagCount: tagCount ?? 100, layout: .line, tagPrefix: "level")
            generator.packSize = .logNormal(median: 80 << 20, sigma: 0.6)
            return generator
        case .openworld:
            let count = tagCount ?? 400
            let columns = max(1, Int(Double(count).squareRoot().rounded(.up)))
            var generator = CatalogGenerator(tagCount: count, layout: .grid(columns: columns), tagPrefix: "region")
            generator.packSize = .logNormal(median: 30 << 20, sigma: 0.7)
            generator.shareProbability = 0.6
            // Towns: one region in 25, scattered over the map.
            generator.highPriorityEvery = 25
            return generator
        case .travel:
            // A guide: maps, photos and audio of one place are a few megabytes, not a level's worth.
            var generator = CatalogGenerator(tagCount: tagCount ?? 1000, layout: .line, tagPrefix: "place")
            generator.packSize = .logNormal(median: 6 << 20, sigma: 0.9)
            generator.sharedPackSize = .logNormal(median: 3 << 20, sigma: 0.9)
            return generator
        }
    }

    /// The likelihood the game gives its hints: a campaign's next level is nearly certain, the
    /// region a player heads into less so, a guide's next destination a guess.
    public var hintLikelihood: Double {
        switch self {
        case .levels: 0.9
        case .openworld: 0.6
        case .travel: 0.5
        }
    }

    /// The events of `days` of this workload on `catalog` and `device`; the same seed gives the same
    /// script.
    ///
    /// - Parameters:
    ///   - maxRequests: stop adding requests after this many.
    ///   - hintAccuracy: the chance that each tag a hint names is right (see
    ///     ``SimulationScript/hints``); the requests do not depend on it.
    ///   - wrongHints: what a wrong hint names: a plausible alternative (the default) or any tag.
    public func script(
        catalog: SimulatedCatalog, device: DeviceSettings, days: Double, seed: UInt64, maxRequests: Int = .max,
        hintAccuracy: Double = 0.7, wrongHints: WrongHints = .neighbour
    ) -> SimulationScript {
        var builder = ScriptBuilder(catalog: catalog)
        var deviceRandom = SimulationRandom(seed: seed, stream: "device")
        builder.addDeviceActivity(device, days: days, random: &deviceRandom)
        var random = SimulationRandom(seed: seed, stream: rawValue)
        switch self {
        case .levels:
            LevelsWorkload().generate(into: &builder, days: days, maxRequests: maxRequests, random: &random)
        case .openworld:
            let columns = max(1, Int(Double(catalog.tags.count).squareRoot().rounded(.up)))
            OpenWorldWorkload(columns: columns)
                .generate(into: &builder, days: days, maxRequests: maxRequests, random: &random)
        case .travel:
            TravelWorkload().generate(into: &builder, days: days, maxRequests: maxRequests, random: &random)
        }
        var hintRandom = SimulationRandom(seed: seed, stream: "hints")
        let tagCount = catalog.tags.count
        let columns = max(1, Int(Double(tagCount).squareRoot().rounded(.up)))
        let hubs = catalog.hubTags.map(\.index)
        builder.addNextRequestHints(likelihood: hintLikelihood, accuracy: hintAccuracy, wrong: wrongHints, random: &hintRandom) {
            right, here, frontier, random in
            self.alternative(to: right.index, here: here.index, frontier: frontier, tagCount: tagCount, columns: columns,
                             hubs: hubs, random: &random).map { TagIndex($0) }
        }
        return builder.build(duration: days * 86_400)
    }

    /// The tag a wrong hint names instead of `right` under ``WrongHints/neighbour``: the choice the
    /// player could have made at `here` and did not, drawn as the workload draws that choice; `nil`
    /// when there is none (a uniform draw then).
    func alternative(to right: Int, here: Int, frontier: Int, tagCount: Int, columns: Int, hubs: [Int],
                     random: inout SimulationRandom) -> Int? {
        func pick(_ candidates: [Int]) -> Int? {
            let valid = candidates.filter { $0 != right && $0 >= 0 && $0 < tagCount }
            return valid.isEmpty ? nil : valid[Int(random.next() % UInt64(valid.count))]
        }
        switch self {
        case .levels:
            // The player went on to a new level: the game hinted a replay, drawn as the workload
            // draws replays (half of them a finished hub level, the rest any finished level).
            // The player replayed: the game hinted the next new level.
            if right > frontier {
                let workload = LevelsWorkload()
                let finishedHubs = hubs.filter { $0 < right }
                if !finishedHubs.isEmpty, random.chance(workload.hubReplayShare), let hub = pick(finishedHubs) { return hub }
                return pick(Array(0 ..< right))
            }
            return pick([frontier + 1]) ?? pick(Array(0 ... max(0, frontier)))
        case .openworld:
            // Another region of the eight around the player's.
            let (row, column) = (here / columns, here % columns)
            var around: [Int] = []
            for dy in -1 ... 1 {
                for dx in -1 ... 1 where dx != 0 || dy != 0 {
                    let (r, c) = (row + dy, column + dx)
                    if r >= 0, c >= 0, c < columns { around.append(r * columns + c) }
                }
            }
            return pick(around)
        case .travel:
            // The place next door on the other side (the workload's nearby step is one place either
            // way, wrapping), or the one next door when the user jumped elsewhere.
            return pick([(here + 1) % tagCount, (here + tagCount - 1) % tagCount])
        }
    }
}
