/// A fast 64-bit checksum for detecting damaged bytes (not tampering): the compact manifest's.
///
/// It reads 8-byte words into four independent lanes, each step `rotate((lane ^ word) &* P, 31)`,
/// and folds the lanes and the length together at the end. Each step is a bijection of the lane
/// for a fixed word and of the word for a fixed lane, so changing any one word (or any bytes within
/// one word) always changes the result; other damage goes unnoticed with a chance near 2^-64. On
/// this project's machines it runs at several times the speed of zlib's CRC-32, which mattered
/// because a store checks a 10 MB manifest every time it opens.
package struct WordChecksum {
    private static let prime: UInt64 = 0x9E37_79B9_7F4A_7C15
    private static let seeds: (UInt64, UInt64, UInt64, UInt64) =
        (0x243F_6A88_85A3_08D3, 0x1319_8A2E_0370_7344, 0xA409_3822_299F_31D0, 0x082E_FA98_EC4E_6C89)

    /// The checksum of `bytes`.
    package static func of(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        var (a, b, c, d) = seeds
        let words = bytes.count / 8
        var index = 0
        @inline(__always) func step(_ lane: inout UInt64, _ word: UInt64) {
            lane = ((lane ^ word) &* prime).rotated(by: 31)
        }
        @inline(__always) func word(_ position: Int) -> UInt64 {
            UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: 8 * position, as: UInt64.self))
        }
        while index + 4 <= words {
            step(&a, word(index))
            step(&b, word(index + 1))
            step(&c, word(index + 2))
            step(&d, word(index + 3))
            index += 4
        }
        while index < words {
            step(&a, word(index))
            index += 1
        }
        // The last 0 to 7 bytes, padded with zeros; the length below tells paddings apart.
        var tail: UInt64 = 0
        for (shift, byte) in bytes[(8 * words)...].enumerated() { tail |= UInt64(byte) << UInt64(8 * shift) }
        step(&b, tail)
        var result = UInt64(bytes.count)
        for lane in [a, b, c, d] { step(&result, lane) }
        return result ^ (result >> 29)
    }
}

extension UInt64 {
    /// The bits rotated left by `count` (0 < count < 64).
    fileprivate func rotated(by count: UInt64) -> UInt64 { (self << count) | (self >> (64 - count)) }
}
