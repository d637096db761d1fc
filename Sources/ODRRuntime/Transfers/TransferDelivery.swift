#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif
import ODRFormat

/// Hands a transfer's bytes to its sink, verifies size and hash, and ends the transfer.
///
/// Runs as one task per transfer, so a slow sink delays only its own transfer (which the engine then
/// pauses) and never the loop thread. `file://` URLs are read here directly, chunk by chunk at the
/// sink's pace: curl's `file://` support reads a whole file in one go and cannot pause. For the same
/// reason a byte range of a `file://` URL is read here (from its offset) rather than with `CURLOPT_RANGE`.
struct TransferDelivery {
    let operation: TransferOperation

    private var request: TransferRequest { operation.request }
    private var sink: any TransferSink { operation.sink }

    /// What the sink holds so far.
    private struct Body {
        var hasher: StreamingSHA256?
        var held: Int64 = 0
        var totalBytes: Int64?
    }

    func run() async {
        var body = Body(hasher: request.expectedSHA256 == nil ? nil : StreamingSHA256(), totalBytes: request.expectedSize)
        do {
            if request.url.isFileURL {
                try await readLocalFile(into: &body)
            } else {
                try await deliverNetworkEvents(into: &body)
            }
        } catch {
            let failure = (error as? ResourceError)
                ?? ResourceError(.storageFailure, "The downloaded bytes could not be stored: \(error). Check free space and permissions.",
                                 url: request.url, cause: SinkError(underlying: "\(error)"))
            request.failedAfterReceiving?(request.url.isFileURL ? body.held : operation.networkBytes)
            await sink.fail(failure)
            operation.resolve(.failure(failure))
        }
    }

    private func deliverNetworkEvents(into body: inout Body) async throws {
        while true {
            guard let events = await operation.nextEvents() else { throw cancelled }
            for event in events {
                if operation.isStopped { throw cancelled }
                switch event {
                case .begin(let head):
                    try await begin(head, body: &body)
                case .data(let bytes):
                    try await write(bytes, body: &body)
                case .finished(let completion):
                    try await finish(body: body, completion)
                    return
                case .notModified(let completion):
                    operation.resolve(.success(TransferResult(
                        outcome: .notModified, statusCode: completion.statusCode, bytes: 0,
                        validators: completion.validators, attempts: completion.attempts, servedBy: completion.servedBy)))
                    return
                case .failed(let error):
                    throw error
                case .retrying(let retry):
                    await sink.retrying(retry)
                case .originSwitched(let change):
                    request.originSwitched?(change)
                }
            }
        }
    }

    private func readLocalFile(into body: inout Body) async throws {
        let path = request.url.path
        let descriptor = open(path, O_RDONLY | O_CLOEXEC)
        guard descriptor >= 0 else {
            let reason = String(cString: strerror(errno))
            let code: ResourceError.Code = errno == ENOENT || errno == ENOTDIR ? .resourceUnavailable
                : errno == EACCES ? .accessDenied : .storageFailure
            throw ResourceError(code, "Could not open \(path) (\(reason)). Check that the catalog and its files were published together.",
                                url: request.url, cause: SinkError(underlying: reason))
        }
        defer { close(descriptor) }
        var status = stat()
        let size: Int64? = fstat(descriptor, &status) == 0 ? Int64(status.st_size) : nil
        // Bytes still to read of a byte range; `nil` reads to the end of the file.
        var remaining: Int64?
        if let range = request.byteRange {
            if let problem = request.byteRangeProblem { throw problem }
            if let size, range.upperBound > size { throw rangePastEnd(range, fileSize: size) }
            guard lseek(descriptor, off_t(range.lowerBound), SEEK_SET) >= 0 else {
                throw ResourceError(.storageFailure, "Could not seek in \(path) (\(String(cString: strerror(errno)))).", url: request.url)
            }
            remaining = range.upperBound - range.lowerBound
        }
        try await begin(TransferResponseHead(offset: 0, totalBytes: remaining ?? size, statusCode: 0, validators: .init()),
                        body: &body)
        let chunkSize = 1 << 20
        while remaining.map({ $0 > 0 }) ?? true {
            guard await operation.waitWhilePaused() else { throw cancelled }
            let wanted = remaining.map { Int(min(Int64(chunkSize), $0)) } ?? chunkSize
            var chunk = Data(count: wanted)
            let count = chunk.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, wanted) }
            if count < 0, errno == EINTR { continue }
            guard count >= 0 else {
                throw ResourceError(.storageFailure, "Could not read \(path) (\(String(cString: strerror(errno)))).", url: request.url)
            }
            if count == 0 {
                // The file shrank while it was read: the range's end is gone.
                if let range = request.byteRange, remaining != nil {
                    throw rangePastEnd(range, fileSize: range.lowerBound + body.held)
                }
                break
            }
            chunk.count = count
            remaining? -= Int64(count)
            try await write(chunk, body: &body)
        }
        try await finish(body: body, TransferCompletion(statusCode: 0, validators: .init(), attempts: 1, resumedBytes: 0,
                                                        receivedBytes: body.held, receivedFrom: [request.url], servedBy: request.url))
    }

    // MARK: Steps shared by both sources

    private func begin(_ head: TransferResponseHead, body: inout Body) async throws {
        if head.offset == 0 {
            if body.hasher != nil { body.hasher = StreamingSHA256() }
        } else if body.held == 0, body.hasher != nil {
            // Bytes from an earlier process: the digest must cover them too.
            var hasher = StreamingSHA256()
            try await sink.readHeldBytes(count: head.offset) { hasher.update($0) }
            body.hasher = hasher
        }
        body.held = head.offset
        if body.totalBytes == nil { body.totalBytes = head.totalBytes }
        try await sink.begin(head)
        operation.updateProgress(TransferProgress(receivedBytes: body.held, expectedBytes: body.totalBytes))
    }

    private func write(_ bytes: Data, body: inout Body) async throws {
        if body.hasher != nil { bytes.withUnsafeBytes { body.hasher?.update($0) } }
        try await sink.write(bytes)
        body.held += Int64(bytes.count)
        operation.consumed(bytes.count, receivedBytes: body.held, expectedBytes: body.totalBytes)
        if let expected = request.expectedSize, body.held > expected {
            throw sizeMismatch(received: body.held, expected: expected, atLeast: true)
        }
    }

    private func finish(body: Body, _ completion: TransferCompletion) async throws {
        let digest = body.hasher?.finalize()
        if let expected = request.expectedSize, body.held != expected {
            throw sizeMismatch(received: body.held, expected: expected, atLeast: false)
        }
        if let expected = request.expectedSHA256, let digest, digest != expected.lowercased() {
            throw ResourceError(.integrity,
                                "The download's SHA-256 is \(digest), not the expected \(expected); the bytes were discarded. The file on the server is corrupt or does not match the catalog.",
                                url: request.url)
        }
        try await sink.finish()
        operation.resolve(.success(TransferResult(
            outcome: .downloaded, statusCode: completion.statusCode, bytes: body.held, resumedBytes: completion.resumedBytes,
            receivedBytes: completion.receivedBytes, receivedFrom: completion.receivedFrom, sha256: digest,
            validators: completion.validators, attempts: completion.attempts, peakBufferedBytes: operation.peakBufferedBytes,
            servedBy: completion.servedBy)))
    }

    private var cancelled: ResourceError {
        ResourceError(.cancelled, "The transfer was cancelled.", url: request.url)
    }

    private func rangePastEnd(_ range: Range<Int64>, fileSize: Int64) -> ResourceError {
        ResourceError(.rangeNotSupported,
                      "The byte range \(range.lowerBound)..<\(range.upperBound) lies past the end of \(request.url.path), which has \(fileSize) bytes. Refresh the catalog that planned the range.",
                      url: request.url)
    }

    private func sizeMismatch(received: Int64, expected: Int64, atLeast: Bool) -> ResourceError {
        ResourceError(.integrity,
                      "The download has \(atLeast ? "more than " : "")\(received) bytes, not the expected \(expected); the bytes were discarded. The file on the server does not match the catalog.",
                      url: request.url)
    }
}

/// A sink's own error, in words, when it was not a ``ResourceError``.
struct SinkError: Error, CustomStringConvertible, Sendable {
    var underlying: String
    var description: String { underlying }
}
