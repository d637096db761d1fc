import ODRFormat

/// How the sizes of generated packs are drawn.
///
/// Written on the command line as `fixed:64MB`, `uniform:10MB:200MB` or `lognormal:64MB:0.8`
/// (median and shape; a shape of 0.8 gives most packs within a factor of 2.2 of the median).
public enum SizeDistribution: Sendable, Equatable, CustomStringConvertible {
    /// Every pack has this size.
    case fixed(Int64)
    /// Sizes spread evenly between the bounds.
    case uniform(Int64, Int64)
    /// Log-normal sizes: many near the median, a long tail of large packs, like real asset packs.
    case logNormal(median: Int64, sigma: Double)

    /// The smallest pack generated, so that no pack is empty.
    static let minimumBytes: Int64 = 4096

    /// Parses `fixed:SIZE`, `uniform:MIN:MAX`, `lognormal:MEDIAN:SIGMA` or a bare size (fixed).
    public init?(parsing text: String) {
        let parts = text.split(separator: ":").map(String.init)
        switch (parts.first?.lowercased(), parts.count) {
        case ("fixed", 2):
            guard let size = ByteSize.parse(parts[1]) else { return nil }
            self = .fixed(size)
        case ("uniform", 3):
            guard let low = ByteSize.parse(parts[1]), let high = ByteSize.parse(parts[2]), low <= high else { return nil }
            self = .uniform(low, high)
        case ("lognormal", 3):
            guard let median = ByteSize.parse(parts[1]), let sigma = Double(parts[2]), sigma >= 0 else { return nil }
            self = .logNormal(median: median, sigma: sigma)
        case (_, 1):
            guard let size = ByteSize.parse(parts[0]) else { return nil }
            self = .fixed(size)
        default:
            return nil
        }
    }

    /// One size.
    public func sample(using random: inout SimulationRandom) -> Int64 {
        let bytes: Double
        switch self {
        case .fixed(let size): bytes = Double(size)
        case .uniform(let low, let high): bytes = random.uniform(Double(low) ... Double(high))
        case .logNormal(let median, let sigma): bytes = random.logNormal(median: Double(median), sigma: sigma)
        }
        return max(Self.minimumBytes, Int64(min(bytes, 0x1p50)))
    }

    public var description: String {
        switch self {
        case .fixed(let size): "fixed:\(ByteCount.format(size))"
        case .uniform(let low, let high): "uniform:\(ByteCount.format(low)):\(ByteCount.format(high))"
        case .logNormal(let median, let sigma): "lognormal:\(ByteCount.format(median)):\(sigma)"
        }
    }
}
