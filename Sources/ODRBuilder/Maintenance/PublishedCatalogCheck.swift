import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import ODRFormat

/// Checks a published catalog through its public URL, as a client would reach it: `catalog.json`
/// must be the one just published, and every pack and manifest it names must answer.
///
/// What it finds is a *stale edge*: a CDN node still serving an older `catalog.json` (its max-age
/// has not run out), or one that answers 404 for a new pack (a negative answer cached before the
/// upload). Clients cope (docs/HOSTING.md), but the report says how long until all of them see the
/// new version.
///
/// ```swift
/// let check = PublishedCatalogCheck(baseURL: URL(string: "https://cdn.example.com/game/")!,
///                                   expected: try publisher.objects())
/// let report = await check.run()
/// for problem in report.problems { print(problem) }
/// ```
public struct PublishedCatalogCheck: Sendable {
    /// The public base URL (the folder of `catalog.json`).
    public var baseURL: URL
    /// The files just published (``CatalogPublisher/objects()``).
    public var expected: [CatalogPublisher.Object]
    /// How many HEAD requests run at once.
    public var concurrency = 8
    /// How long one request may take.
    public var timeout: TimeInterval = 30

    public init(baseURL: URL, expected: [CatalogPublisher.Object]) {
        var text = baseURL.absoluteString
        if text.hasSuffix("/" + CatalogIndex.fileName) { text.removeLast(CatalogIndex.fileName.count) }
        if !text.hasSuffix("/") { text += "/" }
        self.baseURL = URL(string: text) ?? baseURL
        self.expected = expected
    }

    /// What the public URL serves.
    public struct Report: Sendable, Hashable {
        /// Whether `catalog.json` through the URL is byte for byte the published one.
        public var catalogIsCurrent: Bool
        /// Its serial when it decodes, else `nil`.
        public var servedSerial: Int?
        /// The `Cache-Control` it was served with, if any.
        public var catalogCacheControl: String?
        /// Files that did not answer 200: path and HTTP status (0 when no answer came).
        public var missing: [Missing]
        /// Files checked with HEAD.
        public var checked: Int

        public struct Missing: Sendable, Hashable, CustomStringConvertible {
            public var path: String
            public var status: Int

            public init(path: String, status: Int) {
                self.path = path
                self.status = status
            }

            public var description: String { status == 0 ? "\(path): no answer" : "\(path): HTTP \(status)" }
        }

        /// Problems in words, empty when everything is current.
        public var problems: [String] {
            var lines: [String] = []
            if !catalogIsCurrent {
                lines.append("catalog.json through the URL is not the published one (serial \(servedSerial.map(String.init) ?? "unreadable")): a stale edge or cache; it clears within the catalog's max-age")
            }
            lines += missing.map { "\($0) (a stale edge, or the upload did not reach this origin)" }
            return lines
        }
    }

    /// The `User-Agent` of the check's requests: `odrpack/<release> (swift-odr)`.
    public static let userAgent = ODRVersion.userAgent("odrpack")

    /// Fetches `catalog.json` and sends HEAD for every other file.
    public func run() async -> Report {
        let configuration = URLSessionConfiguration.ephemeral
        // Foundation's default on Linux is "odrpack (unknown version)": say which release asks,
        // for the server's logs.
        configuration.httpAdditionalHeaders = ["User-Agent": Self.userAgent]
        let session = URLSession(configuration: configuration)
        defer { session.finishTasksAndInvalidate() }
        let index = expected.first { $0.kind == .index }
        var report = Report(catalogIsCurrent: false, servedSerial: nil, catalogCacheControl: nil, missing: [], checked: 0)
        var request = URLRequest(url: baseURL.appending(path: CatalogIndex.fileName), timeoutInterval: timeout)
        request.httpMethod = "GET"
        request.setValue(Self.userAgent, forHTTPHeaderField: "User-Agent")
        if let (data, response) = try? await session.data(for: request), let http = response as? HTTPURLResponse {
            report.catalogCacheControl = http.value(forHTTPHeaderField: "Cache-Control")
            if http.statusCode == 200 {
                report.catalogIsCurrent = index.map { ContentHash.sha256Hex(of: data) == $0.sha256 } ?? false
                report.servedSerial = try? CatalogIndex.decode(from: data).serial
            } else {
                report.missing.append(.init(path: CatalogIndex.fileName, status: http.statusCode))
            }
        } else {
            report.missing.append(.init(path: CatalogIndex.fileName, status: 0))
        }
        let files = expected.filter { $0.kind != .index }.map(\.path)
        let missing = await withTaskGroup(of: Report.Missing?.self) { group in
            var queue = files[...]
            var found: [Report.Missing] = []
            func next() {
                guard let path = queue.popFirst() else { return }
                group.addTask { await head(path, session: session) }
            }
            for _ in 0..<max(1, concurrency) { next() }
            while let result = await group.next() {
                if let result { found.append(result) }
                next()
            }
            return found
        }
        report.missing += missing.sorted { $0.path < $1.path }
        report.checked = files.count
        return report
    }

    private func head(_ path: String, session: URLSession) async -> Report.Missing? {
        var request = URLRequest(url: baseURL.appending(path: path), timeoutInterval: timeout)
        request.httpMethod = "HEAD"
        request.setValue(Self.userAgent, forHTTPHeaderField: "User-Agent")
        guard let (_, response) = try? await session.data(for: request), let http = response as? HTTPURLResponse else {
            return .init(path: path, status: 0)
        }
        return http.statusCode == 200 ? nil : .init(path: path, status: http.statusCode)
    }
}
