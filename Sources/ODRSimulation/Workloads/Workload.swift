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
    public func script(
        catalog: SimulatedCatalog, device: DeviceSettings, days: Double, seed: UInt64, maxRequests: Int = .max,
        hintAccuracy: Double = 0.7
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
        builder.addNextRequestHints(likelihood: hintLikelihood, accuracy: hintAccuracy, random: &hintRandom)
        return builder.build(duration: days * 86_400)
    }
}
