import ODRFormat

extension SplitMix64 {
    /// A generator for one request, mixed from the run's seed and what identifies the request.
    init(seed: UInt64, key: String, occurrence: UInt64) {
        // FNV-1a, not `Hasher`: Swift randomizes `Hasher` per process, which would defeat `--seed`.
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in key.utf8 {
            hash = (hash ^ UInt64(byte)) &* 0x0000_0100_0000_01b3
        }
        self.init(seed: seed ^ hash ^ (occurrence &* 0x9e37_79b9_7f4a_7c15))
        _ = next()
    }
}
