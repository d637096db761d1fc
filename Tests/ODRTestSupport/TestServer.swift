import Foundation
import Logging
import ODRFormat
import ODRServe

/// Runs `body` with a ``CatalogServer`` serving `root` on a free loopback port, and stops the
/// server afterwards, whether `body` returns or throws.
///
/// The server logs nothing unless the environment variable `ODR_TEST_SERVER_LOG` is set (to a
/// level such as `info` or `debug`), so test output stays readable.
///
/// ```swift
/// try await withTestServer(root: catalog.url) { server in
///     server.injectFaults(.status(503), count: 2, path: "/catalog.json")
///     let data = try await fetch(server.url(for: "catalog.json"))
///     await server.waitUntilIdle()
///     #expect(server.requests().map(\.status) == [503, 503, 200])
/// }
/// ```
public func withTestServer<T>(
    root: URL,
    conditions: NetworkConditions = .perfect,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CatalogServer) async throws -> T
) async throws -> T {
    let server = try await CatalogServer.start(root: root, conditions: conditions, logger: testServerLogger())
    do {
        let result = try await body(server)
        await server.stop()
        return result
    } catch {
        await server.stop()
        throw error
    }
}

/// Runs `body` with a ``CatalogServer`` serving `files` (relative path to contents) from a fresh
/// temporary directory, and stops the server and removes the directory afterwards.
///
/// ```swift
/// try await withTestServer(files: ["packs/a.zip": deterministicBytes(count: 1 << 20, seed: 1)]) { server, directory in
///     // fetch server.url(for: "packs/a.zip"), or add files to directory.url while it runs
/// }
/// ```
public func withTestServer<T>(
    files: [String: Data],
    conditions: NetworkConditions = .perfect,
    isolation: isolated (any Actor)? = #isolation,
    _ body: (CatalogServer, TemporaryDirectory) async throws -> T
) async throws -> T {
    let directory = try TemporaryDirectory(prefix: "odr-served")
    for (path, contents) in files {
        let url = directory.appending(path)
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try contents.write(to: url)
    }
    return try await withTestServer(root: directory.url, conditions: conditions) { server in
        try await body(server, directory)
    }
}

/// The logger test servers use: silent unless `ODR_TEST_SERVER_LOG` names a level.
public func testServerLogger() -> Logger {
    let level = ProcessInfo.processInfo.environment["ODR_TEST_SERVER_LOG"].flatMap { Logger.Level(rawValue: $0) }
    guard let level else {
        return Logger(label: "odr.test-server") { _ in SwiftLogNoOpLogHandler() }
    }
    var logger = Logger(label: "odr.test-server") { StreamLogHandler.standardError(label: $0) }
    logger.logLevel = level
    return logger
}

/// `count` bytes that look random but are the same for the same `seed`: file contents whose
/// corruption or truncation a test can detect, reproducible across runs.
public func deterministicBytes(count: Int, seed: UInt64) -> Data {
    var generator = SeededGenerator(seed: seed)
    var bytes: [UInt8] = []
    bytes.reserveCapacity(count + 8)
    while bytes.count < count {
        let word = generator.next()
        for shift in stride(from: 0, to: 64, by: 8) { bytes.append(UInt8(truncatingIfNeeded: word >> UInt64(shift))) }
    }
    return Data(bytes.prefix(count))
}
