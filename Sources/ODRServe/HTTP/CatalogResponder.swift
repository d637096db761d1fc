import Hummingbird
import Logging
import NIOCore

/// Answers every request of the catalog server: conditioning first, then static files with
/// validators, conditional requests and byte ranges.
struct CatalogResponder: HTTPResponder {
    typealias Context = ServeContext

    let root: CatalogRoot
    let conditioner: Conditioner
    let log: RequestLog
    let logger: Logger
    let files = FileReader(chunkLength: Self.chunkLength)

    /// Bytes read from disk at a time: large enough that a 512 MiB pack costs few hops to the
    /// file thread pool, small enough that memory stays flat.
    static let chunkLength = 256 * 1024

    func respond(to request: Request, context: ServeContext) async throws -> Response {
        let exchange = Exchange(request: request, context: context, log: log, logger: logger)
        let target = exchange.entry.target
        let decodedPath = CatalogRoot.segments(ofTarget: target).map { "/" + $0.joined(separator: "/") } ?? target
        var conditioning = conditioner.admit(
            key: "\(request.method.rawValue) \(target) \(exchange.entry.range ?? "")",
            path: decodedPath
        )
        exchange.entry.faults = conditioning.applied

        if conditioning.delay > .zero {
            do {
                try await Task.sleep(for: conditioning.delay)
            } catch {
                exchange.finish(outcome: .aborted)
                throw error
            }
        }
        if conditioning.dropsConnection {
            // Closing before any byte of the response: the client sees the connection end.
            context.channel.close(promise: nil)
            exchange.finish(outcome: .aborted)
            return Response(status: .serviceUnavailable, body: ResponseBody { _ in throw ShapedBodyWriter.Interrupted() })
        }
        if let status = conditioning.failStatus {
            return exchange.message(
                HTTPResponse.Status(code: status),
                "Injected failure (odrpack serve network conditioner): retry later.",
                headers: [.cacheControl: "no-store"]
            )
        }
        guard request.method == .get || request.method == .head else {
            return exchange.message(.methodNotAllowed, "Only GET and HEAD are served.", headers: [.allow: "GET, HEAD"])
        }
        switch root.resolve(target: target) {
        case .badRequest:
            return exchange.message(.badRequest, "Malformed request path.")
        case .forbidden:
            return exchange.message(.forbidden, "Outside the catalog.")
        case .notFound:
            return exchange.message(.notFound, "No such file in the catalog.")
        case .file(let entity):
            return respond(with: entity, to: request, exchange: exchange, conditioning: &conditioning)
        }
    }

    private func respond(
        with entity: FileEntity,
        to request: Request,
        exchange: Exchange,
        conditioning: inout RequestConditioning
    ) -> Response {
        var headers: HTTPFields = [
            .eTag: entity.etag,
            .lastModified: HTTPDate.format(entity.modifiedSeconds),
            .cacheControl: Self.cacheControl(forFileNamed: entity.name),
            .acceptRanges: "bytes",
        ]
        if let precondition = Preconditions(request.headers).evaluate(for: entity) {
            if precondition == .preconditionFailed {
                return exchange.message(.preconditionFailed, "The file changed (If-Match).")
            }
            return exchange.empty(.notModified, headers: headers)
        }
        var ranges = ByteRangeRequest(header: request.headers[.range], size: entity.size)
        if ranges != .whole, let ifRange = request.headers[.ifRange], !Preconditions.ifRange(ifRange, matches: entity) {
            ranges = .whole  // The client's partial copy is of another version: send the new one whole.
        }
        let contentType = ContentType.forFile(named: entity.name)
        let layout: BodyLayout
        let status: HTTPResponse.Status
        switch ranges {
        case .whole:
            status = .ok
            headers[.contentType] = contentType
            layout = .whole(size: entity.size)
        case .unsatisfiable:
            return exchange.message(
                .rangeNotSatisfiable,
                "No requested range starts inside the file.",
                headers: [.contentRange: "bytes */\(entity.size)", .acceptRanges: "bytes"]
            )
        case .ranges(let list) where list.count == 1:
            status = .partialContent
            headers[.contentType] = contentType
            headers[.contentRange] = "bytes \(list[0].lowerBound)-\(list[0].upperBound)/\(entity.size)"
            layout = .single(list[0])
        case .ranges(let list):
            status = .partialContent
            let multipart = MultipartByteRanges(ranges: list, size: entity.size, contentType: contentType)
            headers[.contentType] = multipart.contentType
            layout = .multipart(multipart)
        }
        headers[.contentLength] = String(layout.length)
        if request.method == .head {
            return exchange.empty(status, headers: headers, contentLength: layout.length)
        }
        let shaping = conditioner.shapeBody(of: &conditioning, length: layout.length)
        exchange.entry.faults = conditioning.applied
        return exchange.stream(status, headers: headers, length: layout.length) { writer, context in
            let shaped = ShapedBodyWriter(parent: writer, shaping: shaping, channel: context.channel) { sent in
                exchange.progress(bytesSent: sent)
            }
            do {
                for part in layout.parts {
                    if let header = part.header {
                        try await shaped.write(ByteBuffer(string: header))
                    }
                    if let range = part.range {
                        try await files.read(range, ofFileAt: entity.path) { try await shaped.write($0) }
                    }
                }
                guard shaped.bytesSent == layout.length else {
                    // The file shrank since it was measured: close rather than leave the client
                    // waiting for bytes that will never come.
                    throw ShapedBodyWriter.Interrupted()
                }
                try await shaped.end()
                exchange.finish(outcome: .completed, bytesSent: shaped.bytesSent)
            } catch {
                exchange.finish(outcome: .aborted, bytesSent: shaped.bytesSent)
                throw error
            }
        }
    }

    /// `catalog.json` is the one file that changes; everything else is content-addressed or versioned.
    static func cacheControl(forFileNamed name: Substring) -> String {
        name == "catalog.json" ? "no-cache" : "public, max-age=31536000, immutable"
    }
}
