#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Something that downloads: the libcurl ``TransferEngine`` in production, a stand-in in tests.
///
/// ```swift
/// let transport: any Transport = TransferEngine()
/// let handle = transport.transfer(TransferRequest(url: url), into: FileSink(url: destination))
/// let result = try await handle.result()
/// ```
public protocol Transport: Sendable {
    /// Queues a download into `sink` and returns at once; the handle controls and awaits it.
    func transfer(_ request: TransferRequest, into sink: any TransferSink) -> any TransferHandle
}

extension Transport {
    /// Downloads into `sink` and returns when it is done; cancelling the task cancels the transfer.
    ///
    /// - Throws: ``ResourceError``.
    public func download(_ request: TransferRequest, into sink: any TransferSink) async throws(ResourceError) -> TransferResult {
        let handle = transfer(request, into: sink)
        let result = await withTaskCancellationHandler {
            await handle.outcome()
        } onCancel: {
            handle.cancel()
        }
        return try result.get()
    }
}

/// Controls one queued or running transfer. All methods are safe from any thread or task.
public protocol TransferHandle: AnyObject, Sendable {
    /// The request's URL.
    var url: URL { get }
    /// The current priority.
    var priority: TransferPriority { get }
    /// The latest progress.
    var progress: TransferProgress { get }

    /// Moves a queued transfer in the queue; for a running one, urgency pauses or resumes others.
    func setPriority(_ priority: TransferPriority)
    /// Stops receiving bytes; a running transfer keeps its connection and its slot.
    func pause()
    /// Continues after ``pause()``.
    func resume()
    /// Stops the transfer and frees its slot at once; ``result()`` fails with
    /// ``ResourceError/Code/cancelled`` as soon as the sink returns from the call it is in.
    func cancel()
    /// Waits for the end of the transfer.
    func outcome() async -> Result<TransferResult, ResourceError>
}

extension TransferHandle {
    /// Waits for the end of the transfer and returns its result.
    ///
    /// - Throws: ``ResourceError``; `cancelled` after ``cancel()``.
    public func result() async throws(ResourceError) -> TransferResult {
        try await outcome().get()
    }
}
