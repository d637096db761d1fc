import Foundation
@testable import ODRFormat
import Testing

/// The checksum that guards the compact manifest.
struct WordChecksumTests {
    static func checksum(_ bytes: [UInt8]) -> UInt64 { bytes.withUnsafeBytes { WordChecksum.of($0) } }

    /// Any change confined to one 8-byte word changes the checksum, in any lane and in the tail.
    @Test(arguments: [0, 7, 8, 31, 32, 33, 100, 1_000])
    func everyChangedByteChangesIt(length: Int) {
        var generator = SystemRandomNumberGenerator()
        let bytes = (0..<length).map { _ in UInt8.random(in: 0...255, using: &generator) }
        let original = Self.checksum(bytes)
        for position in bytes.indices {
            for flip: UInt8 in [0x01, 0x80, 0xFF] {
                var changed = bytes
                changed[position] ^= flip
                #expect(Self.checksum(changed) != original, "byte \(position) ^ \(flip) of \(length)")
            }
        }
    }

    /// Zeros added at the end change it, so a padded tail is not mistaken for a shorter one.
    @Test func trailingZerosChangeIt() {
        var seen = Set<UInt64>()
        for length in 0...40 { seen.insert(Self.checksum([UInt8](repeating: 0, count: length))) }
        #expect(seen.count == 41)
    }

    /// Swapping two words changes it: the lanes are not simply added up.
    @Test func swappedWordsChangeIt() {
        let a = (0..<64).map { UInt8($0) }
        var b = a
        for i in 0..<8 { b.swapAt(i, 32 + i) }
        #expect(Self.checksum(a) != Self.checksum(b))
    }
}
