/// One thing the conditioner does to one request: answer with an error status, drop the
/// connection, delay, or damage the body.
///
/// Tests schedule faults with ``CatalogServer/injectFaults(_:count:path:)`` to get exact outcomes
/// without probabilities, and read the faults that were applied in ``ServedRequest/faults``
/// (random ones from ``NetworkConditions`` are recorded the same way).
///
/// ```swift
/// server.injectFaults(.status(503), count: 2, path: "/packs/a.zip")      // two 503s, then success
/// server.injectFaults(.truncate(afterBytes: 1000), path: "/packs/a.zip") // close after 1000 body bytes
/// ```
public struct Fault: Sendable, Hashable, CustomStringConvertible {
    enum Kind: Sendable, Hashable {
        case status(Int)
        case dropConnection
        case delay(Duration)
        case truncate(afterBytes: Int)
        case corrupt(offset: Int)
        case stall(afterBytes: Int, duration: Duration)
    }

    let kind: Kind

    /// Answers with `code` (503 Service Unavailable by default) instead of the file.
    public static func status(_ code: Int = 503) -> Fault { Fault(kind: .status(code)) }

    /// Closes the connection after reading the request, without sending any response.
    public static let dropConnection = Fault(kind: .dropConnection)

    /// Waits `duration` before answering (on top of the conditions' latency).
    public static func delay(_ duration: Duration) -> Fault { Fault(kind: .delay(duration)) }

    /// Sends the response head and the first `afterBytes` body bytes, then closes the connection:
    /// the client sees a body shorter than its Content-Length. Applies only to a body longer than
    /// `afterBytes`.
    public static func truncate(afterBytes: Int) -> Fault { Fault(kind: .truncate(afterBytes: max(0, afterBytes))) }

    /// Inverts every bit of the body byte at `offset` (counted from the first byte of the response
    /// body, multipart headers included). Applies only to a body longer than `offset`.
    public static func corrupt(atOffset offset: Int) -> Fault { Fault(kind: .corrupt(offset: max(0, offset))) }

    /// Sends the first `afterBytes` body bytes, then nothing for `duration` (or until the server stops
    /// or goes offline), then closes the connection: what a client's stall detection must catch.
    /// Applies only to a body longer than `afterBytes`.
    public static func stall(afterBytes: Int, for duration: Duration = .seconds(60)) -> Fault {
        Fault(kind: .stall(afterBytes: max(0, afterBytes), duration: duration))
    }

    /// Whether this fault acts on a response body, so only a response with a long enough body
    /// consumes it.
    var actsOnBody: Bool {
        switch kind {
        case .truncate, .corrupt, .stall: true
        case .status, .dropConnection, .delay: false
        }
    }

    /// Whether a body of `length` bytes is long enough for this fault to change it.
    func applies(toBodyOfLength length: Int) -> Bool {
        switch kind {
        case .truncate(let after), .stall(let after, _): length > after
        case .corrupt(let offset): length > offset
        case .status, .dropConnection, .delay: true
        }
    }

    public var description: String {
        switch kind {
        case .status(let code): "status \(code)"
        case .dropConnection: "drop connection"
        case .delay(let duration): "delay \(duration)"
        case .truncate(let after): "truncate after \(after) bytes"
        case .corrupt(let offset): "corrupt byte \(offset)"
        case .stall(let after, let duration): "stall after \(after) bytes for \(duration)"
        }
    }
}
