/// SplitMix64: a small, fast generator whose whole output follows from its seed.
///
/// The project's one seeded generator: the simulator draws its catalogs and workloads from it, the
/// development server its network faults (so `--seed` replays a run), and property tests their
/// cases (so a failure replays from the seed it prints). Each of those adds only how it derives a
/// seed. Not for anything secret.
///
/// ```swift
/// var random = SplitMix64(seed: 42)
/// let roll = Int.random(in: 1...6, using: &random)
/// if random.chance(0.25) { print("a quarter of the time, the same quarter on every machine") }
/// ```
public struct SplitMix64: RandomNumberGenerator, Sendable {
    @usableFromInline var state: UInt64

    @inlinable
    public init(seed: UInt64) { state = seed }

    // Inlinable: the simulator draws millions of numbers across the module boundary.
    @inlinable
    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform number in [0, 1), from the top 53 bits of one draw.
    @inlinable
    public mutating func unit() -> Double {
        Double(next() >> 11) * 0x1.0p-53
    }

    /// True with probability `p`; always draws once, so later draws do not depend on `p`.
    @inlinable
    public mutating func chance(_ p: Double) -> Bool { unit() < p }
}
