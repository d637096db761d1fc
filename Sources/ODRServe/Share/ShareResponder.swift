#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif
import Hummingbird
import Logging
import NIOCore
import ODRFormat
import ODRRuntime

/// Answers the share server's requests: `GET`/`HEAD /odr/v1/sha256/<digest>`, nothing else.
struct ShareResponder: HTTPResponder {
    typealias Context = ServeContext

    static let prefix = "/odr/v1/sha256/"

    let source: any ShareSource
    let limits: ShareLimits
    let log: RequestLog
    let logger: Logger
    let files: FileReader
    let slots: AddressSlots
    let rate: RateLimiter?
    let bytesSent = Locked<Int64>(0)
    /// Set by ``ShareServer/kill()``: bodies under way end at their next chunk.
    let killed = Locked(false)

    init(source: any ShareSource, limits: ShareLimits, log: RequestLog, logger: Logger) {
        self.source = source
        self.limits = limits
        self.log = log
        self.logger = logger
        files = FileReader(chunkLength: Self.chunkLength(for: limits))
        slots = AddressSlots(total: limits.maximumConcurrentTransfers, perAddress: limits.maximumTransfersPerAddress)
        rate = limits.bytesPerSecond.map { RateLimiter(bytesPerSecond: Double($0)) }
    }

    /// Bytes read from a file and written to the connection at a time, and so between two checks
    /// that the content is still shared (``ShareSource/isStillShared(_:)``) and two rate
    /// reservations.
    ///
    /// Without a rate limit, ``maximumChunkLength`` (1 MiB): each chunk is a hand-off from a read
    /// on the thread pool to the body's task to the event loop, and a still-shared check in the
    /// database, and at 256 KiB those cost `odr share` 53 ms of CPU per 32 MiB against 33 ms at
    /// 1 MiB (medians; docs/STORE.md, "Local network peers").
    ///
    /// With one, the bytes of the limiter's 50 ms burst at that rate, from ``minimumChunkLength``
    /// (16 KiB) to ``maximumRateLimitedChunkLength`` (256 KiB; 256 KiB at the default 32 MiB/s). A
    /// chunk is written in one piece once the limiter lets it go, so a larger one would send a slow share's
    /// body in bursts and cut it later on a purge or a kill; and a new body's first byte waits for
    /// the chunk reserved before it (``RateLimiter``), which the installer's hedge does not wait for
    /// (25 ms without a peer byte, then the origins are asked): 31 ms at 1 MiB and 32 MiB/s, 8 ms
    /// at 256 KiB. With the limiter's earlier schedule, 1 MiB chunks sent the origins 9.7 to
    /// 38.9 MB of three SuperTuxKart tracks (about 120 MB) installed from a peer, against 5.0 to
    /// 17.4 MB at 256 KiB.
    static func chunkLength(for limits: ShareLimits) -> Int {
        guard let rate = limits.bytesPerSecond else { return maximumChunkLength }
        let burst = rate / (1000 / RateLimiter.burstMilliseconds)
        return Int(min(Int64(maximumRateLimitedChunkLength), max(Int64(minimumChunkLength), burst)))
    }

    /// The chunk without a rate limit: 1 MiB.
    static let maximumChunkLength = 1 << 20
    /// The largest chunk with a rate limit: 256 KiB.
    static let maximumRateLimitedChunkLength = 256 << 10
    /// The smallest chunk, at the slowest rates: 16 KiB.
    static let minimumChunkLength = 16 << 10

    /// The digest a request target names, `.malformed` under the prefix with anything but 64
    /// lowercase hex digits (an encoded dot or slash included), `nil` for any other path.
    enum Target: Equatable {
        case digest(String)
        case malformed
    }

    static func target(of raw: String) -> Target? {
        let path = raw.split(separator: "?", maxSplits: 1, omittingEmptySubsequences: false).first.map(String.init) ?? raw
        guard path.hasPrefix(prefix) else { return nil }
        let digest = path.dropFirst(prefix.count)
        guard digest.utf8.count == 64, digest.utf8.allSatisfy({ (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }) else {
            return .malformed
        }
        return .digest(String(digest))
    }

    func respond(to request: Request, context: ServeContext) async throws -> Response {
        let exchange = Exchange(request: request, context: context, log: log, logger: logger)
        guard request.method == .get || request.method == .head else {
            return exchange.message(.methodNotAllowed, "Only GET and HEAD are served.", headers: [.allow: "GET, HEAD"])
        }
        switch Self.target(of: exchange.entry.target) {
        case nil:
            return exchange.message(.notFound, "Not found: only /odr/v1/sha256/<digest> is served.")
        case .malformed?:
            return exchange.message(.badRequest, "Malformed digest: 64 lowercase hex digits (SHA-256).")
        case .digest(let digest)?:
            guard let content = source.locate(sha256: digest), content.size >= 0, content.size <= Int64(Int.max) else {
                return exchange.message(.notFound, "This store does not hold that content installed.")
            }
            return respond(with: content, digest: digest, to: request, context: context, exchange: exchange)
        }
    }

    private func respond(with content: SharedContent, digest: String, to request: Request, context: ServeContext, exchange: Exchange) -> Response {
        let size = Int(content.size)
        var headers: HTTPFields = [
            .eTag: "\"\(digest)\"",
            .cacheControl: "no-store",
            .acceptRanges: "bytes",
            .contentType: "application/octet-stream",
        ]
        var range = 0...max(0, size - 1)
        var status = HTTPResponse.Status.ok
        switch ByteRangeRequest(header: request.headers[.range], size: size) {
        case .whole:
            break
        case .unsatisfiable:
            return exchange.message(.rangeNotSatisfiable, "No requested range starts inside the content.",
                                    headers: [.contentRange: "bytes */\(size)", .acceptRanges: "bytes"])
        case .ranges(let list):
            // One range is served; several are answered with the whole content (RFC 9110 allows it).
            if list.count == 1 {
                range = list[0]
                status = .partialContent
                headers[.contentRange] = "bytes \(range.lowerBound)-\(range.upperBound)/\(size)"
            }
        }
        let length = size == 0 ? 0 : range.count
        headers[.contentLength] = String(length)
        if request.method == .head || length == 0 {
            return exchange.empty(status, headers: headers, contentLength: length)
        }
        let address = context.channel.remoteAddress?.ipAddress ?? "?"
        guard let slot = slots.acquire(address: address) else {
            return exchange.message(.serviceUnavailable, "Busy: every transfer slot is taken. Try again later, or fetch from the origin.",
                                    headers: [.retryAfter: "1"])
        }
        guard source.isStillShared(content) else {
            return exchange.message(.notFound, "This store does not hold that content installed.")
        }
        let fileRange = (Int(content.offset) + range.lowerBound)...(Int(content.offset) + range.upperBound)
        let (files, rate, source, killed, bytesSent) = (files, rate, source, killed, bytesSent)
        return exchange.stream(status, headers: headers, length: length) { bodyWriter, _ in
            var writer = bodyWriter
            var sent = 0
            do {
                try await files.read(fileRange, ofFileAt: content.file.path) { chunk in
                    // A pack being purged (or a server being killed) stops here, mid-body.
                    guard !killed.withLock({ $0 }), source.isStillShared(content) else { throw ShapedBodyWriter.Interrupted() }
                    try await rate?.take(chunk.readableBytes)
                    try await writer.write(chunk)
                    sent += chunk.readableBytes
                    bytesSent.withLock { $0 = $0.clampedAdding(Int64(chunk.readableBytes)) }
                    exchange.progress(bytesSent: sent)
                }
                guard sent == length else { throw ShapedBodyWriter.Interrupted() }
                try await writer.finish(nil)
                exchange.finish(outcome: .completed, bytesSent: sent)
                withExtendedLifetime(slot) {}
            } catch {
                exchange.finish(outcome: .aborted, bytesSent: sent)
                withExtendedLifetime(slot) {}
                throw error
            }
        }
    }
}

/// A byte rate shared by every transfer (a token bucket): a chunk goes once the schedule has earned
/// its bytes, and time the share spent idle counts, up to ``burstMilliseconds`` of it.
///
/// So a chunk never waits for more than the chunks reserved before it: while one body is sent at
/// the full rate, a new body's first chunk goes about one chunk's time later (8 ms for 256 KiB at
/// the default 32 MiB/s), inside the installer's 25 ms hedge. A schedule that instead let a body
/// reserve 50 ms ahead before it waited made every new body wait those 50 ms behind a running one,
/// and three SuperTuxKart tracks installed from a peer sent the CDN 2.6 to 17.4 MB of about 120 MB;
/// with this one, nothing in eight runs (docs/STORE.md, "Local network peers").
final class RateLimiter: Sendable {
    /// The most idle time credited: the bytes of this many milliseconds may go at once.
    static let burstMilliseconds: Int64 = 50

    let bytesPerSecond: Double
    /// When the bytes reserved so far have been earned.
    private let next = Locked<ContinuousClock.Instant?>(nil)

    init(bytesPerSecond: Double) { self.bytesPerSecond = max(1, bytesPerSecond) }

    /// Waits until `bytes` may be sent.
    func take(_ bytes: Int) async throws {
        let earned = reserve(bytes, at: .now)
        if earned > .now { try await Task.sleep(until: earned, clock: .continuous) }
    }

    /// Reserves `bytes` at `now` and returns when they have been earned (`now` or earlier when the
    /// credit covers them).
    func reserve(_ bytes: Int, at now: ContinuousClock.Instant) -> ContinuousClock.Instant {
        let cost = Duration.nanoseconds(Int64((Double(max(0, bytes)) / bytesPerSecond * 1e9).rounded()))
        let credit = Duration.milliseconds(Self.burstMilliseconds)
        return next.withLock { next -> ContinuousClock.Instant in
            let earned = max(now - credit, next ?? now - credit) + cost
            next = earned
            return earned
        }
    }
}
