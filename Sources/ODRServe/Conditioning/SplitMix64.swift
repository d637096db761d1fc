/// A small, fast generator whose whole output follows from its seed, so `--seed` replays a run.
struct SplitMix64: RandomNumberGenerator {
    private var state: UInt64

    init(seed: UInt64) {
        state = seed
    }

    /// A generator for one request, mixed from the run's seed and what identifies the request.
    init(seed: UInt64, key: String, occurrence: UInt64) {
        // FNV-1a, not `Hasher`: Swift randomizes `Hasher` per process, which would defeat `--seed`.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        state = seed ^ hash ^ (occurrence &* 0x9e37_79b9_7f4a_7c15)
        _ = next()
    }

    mutating func next() -> UInt64 {
        state &+= 0x9e37_79b9_7f4a_7c15
        var z = state
        z = (z ^ (z >> 30)) &* 0xbf58_476d_1ce4_e5b9
        z = (z ^ (z >> 27)) &* 0x94d0_49bb_1331_11eb
        return z ^ (z >> 31)
    }

    /// Whether an event of probability `p` happens; always draws, so later draws do not depend on `p`.
    mutating func happens(withProbability p: Double) -> Bool {
        let draw = Double(next() >> 11) / Double(1 << 53)
        return draw < p
    }
}
