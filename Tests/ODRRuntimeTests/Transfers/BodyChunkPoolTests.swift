import Foundation
@testable import ODRRuntime
import Testing

/// The buffers a transfer's body bytes wait in (issue 44): reused from one chunk to the next, and
/// never while a `Data` handed to a sink still refers to one.
struct BodyChunkPoolTests {
    @Test func aBufferComesBackOnlyOnceTheLastDataReferringToItIsGone() {
        let pool = BodyChunkPool(chunkBytes: 4096, keep: 2)
        let buffer = pool.take()
        buffer.initializeMemory(as: UInt8.self, repeating: 7, count: 4096)
        var kept: Data?
        do {
            let chunk = pool.data(buffer, count: 1000)
            kept = chunk
            #expect(chunk.count == 1000)
        }
        // The sink still holds a copy: the buffer is not the pool's to hand out.
        #expect(pool.spareCount == 0)
        #expect(kept == Data(repeating: 7, count: 1000))
        kept = nil
        #expect(pool.spareCount == 1)
        // And the next chunk reuses it rather than allocating.
        #expect(pool.take() == buffer)
        #expect(pool.spareCount == 0)
    }

    @Test func atMostKeepBuffersWaitForReuse() {
        let pool = BodyChunkPool(chunkBytes: 1024, keep: 2)
        let buffers = (0..<5).map { _ in pool.take() }
        #expect(Set(buffers).count == 5)
        for buffer in buffers { pool.give(buffer) }
        #expect(pool.spareCount == 2)
    }

    @Test func anEmptyChunkGivesItsBufferBackAtOnce() {
        let pool = BodyChunkPool(chunkBytes: 1024, keep: 2)
        let chunk = pool.data(pool.take(), count: 0)
        #expect(chunk.isEmpty)
        #expect(pool.spareCount == 1)
    }
}
