import Foundation
@testable import ODRFormat
import ODRTestSupport
import Testing

/// A deflated entry's SHA-256 computed on a thread of its own (issue 44): the digest is the one
/// computed in one pass, whatever the sizes of the pieces, with the caller reusing its buffer at
/// once; one hasher serves entry after entry, and may continue from a held state.
struct BackgroundSHA256Tests {
    /// Feeds `data` in pieces of the given sizes (cycled), overwriting the caller's buffer after
    /// each hand-over, as an inflater's scratch buffer is.
    static func feed(_ data: Data, to hasher: BackgroundSHA256, pieces sizes: [Int]) {
        var scratch = [UInt8](repeating: 0, count: (sizes.max() ?? 1) + 1)
        var offset = 0
        var turn = 0
        while offset < data.count {
            let count = min(sizes[turn % sizes.count], data.count - offset)
            turn += 1
            scratch.withUnsafeMutableBytes { buffer in
                data.copyBytes(to: buffer.bindMemory(to: UInt8.self), from: (data.startIndex + offset)..<(data.startIndex + offset + count))
                hasher.update(copying: UnsafeRawBufferPointer(rebasing: buffer[..<count]))
                // The hasher copied the piece: what the caller writes next must not reach the digest.
                for index in 0..<count { buffer[index] = 0xA5 }
            }
            offset += count
        }
    }

    @Test(arguments: [[1], [4_095, 4_096, 4_097], [0, 100_000, 3], [12_345]])
    func theDigestIsTheOnePassOneWhateverThePieces(sizes: [Int]) {
        // Small buffers, two of them: most pieces wait for a buffer, and long ones are split.
        let hasher = BackgroundSHA256(pieceBytes: 4_096, pieces: 2)
        let data = deterministicBytes(count: 300_001, seed: 44)
        hasher.start(from: StreamingSHA256())
        Self.feed(data, to: hasher, pieces: sizes.map { max(1, $0) })
        #expect(hasher.result().finalize() == ContentHash.sha256Hex(of: data))
    }

    @Test func oneHasherServesEntryAfterEntryAndContinuesAHeldState() {
        let hasher = BackgroundSHA256(pieceBytes: 8_192, pieces: 3)
        for index in 0..<20 {
            let data = deterministicBytes(count: 1_000 * index + 17, seed: UInt64(index))
            hasher.start(from: StreamingSHA256())
            Self.feed(data, to: hasher, pieces: [5_000])
            #expect(hasher.result().finalize() == ContentHash.sha256Hex(of: data), "entry \(index)")
        }
        // A state after the bytes a file already held, then the rest.
        let whole = deterministicBytes(count: 50_000, seed: 7)
        var held = StreamingSHA256()
        whole.prefix(12_000).withUnsafeBytes { held.update($0) }
        hasher.start(from: held)
        Self.feed(whole.dropFirst(12_000), to: hasher, pieces: [3_000, 9_000])
        #expect(hasher.result().finalize() == ContentHash.sha256Hex(of: whole))
        // An entry with no bytes.
        hasher.start(from: StreamingSHA256())
        #expect(hasher.result().finalize() == ContentHash.sha256Hex(of: Data()))
    }

    @Test func droppingAHasherWithPiecesWaitingDoesNotDeadlockOnItsOwnQueue() {
        // The first version's blocks held the hasher: when a dropped hasher's last piece was hashed,
        // its deinit ran on its own queue and waited for that queue, which libdispatch traps. Here
        // hashers go with pieces still waiting, and the ones after them still hash right.
        let data = deterministicBytes(count: 40_000, seed: 1)
        for _ in 0..<50 {
            let dropped = BackgroundSHA256(pieceBytes: 4_096, pieces: 2)
            dropped.start(from: StreamingSHA256())
            Self.feed(data, to: dropped, pieces: [4_096])
        }
        let next = BackgroundSHA256(pieceBytes: 4_096, pieces: 2)
        next.start(from: StreamingSHA256())
        Self.feed(data, to: next, pieces: [4_096])
        #expect(next.result().finalize() == ContentHash.sha256Hex(of: data))
    }
}
