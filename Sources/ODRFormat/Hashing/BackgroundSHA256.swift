#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch

/// A SHA-256 computed on a thread of its own while the caller goes on with the next bytes, so that
/// inflating and writing an entry on one core and hashing it on the other overlap (issue 44).
///
/// Each piece handed to ``update(copying:)`` is copied into one of ``pieces`` buffers of
/// ``pieceBytes`` bytes, which the hasher reuses: the caller may overwrite its own bytes at once
/// (an inflater's scratch buffer), and memory stays bounded whatever the entry's size. When every
/// buffer waits to be hashed, ``update(copying:)`` waits for one. Pieces are hashed in the order
/// given; ``result()`` waits for all of them. One hasher serves one entry after another:
/// ``start(from:)`` begins the next digest after the pieces already handed over.
///
/// ```swift
/// let hasher = BackgroundSHA256()
/// hasher.start(from: StreamingSHA256())
/// hasher.update(copying: inflated)       // for each piece, as it is written
/// let digest = hasher.result().finalize()
/// ```
///
/// Used by ``PackRangeReader`` for deflated entries only: there the inflater, not the network,
/// keeps one core busy. A stored entry's bytes are hashed where they arrive, as a copy and a
/// hand-off per 64 KiB cost more there than they save (docs/STORE.md).
///
/// `@unchecked Sendable`: ``Core/hash`` is read and written only by blocks on `queue`, which is
/// serial; a buffer is written only while its index is out of ``Core/free`` (guarded by its lock),
/// by one side at a time. The blocks hold the core, not the hasher, so a hasher dropped with pieces
/// waiting goes at once, and its buffers when the last block is done.
package final class BackgroundSHA256: @unchecked Sendable {
    /// The size of each buffer; a longer piece is handed over in parts of this size.
    package let pieceBytes: Int
    /// How many pieces may wait to be hashed at once.
    package let pieces: Int
    private let queue = DispatchQueue(label: "odr.entry-hash")
    private let core: Core

    private final class Core: @unchecked Sendable {
        let buffers: [UnsafeMutableRawPointer]
        /// The buffers that hold no piece, by index.
        let free: Locked<[Int]>
        /// One per free buffer.
        let slots: DispatchSemaphore
        var hash = StreamingSHA256()

        init(pieceBytes: Int, pieces: Int) {
            buffers = (0..<pieces).map { _ in UnsafeMutableRawPointer.allocate(byteCount: pieceBytes, alignment: 64) }
            free = Locked(Array(0..<pieces))
            slots = DispatchSemaphore(value: pieces)
        }

        deinit {
            for buffer in buffers { buffer.deallocate() }
        }
    }

    /// - Parameters:
    ///   - pieceBytes: bytes per buffer (at least 4 KiB); 256 KiB matches an inflater's scratch.
    ///   - pieces: buffers, so pieces waiting at once (at least 2: one hashed while one is filled).
    package init(pieceBytes: Int = 256 << 10, pieces: Int = 3) {
        self.pieceBytes = max(4 << 10, pieceBytes)
        self.pieces = max(2, pieces)
        core = Core(pieceBytes: self.pieceBytes, pieces: self.pieces)
    }

    /// Starts the next digest from `state` (an empty one, or what bytes held before hashed to),
    /// after the pieces already handed over.
    package func start(from state: StreamingSHA256) {
        queue.async { [core] in core.hash = state }
    }

    /// Adds a copy of `bytes` after the pieces already handed over; waits while every buffer holds
    /// a piece not yet hashed. `bytes` may be reused as soon as this returns.
    package func update(copying bytes: UnsafeRawBufferPointer) {
        var offset = 0
        while offset < bytes.count {
            let count = min(pieceBytes, bytes.count - offset)
            core.slots.wait()
            let index = core.free.withLock { $0.removeLast() }
            core.buffers[index].copyMemory(from: bytes.baseAddress! + offset, byteCount: count)
            queue.async { [core] in
                core.hash.update(UnsafeRawBufferPointer(start: core.buffers[index], count: count))
                core.free.withLock { $0.append(index) }
                core.slots.signal()
            }
            offset += count
        }
    }

    /// The state once every piece handed over is hashed.
    package func result() -> StreamingSHA256 {
        queue.sync { [core] in core.hash }
    }
}
