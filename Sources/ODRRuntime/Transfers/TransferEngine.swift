#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat
import Synchronization

/// Downloads over libcurl: one multi handle on one dedicated thread, a priority queue, retries,
/// resume, and backpressure towards a ``TransferSink``.
///
/// Transfers run at most ``Configuration/maximumConcurrentTransfers`` at a time, urgent first, then
/// by loading priority, then in arrival order. While an urgent transfer runs, non-urgent ones keep
/// the share ``Configuration/nonUrgentBandwidthWhileUrgent`` says: by default none (they pause and
/// none starts), or a rate limit, or no limit. Connections are reused (HTTP/2 multiplexed where the
/// server offers it), TLS is always verified, and `file://` URLs work too.
///
/// ```swift
/// let engine = try TransferEngine()
/// var request = TransferRequest(url: packURL, priority: .loading(0.7))
/// request.expectedSHA256 = pack.id
/// let result = try await engine.download(request, into: FileSink(url: stagingURL))
/// ```
///
/// Releasing the engine cancels what is still queued or running.
public final class TransferEngine: Transport {
    /// The configuration the engine was created with.
    public let configuration: Configuration
    private let inbox = TransferInbox()
    private let nextSequence = Atomic<UInt64>(0)
    private let counters = Locked(TransferStatistics())

    /// Creates an engine and starts its transfer thread.
    ///
    /// - Throws: ``ResourceError`` (`unexpectedResponse`) when libcurl cannot be initialized.
    public init(configuration: Configuration = Configuration()) throws(ResourceError) {
        self.configuration = configuration
        let loop: TransferLoop
        do {
            loop = try TransferLoop(configuration: configuration, inbox: inbox, statistics: counters)
        } catch {
            throw ResourceError(.unexpectedResponse, "libcurl could not be initialized; check the libcurl installation.",
                                cause: error)
        }
        // Ownership of the loop passes to the thread here; this initializer never touches it again.
        nonisolated(unsafe) let handOff = loop
        RuntimeThreads.start(name: "odr-transfers") { handOff.run() }
    }

    deinit {
        inbox.post(.shutdown)
    }

    /// What the engine has done to non-urgent transfers for urgent ones so far.
    public var statistics: TransferStatistics { counters.withLock { $0 } }

    /// Queues a download into `sink` and returns its handle at once.
    public func transfer(_ request: TransferRequest, into sink: any TransferSink) -> any TransferHandle {
        let sequence = nextSequence.add(1, ordering: .relaxed).newValue
        let operation = TransferOperation(sequence: sequence, request: request, sink: sink,
                                          bufferLimit: configuration.bufferLimit, inbox: inbox)
        Task { await TransferDelivery(operation: operation).run() }
        // `file://` transfers are read by their delivery task; everything else goes through curl.
        if !request.url.isFileURL { inbox.post(.add(operation)) }
        return operation
    }
}
