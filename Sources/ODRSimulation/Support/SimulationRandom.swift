import Foundation

/// The simulator's only source of randomness: SplitMix64, seeded, so the same seed gives the same
/// catalog, workload and numbers on every machine and every run.
public struct SimulationRandom: RandomNumberGenerator, Sendable {
    private var state: UInt64

    public init(seed: UInt64) { state = seed }

    /// A generator for one part of the world (catalog, workload, device), independent of the others,
    /// so changing how one part draws numbers does not reshuffle the rest.
    public init(seed: UInt64, stream: String) {
        var mixed = seed
        for byte in stream.utf8 { mixed = (mixed ^ UInt64(byte)) &* 0x100_0000_01B3 }
        state = mixed
    }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform number in [0, 1).
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// True with probability `p`.
    public mutating func chance(_ p: Double) -> Bool { unit() < p }

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
