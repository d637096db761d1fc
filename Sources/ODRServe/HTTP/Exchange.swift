import Hummingbird
import Logging
import NIOCore
import ODRFormat

/// One request and its response as the request log sees them, from arrival to the last byte.
///
/// Shared between the responder and the task that writes the body later, hence the lock.
final class Exchange: Sendable {
    private struct State {
        var entry: ServedRequest
        var finished = false
    }

    private let state: Locked<State>
    private let context: ServeContext
    private let arrival = ContinuousClock.now
    private let log: RequestLog
    private let logger: Logger
    private let isHead: Bool

    init(request: Request, context: ServeContext, log: RequestLog, logger: Logger) {
        let headers = request.headers
        state = Locked(State(entry:
            ServedRequest(
                sequence: log.arrive(),
                method: request.method.rawValue,
                target: request.head.path ?? "/",
                range: headers[.range],
                ifRange: headers[.ifRange],
                ifNoneMatch: headers[.ifNoneMatch],
                status: 0,
                contentLength: nil,
                bytesSent: 0,
                faults: [],
                outcome: .inProgress,
                connection: context.channel.remoteAddress.map { "\($0.ipAddress ?? "?"):\($0.port ?? 0)" } ?? "?",
                duration: .zero
            )
        ))
        self.context = context
        self.log = log
        self.logger = logger
        isHead = request.method == .head
        log.record(entry)
    }

    var entry: ServedRequest {
        get { state.withLock { $0.entry } }
        set { state.withLock { $0.entry = newValue } }
    }

    /// A short plain-text answer (errors, injected failures).
    func message(_ status: HTTPResponse.Status, _ text: String, headers: HTTPFields = [:]) -> Response {
        let body = ByteBuffer(string: text + "\n")
        var headers = headers
        headers[.contentType] = "text/plain; charset=utf-8"
        headers[.contentLength] = String(body.readableBytes)
        begin(status, contentLength: body.readableBytes)
        finish(outcome: .completed, bytesSent: isHead ? 0 : body.readableBytes)
        return Response(status: status, headers: headers, body: isHead ? ResponseBody() : ResponseBody(byteBuffer: body))
    }

    /// A response without a body: 304, or any answer to HEAD (which keeps the GET's Content-Length).
    func empty(_ status: HTTPResponse.Status, headers: HTTPFields, contentLength: Int? = nil) -> Response {
        begin(status, contentLength: contentLength)
        finish(outcome: .completed)
        return Response(status: status, headers: headers, body: ResponseBody())
    }

    /// A streamed body of `length` bytes, written by `write` once the head has gone out.
    func stream(
        _ status: HTTPResponse.Status,
        headers: HTTPFields,
        length: Int,
        write: @escaping @Sendable (any ResponseBodyWriter, ServeContext) async throws -> Void
    ) -> Response {
        begin(status, contentLength: length)
        let context = context
        return Response(status: status, headers: headers, body: ResponseBody(contentLength: length) { writer in
            try await write(writer, context)
        })
    }

    /// Records bytes sent while the body is still going (a stall in progress).
    func progress(bytesSent: Int) {
        let entry = state.withLock { state in
            state.entry.bytesSent = bytesSent
            return state.entry
        }
        log.record(entry)
    }

    /// Records how the exchange ended and logs it; only the first call counts.
    func finish(outcome: ServedRequest.Outcome, bytesSent: Int = 0) {
        let duration = ContinuousClock.now - arrival
        let entry = state.withLock { state -> ServedRequest? in
            guard !state.finished else { return nil }
            state.finished = true
            state.entry.outcome = outcome
            state.entry.bytesSent = bytesSent
            state.entry.duration = duration
            return state.entry
        }
        guard let entry else { return }
        log.finish(entry)
        var metadata: Logger.Metadata = ["connection": "\(entry.connection)"]
        if let range = entry.range { metadata["range"] = "\(range)" }
        if !entry.faults.isEmpty { metadata["faults"] = "\(entry.faults.map(\.description).joined(separator: ", "))" }
        if outcome == .aborted { metadata["aborted"] = "true" }
        let tenthsOfMilliseconds = duration.components.seconds * 10_000 + duration.components.attoseconds / 100_000_000_000_000
        logger.info(
            "\(entry.method) \(entry.target) \(entry.status) \(entry.bytesSent) bytes \(Double(tenthsOfMilliseconds) / 10) ms",
            metadata: metadata
        )
    }

    private func begin(_ status: HTTPResponse.Status, contentLength: Int?) {
        let entry = state.withLock { state in
            state.entry.status = status.code
            state.entry.contentLength = contentLength
            return state.entry
        }
        log.record(entry)
    }

    deinit {
        // Hummingbird drops a response whose head it cannot write (the client left during the
        // latency), so its body never runs: count the exchange as ended all the same, or
        // `waitUntilIdle` would wait forever.
        finish(outcome: .aborted, bytesSent: entry.bytesSent)
    }
}
