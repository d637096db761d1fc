internal import CCurl
import Foundation

/// The loop thread's bookkeeping for one transfer across its attempts.
///
/// Lives only on the transfer loop's thread; curl's callbacks reach it through an unretained pointer
/// while the loop's tables keep it alive.
final class TransferSession {
    let operation: TransferOperation
    let isFile: Bool
    /// Requests made so far.
    var attempts = 0
    /// Contiguous body bytes handed on so far (held bytes of the sink included).
    var received: Int64
    /// Validators of the response `received` came from; they guard the next `Range` request.
    var validators: TransferValidators
    /// Bytes saved by `Range` requests over all attempts.
    var resumedBytes: Int64 = 0
    /// The earliest time of the next attempt, after a failure.
    var notBefore: ContinuousClock.Instant?
    /// The caller's pause, mirrored by the loop so scanning the queue takes no locks.
    var userPaused = false

    // The current attempt.
    var easy: CurlEasy?
    var headers = ResponseHeaders()
    /// The first body byte this attempt asked for.
    var requestedOffset: Int64 = 0
    /// Whether this attempt's body goes to the sink; `nil` until the first body byte.
    var accepting: Bool?
    /// The attempt answered with an unusable `Content-Range`; start over from byte 0.
    var restartFromZero = false
    /// Whether curl has this exchange paused (by us or by the write callback).
    var curlPaused = false

    init(operation: TransferOperation) {
        self.operation = operation
        isFile = operation.request.url.isFileURL
        received = operation.initialResumePoint?.offset ?? 0
        validators = operation.initialResumePoint?.validators ?? TransferValidators()
    }

    var sequence: UInt64 { operation.sequence }

    /// Starts a new attempt: resets per-attempt state and decides where the body should start.
    func beginAttempt(with easy: CurlEasy) {
        attempts += 1
        self.easy = easy
        headers = ResponseHeaders()
        accepting = nil
        restartFromZero = false
        curlPaused = false
        requestedOffset = (!isFile && received > 0 && validators.ifRangeValue != nil) ? received : 0
    }

    /// The request headers of the current attempt.
    func requestHeaders(defaults: [String: String]) -> [String] {
        var fields = defaults
        for (name, value) in operation.request.headers { fields[name] = value }
        var lines = fields.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        if requestedOffset > 0, let guardValue = validators.ifRangeValue {
            lines.append("Range: bytes=\(requestedOffset)-")
            lines.append("If-Range: \(guardValue)")
        } else if let conditional = operation.request.conditional {
            if let tag = conditional.entityTag { lines.append("If-None-Match: \(tag)") }
            if let date = conditional.lastModified { lines.append("If-Modified-Since: \(date)") }
        }
        // Ask for the raw bytes: the hash covers the body exactly as stored.
        lines.append("Accept-Encoding: identity")
        return lines
    }

    // MARK: curl callbacks

    /// Body bytes from curl's write callback; returns what curl expects back.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if accepting == nil { decideHead() }
        guard accepting == true else {
            // An error page or a redirect body: not the resource. Swallow it, or abort on a bad range.
            return restartFromZero ? 0 : bytes.count
        }
        switch operation.offer(bytes) {
        case .accepted:
            received += Int64(bytes.count)
            return bytes.count
        case .full:
            curlPaused = true
            return ccurl_writefunc_pause()
        case .stopped:
            return 0
        }
    }

    /// Decides, at the first body byte (or the end of an empty body), whether this response carries
    /// the resource and where it starts; tells the sink.
    func decideHead() {
        let status = (try? easy?.info(CURLINFO_RESPONSE_CODE)) ?? 0
        guard isFile || (200..<300).contains(status) else {
            accepting = false
            return
        }
        var offset: Int64 = 0
        var total: Int64?
        if isFile {
            total = (try? easy?.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)).flatMap { $0 >= 0 ? $0 : nil }
        } else if status == 206 {
            guard let range = headers.contentRange, range.first == requestedOffset, requestedOffset > 0 else {
                // A range we did not ask for (or a multipart answer): do not trust it; start over.
                accepting = false
                restartFromZero = true
                return
            }
            offset = range.first
            total = range.total
            resumedBytes += offset
        } else {
            total = headers.contentLength
        }
        received = offset
        if !isFile { validators = headers.validators }
        accepting = true
        operation.deliver(.begin(TransferResponseHead(offset: offset, totalBytes: total, statusCode: status,
                                                      validators: validators)))
    }

    /// One header line from curl's header callback.
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) {
        let line = String(decoding: bytes, as: UTF8.self)
        headers.take(line: Substring(line))
    }
}
