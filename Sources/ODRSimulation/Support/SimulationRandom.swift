import Foundation
import ODRFormat

/// The simulator's only source of randomness: ODRFormat's seeded ``SplitMix64``, so the same seed
/// gives the same catalog, workload and numbers on every machine and every run.
public typealias SimulationRandom = SplitMix64

extension SplitMix64 {
    /// A generator for one part of the world (catalog, workload, device), independent of the others,
    /// so changing how one part draws numbers does not reshuffle the rest.
    public init(seed: UInt64, stream: String) {
        var mixed = seed
        for byte in stream.utf8 { mixed = (mixed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        self.init(seed: mixed)
    }

    /// A uniform number in `range`.
    public mutating func uniform(_ range: ClosedRange<Double>) -> Double {
        range.lowerBound + unit() * (range.upperBound - range.lowerBound)
    }

    /// A standard normal number (Box-Muller).
    public mutating func normal() -> Double {
        let u = max(unit(), .leastNonzeroMagnitude)
        return (-2 * log(u)).squareRoot() * cos(2 * .pi * unit())
    }

    /// A log-normal number with the given median and shape.
    public mutating func logNormal(median: Double, sigma: Double) -> Double {
        median * exp(sigma * normal())
    }
}
