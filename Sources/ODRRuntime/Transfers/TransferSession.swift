internal import CCurl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The loop thread's bookkeeping for one transfer across its attempts.
///
/// Lives only on the transfer loop's thread; curl's callbacks reach it through an unretained pointer
/// while the loop's tables keep it alive.
final class TransferSession {
    let operation: TransferOperation
    let isFile: Bool
    /// The request's byte range, if any: the body is then that range, and every offset here
    /// (`received`, `requestedOffset`) counts from its lower bound.
    let range: Range<Int64>?
    /// Requests made so far.
    var attempts = 0
    /// Contiguous body bytes handed on so far (held bytes of the sink included).
    var received: Int64
    /// Validators of the response `received` came from; they guard the next `Range` request.
    /// Before any response, those the caller planned a byte range against.
    var validators: TransferValidators
    /// Bytes saved by `Range` requests over all attempts.
    var resumedBytes: Int64 = 0
    /// Body bytes taken from the network over all attempts, per origin (index in ``urls``): bytes
    /// of an attempt that was cut, then continued or started over, count too.
    var receivedPerOrigin: [Int64] = []
    /// The origins that sent body bytes, in the order they first did.
    var senders: [Int] = []
    /// The earliest time of the next attempt, after a failure.
    var notBefore: ContinuousClock.Instant?
    /// The caller's pause, mirrored by the loop so scanning the queue takes no locks.
    var userPaused = false
    /// When the transfer last made progress: its first attempt began, a byte arrived, or the loop
    /// continued it after a pause. ``TransferEngine/Configuration/progressTimeout`` counts from here.
    var lastProgress: ContinuousClock.Instant?

    // The current attempt.
    var easy: CurlEasy?
    /// When the current attempt began, and when its connection was up (`nil` until curl says so):
    /// the first-byte timeout counts from there.
    var attemptStarted: ContinuousClock.Instant = .now
    var connectedAt: ContinuousClock.Instant?
    /// Whether the current attempt has received any response byte (a header line).
    var responded = false
    /// Why the loop cut the current attempt short (no response, a silent body), for the error's cause.
    var deadlineMissed: String?
    /// Per origin (index in ``urls``), the attempts made since a response last arrived from any:
    /// each one doubles the connect and first-byte timeouts of the next attempt on that origin.
    var silentAttempts: [Int] = []
    var headers = ResponseHeaders()
    /// The first body byte this attempt asked for.
    var requestedOffset: Int64 = 0
    /// Whether this attempt's body goes to the sink; `nil` until the first body byte.
    var accepting: Bool?
    /// The attempt answered with an unusable `Content-Range`; start over from byte 0.
    var restartFromZero = false
    /// The server did not answer the byte range exactly; the transfer fails with this, unretried.
    var rangeRefusal: ResourceError?
    /// Whether curl has this exchange paused (by us or by the write callback).
    var curlPaused = false
    /// Whether the write callback may wait a moment for room in a full buffer rather than pause
    /// (``TransferOperation/offer(_:mayWait:)``): only while no other exchange runs, which the
    /// wait would hold up. Set by the loop before each turn.
    var mayWaitForRoom = false
    /// Header bytes of the current response (a status line starts a new response).
    var headerBytes = 0
    /// The response's headers exceeded the cap; the attempt is aborted and fails with this, unretried.
    var headerRefusal: ResourceError?
    /// The rate this transfer is held to while an urgent one runs (``NonUrgentBandwidth/limited(bytesPerSecond:)``).
    var rateLimit: RateLimit?
    /// When the average is back at the limit; the exchange stays paused until then.
    var rateLimitedUntil: ContinuousClock.Instant?

    struct RateLimit {
        /// When the limit began, and ``received`` then: bytes before it do not count.
        var since: ContinuousClock.Instant
        var startBytes: Int64
        var bytesPerSecond: Int64
    }

    /// The cap on one response's header bytes (the engine's configuration).
    let maximumHeaderBytes: Int
    /// The request's URL, then its alternates (``TransferRequest/alternateURLs``); `file://`
    /// alternates are left out, since curl cannot pause a local read.
    let urls: [URL]
    /// Which of ``urls`` the current (or next) attempt asks.
    var urlIndex = 0
    /// The origins that failed since the last body byte arrived: a round of failover ends when
    /// every origin is in here.
    var failedOrigins: Set<Int> = []

    init(operation: TransferOperation, maximumHeaderBytes: Int) {
        self.operation = operation
        self.maximumHeaderBytes = maximumHeaderBytes
        isFile = operation.request.url.isFileURL
        urls = [operation.request.url] + (isFile ? [] : operation.request.alternateURLs.filter { !$0.isFileURL })
        range = operation.request.byteRange
        received = operation.initialResumePoint?.offset ?? 0
        validators = operation.initialResumePoint?.validators
            ?? (range == nil ? nil : operation.request.ifRange)
            ?? TransferValidators()
        silentAttempts = Array(repeating: 0, count: urls.count)
        receivedPerOrigin = Array(repeating: 0, count: urls.count)
    }

    /// Body bytes taken from the network over all attempts and origins.
    var receivedBytes: Int64 { receivedPerOrigin.clampedSum() }

    /// The URLs that sent body bytes, in the order they first did.
    var receivedFrom: [URL] { senders.map { urls[$0] } }

    /// How much the current attempt's connect and first-byte timeouts are stretched: doubled for
    /// each earlier attempt on the same origin that got no response (at most 8 times), so that a
    /// network slower than the defaults still gets through on a retry.
    var timeoutFactor: Double {
        Double(1 << min(3, max(0, silentAttempts[urlIndex] - 1)))
    }

    var sequence: UInt64 { operation.sequence }

    /// The URL the current (or next) attempt asks.
    var currentURL: URL { urls[urlIndex] }

    /// Whether held bytes may continue on another origin without validators: the caller declared
    /// the resource identical everywhere by naming alternates.
    var resumesAcrossOrigins: Bool { urls.count > 1 }

    /// The first origin after the current one (in the request's order, wrapping) that has not
    /// failed since the last progress, or `nil` when every one has.
    func nextUntriedOrigin() -> Int? {
        (1..<max(1, urls.count)).lazy.map { (self.urlIndex + $0) % self.urls.count }.first { !self.failedOrigins.contains($0) }
    }

    /// Moves the next attempt to origin `index`. The validators of the bytes held came from another
    /// host and guard nothing there, so they are dropped (the range continues without `If-Range`).
    func switchOrigin(to index: Int) {
        urlIndex = index
        validators = TransferValidators()
    }

    /// Seconds since ``lastProgress`` (0 before the first attempt).
    var secondsWithoutProgress: Double {
        guard let lastProgress else { return 0 }
        let elapsed = lastProgress.duration(to: .now).components
        return Double(elapsed.seconds) + Double(elapsed.attoseconds) / 1e18
    }

    /// Starts a new attempt: resets per-attempt state and decides where the body should start.
    func beginAttempt(with easy: CurlEasy) {
        attempts += 1
        self.easy = easy
        headers = ResponseHeaders()
        accepting = nil
        restartFromZero = false
        rangeRefusal = nil
        curlPaused = false
        headerBytes = 0
        headerRefusal = nil
        attemptStarted = .now
        connectedAt = nil
        responded = false
        deadlineMissed = nil
        silentAttempts[urlIndex] += 1
        if lastProgress == nil { lastProgress = .now }
        requestedOffset = (!isFile && received > 0 && (validators.ifRangeValue != nil || resumesAcrossOrigins)) ? received : 0
    }

    /// The request headers of the current attempt.
    func requestHeaders(defaults: [String: String]) -> [String] {
        var fields = defaults
        for (name, value) in operation.request.headers { fields[name] = value }
        var lines = fields.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)" }
        if let range {
            lines.append("Range: bytes=\(requestedSpan(of: range))")
            if let guardValue = validators.ifRangeValue { lines.append("If-Range: \(guardValue)") }
        } else if requestedOffset > 0 {
            lines.append("Range: bytes=\(requestedOffset)-")
            if let guardValue = validators.ifRangeValue { lines.append("If-Range: \(guardValue)") }
        }
        // Held bytes are a partial copy: a 304 for them would say nothing about the rest.
        if requestedOffset == 0, let conditional = operation.request.conditional {
            if let tag = conditional.entityTag, TransferValidators.isFieldValue(tag) { lines.append("If-None-Match: \(tag)") }
            if let date = conditional.lastModified, TransferValidators.isFieldValue(date) { lines.append("If-Modified-Since: \(date)") }
        }
        // Ask for the raw bytes: the hash covers the body exactly as stored.
        lines.append("Accept-Encoding: identity")
        return lines
    }

    // MARK: curl callbacks

    /// The most body bytes one write callback hands over (libcurl's `CURL_MAX_WRITE_SIZE`, 16 KiB).
    /// A caller's pause takes effect at the next callback (``TransferOperation/offer(_:)`` refuses
    /// it), so a transfer takes no more after ``TransferOperation/pause()`` than the chunk being
    /// handed over at that moment.
    static let chunkBytes = Int(ccurl_max_write_size())

    /// The absolute bytes this attempt asks for, as `first-last` (`Range` syntax, last included).
    func requestedSpan(of range: Range<Int64>) -> String {
        "\(range.lowerBound + requestedOffset)-\(range.upperBound - 1)"
    }

    /// Body bytes from curl's write callback; returns what curl expects back.
    func receive(_ bytes: UnsafeRawBufferPointer) -> Int {
        if accepting == nil { decideHead() }
        guard accepting == true else {
            // An error page or a redirect body: not the resource. Swallow it, or abort on a bad
            // range: a server that ignores `Range` would otherwise send the whole file for nothing.
            return restartFromZero || rangeRefusal != nil ? 0 : bytes.count
        }
        switch operation.offer(bytes, mayWait: mayWaitForRoom) {
        case .accepted:
            received += Int64(bytes.count)
            if receivedPerOrigin[urlIndex] == 0 { senders.append(urlIndex) }
            receivedPerOrigin[urlIndex] = receivedPerOrigin[urlIndex].clampedAdding(Int64(bytes.count))
            lastProgress = .now
            if !failedOrigins.isEmpty { failedOrigins.removeAll() }
            return bytes.count
        case .full, .paused:
            // curl keeps the chunk and hands it over again when the loop continues the exchange.
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
        if let range, let refusal = refusal(of: range, status: status) {
            accepting = false
            rangeRefusal = refusal
            return
        }
        guard isFile || (200..<300).contains(status) else {
            accepting = false
            return
        }
        var offset: Int64 = 0
        var total: Int64?
        if isFile {
            total = (try? easy?.info(offset: CURLINFO_CONTENT_LENGTH_DOWNLOAD_T)).flatMap { $0 >= 0 ? $0 : nil }
        } else if let range {
            // `refusal(of:status:)` let only the exact range through.
            offset = requestedOffset
            total = range.upperBound - range.lowerBound
            resumedBytes += offset
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

    /// Why the current response cannot serve this attempt's part of a byte range, or `nil` when it
    /// carries exactly that part (or is an error status that the usual failure handling covers).
    func refusal(of range: Range<Int64>, status: Int) -> ResourceError? {
        guard !isFile else { return nil }
        let asked = "The server answered the range request for bytes \(requestedSpan(of: range))"
        let reason: String
        switch status {
        case 206:
            if let served = headers.contentRange {
                if served.first == range.lowerBound + requestedOffset, served.last == range.upperBound - 1 { return nil }
                reason = "\(asked) with bytes \(served.first)-\(served.last) (HTTP 206): the file is shorter than the range, or the server serves only part of it."
            } else {
                reason = "\(asked) with a multipart or unlabelled body (HTTP 206 without one Content-Range)."
            }
        case 200:
            reason = "\(asked) with the whole file (HTTP 200): it ignores Range, or the file changed since the range was planned (If-Range)."
        case 416:
            reason = "\(asked) with HTTP 416 (range not satisfiable): the range lies past the end of the file, or the file changed."
        case 200..<300:
            reason = "\(asked) with HTTP \(status) instead of the range."
        default:
            return nil
        }
        return ResourceError(.rangeNotSupported,
                             reason + " Download the whole file instead, or refresh the catalog that planned the range.",
                             url: currentURL)
    }

    /// One header line from curl's header callback; `false` when the response's headers exceed
    /// ``maximumHeaderBytes`` (the attempt must then be aborted, and fails with ``headerRefusal``).
    func receiveHeader(_ bytes: UnsafeRawBufferPointer) -> Bool {
        lastProgress = .now
        if !responded {
            responded = true
            for index in silentAttempts.indices { silentAttempts[index] = 0 }
        }
        if bytes.starts(with: "HTTP/".utf8) { headerBytes = 0 }
        headerBytes += bytes.count
        guard headerBytes <= maximumHeaderBytes else {
            headerRefusal = oversizedHeaders()
            return false
        }
        let line = String(decoding: bytes, as: UTF8.self)
        headers.take(line: Substring(line))
        return true
    }

    /// The error for a response whose headers are larger than ``maximumHeaderBytes`` (or than curl
    /// accepts for one line), naming the server.
    func oversizedHeaders() -> ResourceError {
        let limit = maximumHeaderBytes
        let url = currentURL
        let server = (url.host ?? url.absoluteString) + (url.port.map { ":\($0)" } ?? "")
        return ResourceError(.unexpectedResponse,
                             "The server \(server) sent response headers larger than \(limit >> 10) KiB, more than any valid response needs; the transfer was stopped. Check the server or proxy at that address.",
                             url: url)
    }
}
