import ODRFormat

extension SplitMix64 {
    /// Overwrites `bytes` with the generator's next draws: incompressible, and the same for the same seed.
    mutating func fill(_ bytes: inout [UInt8]) {
        bytes.withUnsafeMutableBytes { raw in
            var offset = 0
            while offset + 8 <= raw.count {
                raw.storeBytes(of: next(), toByteOffset: offset, as: UInt64.self)
                offset += 8
            }
            if offset < raw.count {
                withUnsafeBytes(of: next()) { tail in
                    for i in offset..<raw.count { raw[i] = tail[i - offset] }
                }
            }
        }
    }
}
