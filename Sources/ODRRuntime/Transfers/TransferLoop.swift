internal import CCurl
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import ODRFormat

/// The dedicated thread's side of the engine: one curl multi handle, the queue, and every curl call.
///
/// Not `Sendable`: created by ``TransferEngine`` and handed to its thread, which alone uses it from
/// then on. Other threads reach it only through ``TransferInbox``.
final class TransferLoop {
    private let configuration: TransferEngine.Configuration
    private let inbox: TransferInbox
    private let multi: CurlMulti
    /// Every live transfer, queued (including waiting to retry) or running.
    private var sessions: [UInt64: TransferSession] = [:]
    private var queue = TransferQueue<TransferSession>()
    /// Running transfers by their easy handle.
    private var running: [UnsafeMutableRawPointer: TransferSession] = [:]
    private var random = SystemRandomNumberGenerator()
    /// Counts what was done to non-urgent transfers for urgent ones; the engine reads it.
    private let statistics: Locked<TransferStatistics>

    init(configuration: TransferEngine.Configuration, inbox: TransferInbox, statistics: Locked<TransferStatistics>) throws(CurlError) {
        self.configuration = configuration
        self.inbox = inbox
        self.statistics = statistics
        multi = try CurlMulti()
        // HTTP/2 multiplexing where the server offers it: many transfers share one connection.
        try multi.set(CURLMOPT_PIPELINING, ccurl_pipe_multiplex())
        inbox.open(CurlWakeup(multi))
    }

    /// Runs until a `.shutdown` command arrives.
    func run() {
        while true {
            for command in inbox.take() {
                switch command {
                case .add(let operation): add(operation)
                case .changed(let operation): changed(operation)
                case .shutdown:
                    shutDown()
                    return
                }
            }
            schedule()
            reconcilePauses()
            var finishedAny = false
            // A lone transfer's full buffer waits a moment for its sink rather than pausing curl;
            // with others running, a wait would hold them up.
            let alone = running.count == 1
            for session in running.values { session.mayWaitForRoom = alone }
            do {
                try multi.perform()
                for session in running.values { session.operation.flushDelivery() }
                while let (handle, code) = multi.nextCompletion() {
                    finished(handle, code)
                    finishedAny = true
                }
                if cutMissedDeadlines() { finishedAny = true }
                if finishedAny { continue }
                try multi.poll(timeoutMilliseconds: pollTimeout())
            } catch {
                // The multi handle itself failed (out of memory, a bug): fail what runs rather than spin.
                failAllRunning(with: error)
            }
        }
    }

    // MARK: Commands

    private func add(_ operation: TransferOperation) {
        if operation.isStopped {
            operation.deliver(.failed(Self.cancelledError(operation)))
            return
        }
        if let problem = operation.request.byteRangeProblem {
            operation.deliver(.failed(problem))
            return
        }
        let session = TransferSession(operation: operation, maximumHeaderBytes: configuration.maximumHeaderBytes)
        let control = operation.control
        session.userPaused = control.userPaused
        sessions[operation.sequence] = session
        queue.insert(session, sequence: operation.sequence, priority: control.priority, hintLikelihood: control.hintLikelihood)
    }

    private func changed(_ operation: TransferOperation) {
        guard let session = sessions[operation.sequence] else { return }
        let control = operation.control
        if control.stopped {
            drop(session)
            // The delivery task resolves the outcome; this event only matters if it waits for one.
            operation.deliver(.failed(Self.cancelledError(operation)))
            return
        }
        // Time paused by the caller is not the server's silence.
        if session.userPaused, !control.userPaused { session.lastProgress = .now }
        session.userPaused = control.userPaused
        if queue.contains(sequence: operation.sequence) {
            queue.setPriority(control.priority, sequence: operation.sequence)
            queue.setHintLikelihood(control.hintLikelihood, sequence: operation.sequence)
        }
        // Running transfers: reconcilePauses() applies pause and urgency.
    }

    private func shutDown() {
        let pending = inbox.close()
        for command in pending {
            if case .add(let operation) = command { operation.deliver(.failed(Self.shutDownError(operation))) }
        }
        for session in Array(sessions.values) {
            drop(session)
            session.operation.deliver(.failed(Self.shutDownError(session.operation)))
        }
    }

    // MARK: Scheduling

    private func schedule() {
        let now = ContinuousClock.now
        var runningUrgent = running.values.count { $0.operation.control.priority.isUrgent }
        while let entry = queue.first(where: { entry in
            !entry.element.userPaused && (entry.element.notBefore.map { $0 <= now } ?? true)
        }) {
            guard transferMayStart(priority: entry.priority, running: running.count, runningUrgent: runningUrgent,
                                   limit: configuration.maximumConcurrentTransfers,
                                   yieldToUrgent: configuration.nonUrgentBandwidthWhileUrgent == .paused) else { break }
            queue.remove(sequence: entry.sequence)
            start(entry.element)
            if entry.priority.isUrgent { runningUrgent += 1 }
        }
    }

    /// Milliseconds until the next retry, rate pause or deadline (``nextDeadline(of:)``) is due,
    /// at most a second, so nothing can sleep forever.
    private func pollTimeout() -> Int {
        let now = ContinuousClock.now
        var timeout = 1000
        // Bytes short of a coalesced write reach the sink within the delivery delay, however quiet the network.
        if running.values.contains(where: { $0.operation.holdsUndeliveredBytes }) {
            timeout = Int(TransferOperation.deliveryDelay.components.attoseconds / 1_000_000_000_000_000) + 1
        }
        let waking = queue.elements.compactMap(\.notBefore) + running.values.compactMap(\.rateLimitedUntil)
            + running.values.compactMap { nextDeadline(of: $0)?.at }
        for due in waking {
            let wait = now.duration(to: due)
            let milliseconds = Int(wait.components.seconds * 1000 + wait.components.attoseconds / 1_000_000_000_000_000)
            timeout = min(timeout, max(0, milliseconds + 1))
        }
        return timeout
    }

    /// Pauses and continues running exchanges: the caller's pause, a full buffer, or an urgent
    /// transfer that should have the bandwidth (paused, or held to a rate, as
    /// ``TransferEngine/Configuration/nonUrgentBandwidthWhileUrgent`` says).
    private func reconcilePauses() {
        let controls = running.mapValues { $0.operation.control }
        let urgentRunning = controls.values.contains { $0.priority.isUrgent && !$0.userPaused }
        let now = ContinuousClock.now
        for (handle, session) in running {
            guard let control = controls[handle], let easy = session.easy else { continue }
            let yield = urgentRunning && !control.priority.isUrgent
            var pauseToYield = false
            switch configuration.nonUrgentBandwidthWhileUrgent {
            case .paused:
                pauseToYield = yield
                if yield, !session.curlPaused, !control.userPaused, !control.writeBlocked {
                    statistics.withLock { $0.pausedForUrgent += 1 }
                }
            case .limited(let bytesPerSecond):
                // Twice the stall limit at least, so a polite transfer is never failed as stalled.
                let limit = max(bytesPerSecond, 2 * Int64(configuration.lowSpeedLimit), 1)
                pauseToYield = isOverRate(session, limit: yield ? limit : nil, now: now)
            case .unlimited:
                break
            }
            let shouldPause = control.userPaused || control.writeBlocked || pauseToYield
            guard shouldPause != session.curlPaused else { continue }
            // Continuing may deliver held data through the write callback, which may pause again.
            session.curlPaused = shouldPause
            if !shouldPause {
                session.lastProgress = now
                // A pause before the response began is not the server's silence either: the
                // first-byte timeout counts again from here.
                if !session.responded {
                    session.attemptStarted = now
                    if session.connectedAt != nil { session.connectedAt = now }
                }
            }
            do {
                try easy.setPaused(shouldPause)
            } catch {
                session.curlPaused = !shouldPause
            }
        }
    }

    /// Whether `session` has received more than `limit` bytes per second since its limit began (it
    /// then stays paused until the average is back at the limit); `nil` lifts the limit.
    ///
    /// The engine paces the transfer itself by pausing and continuing it: libcurl's
    /// `CURLOPT_MAX_RECV_SPEED_LARGE` set on a running transfer has no effect in libcurl 7.88, whose
    /// rate window starts only with a limit set before the transfer began.
    private func isOverRate(_ session: TransferSession, limit: Int64?, now: ContinuousClock.Instant) -> Bool {
        guard let limit else {
            if session.rateLimit != nil {
                session.rateLimit = nil
                session.rateLimitedUntil = nil
                statistics.withLock { $0.rateLimitsLifted += 1 }
            }
            return false
        }
        if session.rateLimit == nil {
            session.rateLimit = TransferSession.RateLimit(since: now, startBytes: session.received, bytesPerSecond: limit)
            statistics.withLock { $0.rateLimitedForUrgent += 1 }
        }
        guard let rate = session.rateLimit else { return false }
        let received = max(0, session.received - rate.startBytes)
        let due = rate.since.advanced(by: .seconds(Double(received) / Double(rate.bytesPerSecond)))
        let ahead = due > now
        if ahead, session.rateLimitedUntil == nil { statistics.withLock { $0.pausedForRate += 1 } }
        session.rateLimitedUntil = ahead ? due : nil
        return ahead
    }

    // MARK: Attempts

    private func start(_ session: TransferSession) {
        // Waiting for a slot past the retry's due time is not the server's silence either.
        if let due = session.notBefore, let last = session.lastProgress {
            let waited = due.duration(to: .now)
            if waited > .zero { session.lastProgress = last.advanced(by: waited) }
        }
        do {
            let easy = try CurlEasy()
            session.beginAttempt(with: easy)
            try configure(easy, for: session)
            try multi.add(easy)
            running[easy.handle] = session
        } catch {
            session.easy = nil
            fail(session, ResourceError(.unexpectedResponse, "The transfer could not be set up. Check the URL.",
                                        url: session.operation.request.url, cause: error))
        }
    }

    /// The most bytes curl reads from a socket at once: a quarter of the transfer's buffer, at
    /// most 64 KiB (curl's default is 16 KiB; the `curl` tool reads 100 KiB). Its write callback
    /// still gets at most 16 KiB a call, so the buffer's bounds are unchanged; what a larger read
    /// saves is system calls and wake-ups: a 256 MiB install from nginx made 18,683 `recvfrom`
    /// calls against `curl`'s 2,630, and with 64 KiB reads it took 670 ms of CPU instead of 748
    /// (median of 7, `odr fetch --no-sync` on tmpfs), 475 ms instead of 503 (issue 44). A paused
    /// transfer may leave curl holding the rest of one read, at most this much.
    static func receiveBufferBytes(bufferLimit: Int) -> Int {
        max(16 * 1024, min(64 * 1024, bufferLimit / 4))
    }

    private func configure(_ easy: CurlEasy, for session: TransferSession) throws(CurlError) {
        try easy.set(CURLOPT_URL, session.currentURL.absoluteString)
        try easy.set(CURLOPT_PROTOCOLS_STR, "http,https,file")
        // A redirect may lead to another host (a CDN's edge), never to a local file or another scheme.
        try easy.set(CURLOPT_REDIR_PROTOCOLS_STR, "http,https")
        try easy.set(CURLOPT_FOLLOWLOCATION, session.operation.request.followsRedirects)
        try easy.set(CURLOPT_MAXREDIRS, configuration.maximumRedirects)
        try easy.set(CURLOPT_SSL_VERIFYPEER, true)
        try easy.set(CURLOPT_SSL_VERIFYHOST, 2)
        try easy.set(CURLOPT_NOSIGNAL, true)
        try easy.set(CURLOPT_TCP_KEEPALIVE, true)
        try easy.set(CURLOPT_BUFFERSIZE, Self.receiveBufferBytes(bufferLimit: session.operation.bufferLimit))
        // Both timeouts end within what is left of the progress timeout (at least a second each).
        // Clamped to a day so that no configured value can overflow the conversion to an integer.
        let left = min(86_400, max(1, configuration.progressTimeout - session.secondsWithoutProgress))
        var connect = configuration.connectTimeout.isFinite ? max(0.001, min(configuration.connectTimeout * session.timeoutFactor, left)) : left
        if let limit = session.operation.request.connectSeconds, limit.isFinite, limit > 0 { connect = min(connect, limit) }
        try easy.set(CURLOPT_CONNECTTIMEOUT_MS, Int(connect * 1000))
        try easy.set(CURLOPT_LOW_SPEED_LIMIT, configuration.lowSpeedLimit)
        var stallWindow = configuration.lowSpeedTime == 0 ? 0 : min(configuration.lowSpeedTime, Int(left.rounded(.up)))
        if let limit = session.operation.request.stallSeconds, limit > 0 { stallWindow = stallWindow == 0 ? limit : min(stallWindow, limit) }
        try easy.set(CURLOPT_LOW_SPEED_TIME, stallWindow)
        try easy.set(CURLOPT_USERAGENT, configuration.userAgent)
        try easy.set(CURLOPT_HTTP_VERSION, CURL_HTTP_VERSION_2TLS)
        if session.currentURL.scheme == "https" {
            // Wait for a connection that can multiplex rather than open another one.
            try easy.set(CURLOPT_PIPEWAIT, true)
        }
        if !session.isFile {
            try easy.set(CURLOPT_HTTPHEADER, list: CurlStringList(session.requestHeaders(defaults: configuration.headers)))
        }
        let context = Unmanaged.passUnretained(session).toOpaque()
        try easy.set(CURLOPT_WRITEFUNCTION, callback: transferWriteCallback)
        try easy.set(CURLOPT_WRITEDATA, pointer: context)
        try easy.set(CURLOPT_HEADERFUNCTION, callback: transferHeaderCallback)
        try easy.set(CURLOPT_HEADERDATA, pointer: context)
    }

    private func finished(_ handle: UnsafeMutableRawPointer, _ code: CURLcode) {
        guard let session = running.removeValue(forKey: handle), let easy = session.easy else { return }
        try? multi.remove(easy)
        defer { session.easy = nil }
        let operation = session.operation
        let url = session.currentURL
        if operation.isStopped {
            drop(session)
            operation.deliver(.failed(Self.cancelledError(operation)))
            return
        }
        if let refusal = session.headerRefusal {
            fail(session, refusal)
            return
        }
        if code == CURLE_OUT_OF_MEMORY, session.accepting == nil {
            // libcurl refuses one header line over its own cap (100 KiB in 7.88) as out of memory,
            // before the header callback sees it: the server's headers, not this process, are at fault.
            fail(session, session.oversizedHeaders())
            return
        }
        if let refusal = session.rangeRefusal {
            // Another try would get the same answer; another origin may serve the range, else the
            // caller must fall back to the whole file.
            if failOver(session, refusal) { return }
            fail(session, refusal)
            return
        }
        if session.restartFromZero {
            // Another origin continues where the bytes stopped; a lone server starts over.
            if failOver(session, ResourceError(.unexpectedResponse, "The server answered a range request with the wrong Content-Range.", url: url)) {
                return
            }
            session.received = 0
            session.validators = TransferValidators()
            retryOrFail(session, TransferFailure(
                error: ResourceError(.unexpectedResponse, "The server answered a range request with the wrong range. Check the server's Range support.", url: url),
                isRetryable: true), immediately: true)
            return
        }
        guard code == CURLE_OK else {
            let cause = CurlError(code: code, operation: "transfer", detail: session.deadlineMissed ?? easy.errorDetail)
            var failure = TransferFailure.curl(code, cause: cause, url: url)
            if TransferFailure.meansUnreachable(code), !operation.request.retriesUnreachableServer { failure.isRetryable = false }
            if failOver(session, failure.error) { return }
            retryOrFail(session, failure)
            return
        }
        let status = (try? easy.info(CURLINFO_RESPONSE_CODE)) ?? 0
        // An empty answer (a 416 or 200 without a body) never reached the write callback's check.
        if session.accepting == nil, let range = session.range, let refusal = session.refusal(of: range, status: status) {
            fail(session, refusal)
            return
        }
        if status == 416, session.requestedOffset > 0 {
            // The held bytes no longer fit the resource (it may be complete already): start over.
            session.received = 0
            session.validators = TransferValidators()
            retryOrFail(session, TransferFailure(
                error: ResourceError(.unexpectedResponse, "The server rejected the resumed range (HTTP 416).", url: url),
                isRetryable: true), immediately: true)
            return
        }
        if let failure = TransferFailure.http(status: status, url: url) {
            if failOver(session, failure.error) { return }
            retryOrFail(session, failure)
            return
        }
        let completion = TransferCompletion(statusCode: status, validators: session.validators, attempts: session.attempts,
                                            resumedBytes: session.resumedBytes, receivedBytes: session.receivedBytes,
                                            receivedFrom: session.receivedFrom, servedBy: url)
        sessions[session.sequence] = nil
        if status == 304 {
            operation.deliver(.notModified(TransferCompletion(
                statusCode: status, validators: session.headers.validators, attempts: session.attempts, resumedBytes: 0,
                servedBy: url)))
            return
        }
        // An empty body never reached the write callback; the sink still needs its head.
        if session.accepting == nil { session.decideHead() }
        operation.deliver(.finished(completion))
    }

    /// Ends running attempts that missed a deadline the engine keeps itself (curl has none for
    /// HTTP, and its stall window counts whole seconds): see ``nextDeadline(of:)``. Each ends as a
    /// timeout, so the transfer moves to the next origin (or retries). The loop's wait is bounded
    /// by the nearest deadline (``pollTimeout()``), so a cut comes within a millisecond or so of it.
    ///
    /// - Returns: whether any attempt was ended.
    private func cutMissedDeadlines() -> Bool {
        let now = ContinuousClock.now
        var missed: [UnsafeMutableRawPointer] = []
        for (handle, session) in running {
            guard let deadline = nextDeadline(of: session), now >= deadline.at else { continue }
            session.deadlineMissed = deadline.kind.reason
            missed.append(handle)
        }
        for handle in missed { finished(handle, CURLE_OPERATION_TIMEDOUT) }
        return !missed.isEmpty
    }

    /// A deadline the engine keeps for a running attempt, and the words for missing it.
    private enum Deadline {
        /// ``TransferEngine/Configuration/firstByteTimeout`` (stretched on retries), from connecting.
        case engineFirstByte(seconds: Double)
        /// ``TransferRequest/firstByteSeconds``, from the attempt's start.
        case requestFirstByte(seconds: Double)
        /// ``TransferEngine/Configuration/failoverStallTimeout``, from the body's last byte.
        case failoverStall(seconds: Double)

        var reason: String {
            switch self {
            case .engineFirstByte(let seconds):
                "no response within \(TransferLoop.secondsText(seconds)) s of connecting (first-byte timeout)"
            case .requestFirstByte(let seconds):
                "no byte of the body within \(TransferLoop.secondsText(seconds)) s of the request's start, connecting included (the request's first-byte timeout)"
            case .failoverStall(let seconds):
                "no byte of the body for \(TransferLoop.secondsText(seconds)) s while another origin can serve it (failover stall timeout)"
            }
        }
    }

    /// The longest a deadline may be, so that no configured value overflows a `Duration`.
    private static let longestDeadline: Double = 86_400

    /// The earliest deadline of `session`'s running attempt, or `nil` when none applies: a file,
    /// a paused exchange (continuing one restarts its counts), or limits turned off.
    ///
    /// - No response within ``TransferEngine/Configuration/firstByteTimeout`` of connecting
    ///   (while still connecting, of the connect timeout's end: curl's connect timeout ends a hung
    ///   handshake, this only bounds both together).
    /// - No byte of the body within the request's ``TransferRequest/firstByteSeconds`` of the
    ///   attempt's start.
    /// - When another origin could serve the body, no byte of it for
    ///   ``TransferEngine/Configuration/failoverStallTimeout``.
    private func nextDeadline(of session: TransferSession) -> (at: ContinuousClock.Instant, kind: Deadline)? {
        guard !session.isFile, !session.curlPaused, !session.userPaused else { return nil }
        var earliest: (at: ContinuousClock.Instant, kind: Deadline)?
        func consider(_ seconds: Double, after start: ContinuousClock.Instant, _ kind: Deadline) {
            let at = start.advanced(by: .seconds(min(seconds, Self.longestDeadline)))
            if earliest.map({ at < $0.at }) ?? true { earliest = (at, kind) }
        }
        let firstByte = configuration.firstByteTimeout
        if !session.responded, firstByte.isFinite, firstByte > 0 {
            let factor = session.timeoutFactor
            if session.connectedAt == nil, let easy = session.easy,
               let microseconds = try? easy.info(offset: CURLINFO_PRETRANSFER_TIME_T), microseconds > 0 {
                session.connectedAt = session.attemptStarted.advanced(by: .microseconds(microseconds))
            }
            if let connectedAt = session.connectedAt {
                consider(firstByte * factor, after: connectedAt, .engineFirstByte(seconds: firstByte * factor))
            } else {
                let connect = configuration.connectTimeout.isFinite ? min(max(0, configuration.connectTimeout), Self.longestDeadline) : 0
                consider((connect + firstByte) * factor, after: session.attemptStarted, .engineFirstByte(seconds: firstByte * factor))
            }
        }
        if session.accepting == nil, let limit = session.operation.request.firstByteSeconds, limit.isFinite, limit > 0 {
            consider(limit, after: session.attemptStarted, .requestFirstByte(seconds: min(limit, Self.longestDeadline)))
        }
        let stall = configuration.failoverStallTimeout
        if session.urls.count > 1, session.accepting == true, stall.isFinite, stall > 0 {
            consider(stall, after: max(session.attemptStarted, session.lastProgress ?? session.attemptStarted), .failoverStall(seconds: stall))
        }
        return earliest
    }

    private static func secondsText(_ seconds: Double) -> String {
        seconds == seconds.rounded() && seconds < 1e9 ? "\(Int(seconds))" : "\(seconds)"
    }

    private func retryOrFail(_ session: TransferSession, _ failure: TransferFailure, immediately: Bool = false) {
        guard failure.isRetryable, configuration.retryPolicy.allowsRetry(after: session.attempts),
              session.attempts < session.operation.request.maximumAttempts ?? Int.max else {
            fail(session, failure.error)
            return
        }
        let delay = immediately ? 0 : configuration.retryPolicy.delay(after: session.attempts, using: &random)
        // No byte for the whole progress timeout: another attempt would only prolong the wait.
        guard session.secondsWithoutProgress + delay < configuration.progressTimeout else {
            fail(session, failure.error)
            return
        }
        session.notBefore = ContinuousClock.now.advanced(by: .milliseconds(Int(delay * 1000)))
        if session.urls.count > 1 {
            // Every origin failed this round: the next round starts at the origin after the last
            // one tried (the request's first, after a full round), once the delay is over.
            session.failedOrigins.removeAll()
            let from = session.currentURL
            session.switchOrigin(to: (session.urlIndex + 1) % session.urls.count)
            session.operation.deliver(.originSwitched(TransferOriginSwitch(from: from, to: session.currentURL, reason: failure.error.code,
                                                                           keptBytes: session.received)))
        }
        requeue(session)
        // Told at once, so the caller can show the stall rather than wait for the final error. (An
        // immediate retry is not a stall: the server answered, with something to start over from.)
        guard !immediately else { return }
        session.operation.deliver(.retrying(TransferRetry(code: failure.error.code, failedAttempt: session.attempts,
                                                          nextAttempt: Date(timeIntervalSinceNow: delay))))
    }

    /// Queues `session` again (a retry, another origin) at its current priority and hint likelihood,
    /// keeping its arrival number.
    private func requeue(_ session: TransferSession) {
        let control = session.operation.control
        queue.insert(session, sequence: session.sequence, priority: control.priority, hintLikelihood: control.hintLikelihood)
    }

    /// Moves the transfer at once to the next origin that has not failed since its last progress,
    /// keeping the bytes it holds; `false` when there is none, or `error` is not a host's fault.
    ///
    /// The attempt is not counted against the retry budget's delay: another host is not the one
    /// that just failed. A round ends when every origin failed without progress; then the usual
    /// retry (with its delay) or failure follows.
    private func failOver(_ session: TransferSession, _ error: ResourceError) -> Bool {
        guard session.urls.count > 1, Self.failsOver(error.code) else { return false }
        session.failedOrigins.insert(session.urlIndex)
        guard let next = session.nextUntriedOrigin() else { return false }
        let from = session.currentURL
        session.switchOrigin(to: next)
        session.notBefore = .now
        requeue(session)
        session.operation.deliver(.originSwitched(TransferOriginSwitch(from: from, to: session.currentURL, reason: error.code,
                                                                       keptBytes: session.received)))
        return true
    }

    /// Whether a failure with `code` may be the origin's fault, so another origin is worth asking:
    /// no connection, a timeout, 5xx, a stale mirror's 404, a range served wrongly.
    static func failsOver(_ code: ResourceError.Code) -> Bool {
        [.networkUnavailable, .timedOut, .serverError, .resourceUnavailable, .rangeNotSupported, .unexpectedResponse].contains(code)
    }

    private func fail(_ session: TransferSession, _ error: ResourceError) {
        sessions[session.sequence] = nil
        session.operation.deliver(.failed(error))
    }

    /// Forgets a transfer wherever it is; a running exchange is removed from the multi handle.
    private func drop(_ session: TransferSession) {
        sessions[session.sequence] = nil
        queue.remove(sequence: session.sequence)
        if let easy = session.easy {
            running[easy.handle] = nil
            try? multi.remove(easy)
            session.easy = nil
        }
    }

    private func failAllRunning(with error: any Error) {
        for session in Array(running.values) {
            drop(session)
            session.operation.deliver(.failed(ResourceError(
                .unexpectedResponse, "The transfer engine failed; try again.", url: session.operation.request.url,
                cause: error as? CurlError)))
        }
    }

    private static func cancelledError(_ operation: TransferOperation) -> ResourceError {
        ResourceError(.cancelled, "The transfer was cancelled.", url: operation.request.url)
    }

    private static func shutDownError(_ operation: TransferOperation) -> ResourceError {
        ResourceError(.cancelled, "The transfer engine was shut down before the transfer finished.", url: operation.request.url)
    }
}

/// curl's write callback: body bytes for the session behind `context`.
private let transferWriteCallback: ccurl_data_callback = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let session = Unmanaged<TransferSession>.fromOpaque(context).takeUnretainedValue()
    return session.receive(UnsafeRawBufferPointer(start: buffer, count: size * count))
}

/// curl's header callback: one header line at a time.
private let transferHeaderCallback: ccurl_data_callback = { buffer, size, count, context in
    guard let buffer, let context else { return 0 }
    let session = Unmanaged<TransferSession>.fromOpaque(context).takeUnretainedValue()
    // A count other than the line's aborts the exchange (CURLE_WRITE_ERROR); the loop reports why.
    return session.receiveHeader(UnsafeRawBufferPointer(start: buffer, count: size * count))
        ? size * count : 0
}
