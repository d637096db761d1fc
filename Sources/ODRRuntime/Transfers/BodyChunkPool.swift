#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The buffers one transfer's body bytes wait in between the network and the sink, reused from
/// one chunk to the next.
///
/// Each chunk of body bytes used to be a new `Data`: 4,096 allocations of 64 KiB per 256 MiB,
/// freed on the sink's thread, which kept the allocator growing and trimming its heap, so that
/// every chunk touched fresh pages (8,000 to 17,000 page faults per 256 MiB install against
/// curl's 600). A pool keeps the few buffers a transfer has in flight (its `bufferLimit` over the
/// chunk size, and one more) and hands them out again. A chunk leaves as a `Data` that does not
/// copy the buffer and gives it back when the sink lets go of it (issue 44).
final class BodyChunkPool: Sendable {
    /// Bytes per buffer.
    let chunkBytes: Int
    /// Buffers kept for reuse; more are freed when given back.
    let keep: Int
    /// Plain memory, owned by the pool while it is here; a buffer handed out belongs to its one
    /// chunk until given back.
    private let spare = Locked<[UnsafeMutableRawPointer]>([])

    init(chunkBytes: Int, keep: Int) {
        self.chunkBytes = max(1, chunkBytes)
        self.keep = max(1, keep)
    }

    deinit {
        spare.withLock { buffers in
            for buffer in buffers { buffer.deallocate() }
        }
    }

    /// A buffer of ``chunkBytes`` bytes: a kept one, or a new one.
    func take() -> UnsafeMutableRawPointer {
        let kept = spare.withLock { $0.popLast() }
        return kept ?? UnsafeMutableRawPointer.allocate(byteCount: chunkBytes, alignment: 64)
    }

    /// Takes a buffer back, for reuse or to be freed.
    func give(_ buffer: UnsafeMutableRawPointer) {
        let kept = spare.withLock { spare -> Bool in
            guard spare.count < keep else { return false }
            spare.append(buffer)
            return true
        }
        if !kept { buffer.deallocate() }
    }

    /// The first `count` bytes of `buffer` as `Data` without a copy; the buffer comes back to this
    /// pool once the last copy of that `Data` is gone.
    func data(_ buffer: UnsafeMutableRawPointer, count: Int) -> Data {
        guard count > 0 else {
            give(buffer)
            return Data()
        }
        return Data(bytesNoCopy: buffer, count: count, deallocator: .custom { [self] pointer, _ in give(pointer) })
    }

    /// How many buffers wait for reuse (what tests observe).
    var spareCount: Int { spare.withLock { $0.count } }
}

/// The body bytes being gathered into one chunk, in a buffer of a ``BodyChunkPool``.
struct FillingChunk {
    let buffer: UnsafeMutableRawPointer
    var count = 0
}
