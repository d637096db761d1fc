#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// Receives a transfer's body as it arrives.
///
/// The engine calls a sink from one task at a time, in order: ``begin(_:)`` once per response that
/// carries a body, then ``write(_:)`` for each chunk, then ``finish()`` after the size and hash were
/// verified, or ``fail(_:)``. A retry first calls ``retrying(_:)``, then ``begin(_:)`` again: with the offset the sink already holds
/// (the transfer continues with a `Range` request), or with offset 0 (the server sent the whole body
/// again, so the sink must drop what it holds).
///
/// Backpressure: the engine buffers a bounded amount between the network and the sink; while `write`
/// is slow, the transfer pauses instead of buffering more. A sink may therefore inflate, hash or
/// write to disk at its own pace.
///
/// A sink that keeps bytes across attempts or processes (like ``FileSink``) reports them through
/// ``resumePoint()`` so the next transfer asks only for the rest.
public protocol TransferSink: Sendable {
    /// The bytes this sink already holds from an earlier attempt, and the validators of the response
    /// they came from; `nil` to start from the beginning. Called once when the transfer is queued.
    func resumePoint() -> TransferResumePoint?

    /// Feeds the first `count` held bytes to `consume`, in order, so the engine can include them in
    /// the SHA-256 it checks. Only called after ``resumePoint()`` returned a point and the request
    /// has an expected hash.
    func readHeldBytes(count: Int64, _ consume: (UnsafeRawBufferPointer) throws -> Void) async throws

    /// A response body starts at byte `head.offset`: keep exactly that many held bytes, drop the rest.
    func begin(_ head: TransferResponseHead) async throws

    /// The next bytes of the body.
    func write(_ bytes: Data) async throws

    /// Every byte arrived and matched the expected size and hash.
    func finish() async throws

    /// The transfer failed or was cancelled. Bytes may be kept for a later resume, except for
    /// ``ResourceError/Code/integrity`` failures, whose bytes are wrong.
    func fail(_ error: ResourceError) async

    /// An attempt failed and another one follows at `retry.nextAttempt`; ``begin(_:)`` follows when
    /// that attempt gets an answer. Nothing to undo: the sink keeps what it holds.
    func retrying(_ retry: TransferRetry) async
}

extension TransferSink {
    /// By default a sink holds nothing, so every transfer starts from the beginning.
    public func resumePoint() -> TransferResumePoint? { nil }

    /// By default a sink cannot read held bytes back, which fails with `storage-failure`.
    public func readHeldBytes(count: Int64, _ consume: (UnsafeRawBufferPointer) throws -> Void) async throws {
        throw ResourceError(.storageFailure, "This sink reported a resume point but cannot read its held bytes back.")
    }

    /// By default there is nothing to do once a body is complete.
    public func finish() async throws {}

    /// By default there is nothing to clean up after a failure.
    public func fail(_ error: ResourceError) async {}

    /// By default a retry needs no attention.
    public func retrying(_ retry: TransferRetry) async {}
}

/// Bytes a sink holds from an earlier attempt, with the validators of the response they came from.
public struct TransferResumePoint: Sendable, Hashable, Codable {
    /// How many leading bytes of the body the sink holds.
    public var offset: Int64
    /// The `ETag`/`Last-Modified` of the response those bytes came from; they guard the `Range`
    /// request with `If-Range`. Without them the download starts over.
    public var validators: TransferValidators

    /// Bytes held up to `offset`, from a response with `validators`.
    public init(offset: Int64, validators: TransferValidators) {
        self.offset = offset
        self.validators = validators
    }
}

/// The start of a response body, as a sink sees it.
public struct TransferResponseHead: Sendable, Hashable {
    /// The first byte this response carries: the sink keeps that many held bytes and drops the rest.
    /// 0 when the body starts over.
    public var offset: Int64
    /// The complete body size when the server said it (`Content-Length` or `Content-Range`).
    public var totalBytes: Int64?
    /// The HTTP status (200, 206; 0 for `file://`).
    public var statusCode: Int
    /// The response's validators, which a sink that can resume later should keep.
    public var validators: TransferValidators

    /// Describes the start of a response body.
    public init(offset: Int64, totalBytes: Int64?, statusCode: Int, validators: TransferValidators) {
        self.offset = offset
        self.totalBytes = totalBytes
        self.statusCode = statusCode
        self.validators = validators
    }
}
