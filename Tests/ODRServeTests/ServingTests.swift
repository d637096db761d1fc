#if canImport(Glibc)
import Glibc
#endif
import Foundation
import ODRServe
import ODRTestSupport
import Testing

/// What any HTTP client observes of the static file serving, over real loopback HTTP with curl.
struct ServingTests {
    @Test func fullGetReturnsTheFileBytesWithItsHeaders() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            #expect(response.exitCode == 0)
            #expect(response.status == 200)
            #expect(response.body == SampleCatalog.pack)
            #expect(response.header("Content-Length") == String(SampleCatalog.pack.count))
            #expect(response.header("Content-Type") == "application/zip")
            #expect(response.header("Accept-Ranges") == "bytes")
            #expect(response.header("ETag")?.hasPrefix("\"") == true)
            #expect(response.header("Last-Modified")?.hasSuffix(" GMT") == true)
        }
    }

    @Test func emptyFileIsServedAsAnEmptyBody() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: "empty.bin"))
            #expect(response.status == 200)
            #expect(response.body.isEmpty)
            #expect(response.header("Content-Length") == "0")
        }
    }

    @Test(arguments: [
        ("0-99", 0..<100),
        ("100-", 100..<SampleCatalog.pack.count),
        ("-50", (SampleCatalog.pack.count - 50)..<SampleCatalog.pack.count),
        ("3145000-99999999", 3_145_000..<SampleCatalog.pack.count),
    ])
    func singleRangeIsPartialContent(range: String, expected: Range<Int>) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-r", range])
            #expect(response.status == 206)
            #expect(response.body == SampleCatalog.pack.subdata(in: expected))
            #expect(
                response.header("Content-Range")
                    == "bytes \(expected.lowerBound)-\(expected.upperBound - 1)/\(SampleCatalog.pack.count)"
            )
            #expect(response.header("Content-Length") == String(expected.count))
        }
    }

    @Test func multipleRangesAreAMultipartBodyInTheOrderAsked() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-r", "500-599,0-9,-4"])
            #expect(response.status == 206)
            let contentType = try #require(response.header("Content-Type"))
            #expect(contentType.hasPrefix("multipart/byteranges; boundary="))
            #expect(response.header("Content-Length") == String(response.body.count))
            let boundary = String(contentType.split(separator: "=", maxSplits: 1)[1])
            let parts = try #require(parseByteRanges(response.body, boundary: boundary))
            let size = SampleCatalog.pack.count
            #expect(parts == [
                ByteRangePart(contentRange: "bytes 500-599/\(size)", body: SampleCatalog.pack.subdata(in: 500..<600)),
                ByteRangePart(contentRange: "bytes 0-9/\(size)", body: SampleCatalog.pack.subdata(in: 0..<10)),
                ByteRangePart(contentRange: "bytes \(size - 4)-\(size - 1)/\(size)", body: SampleCatalog.pack.suffix(4)),
            ])
        }
    }

    @Test(arguments: ["5000000-", "3145745-3145800", "-0"])
    func rangeStartingPastTheEndIsNotSatisfiable(range: String) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-r", range])
            #expect(response.status == 416)
            #expect(response.header("Content-Range") == "bytes */\(SampleCatalog.pack.count)")
        }
    }

    @Test(arguments: ["bytes=abc", "items=0-5", "bytes=9-3"])
    func malformedRangeHeaderIsIgnored(header: String) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.smallPackPath), ["-H", "Range: \(header)"])
            #expect(response.status == 200)
            #expect(response.body == SampleCatalog.smallPack)
        }
    }

    @Test func matchingIfNoneMatchIsNotModified() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: "catalog.json")
            let first = try await CurlCommand.fetch(url)
            let etag = try #require(first.header("ETag"))
            let again = try await CurlCommand.fetch(url, ["-H", "If-None-Match: \"other\", \(etag)"])
            #expect(again.status == 304)
            #expect(again.body.isEmpty)
            #expect(again.header("ETag") == etag)
            let stale = try await CurlCommand.fetch(url, ["-H", "If-None-Match: \"other\""])
            #expect(stale.status == 200)
            #expect(stale.body == SampleCatalog.catalogJSON)
        }
    }

    @Test func ifModifiedSinceTheLastModificationIsNotModified() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: "catalog.json")
            let first = try await CurlCommand.fetch(url)
            let lastModified = try #require(first.header("Last-Modified"))
            let response = try await CurlCommand.fetch(url, ["-H", "If-Modified-Since: \(lastModified)"])
            #expect(response.status == 304)
            let older = try await CurlCommand.fetch(url, ["-H", "If-Modified-Since: Sun, 06 Nov 1994 08:49:37 GMT"])
            #expect(older.status == 200)
        }
    }

    @Test func etagIsStableAndChangesWhenTheFileIsReplaced() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, directory in
            let url = server.url(for: "catalog.json")
            let first = try await CurlCommand.fetch(url).header("ETag")
            let second = try await CurlCommand.fetch(url).header("ETag")
            #expect(first != nil)
            #expect(first == second)
            // Publish a new catalog the way odrpack does: write aside, then rename over.
            let replacement = directory.appending("catalog.json.new")
            try Data(#"{"id":"sample","serial":4}"#.utf8).write(to: replacement)
            #expect(rename(replacement.path, directory.appending("catalog.json").path) == 0)
            let third = try await CurlCommand.fetch(url, ["-H", "If-None-Match: \(first ?? "")"])
            #expect(third.status == 200)
            #expect(third.header("ETag") != first)
            #expect(third.body == Data(#"{"id":"sample","serial":4}"#.utf8))
        }
    }

    @Test func aFileThatShrinksWhileItIsSentEndsTheResponseEarly() async throws {
        // Half a MiB a second keeps the 3 MiB pack on the wire for six seconds, long after the cut.
        let conditions = NetworkConditions(bytesPerSecond: 512 * 1024)
        try await withTestServer(files: SampleCatalog.files, conditions: conditions) { server, directory in
            async let fetched = CurlCommand.fetch(server.url(for: SampleCatalog.packPath))
            // Cut the file once the server has announced its full length.
            let deadline = ContinuousClock.now + .seconds(30)
            while server.requests().first?.status != 200, .now < deadline {
                try await Task.sleep(for: .milliseconds(10))
            }
            #expect(truncate(directory.appending(SampleCatalog.packPath).path, 300_000) == 0)
            let response = try await fetched
            #expect(response.exitCode == 18)  // CURLE_PARTIAL_FILE
            #expect(response.header("Content-Length") == String(SampleCatalog.pack.count))
            #expect(response.body.count < SampleCatalog.pack.count)
            #expect(response.body == SampleCatalog.pack.prefix(response.body.count))
        }
    }

    @Test func failedIfMatchIsPreconditionFailed() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: "catalog.json")
            let etag = try #require(try await CurlCommand.fetch(url, ["-I"]).header("ETag"))
            let failed = try await CurlCommand.fetch(url, ["-H", "If-Match: \"old\""])
            #expect(failed.status == 412)
            let matched = try await CurlCommand.fetch(url, ["-H", "If-Match: \(etag)"])
            #expect(matched.status == 200)
        }
    }

    @Test func ifRangeWithAnotherETagSendsTheWholeFile() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: SampleCatalog.packPath)
            let response = try await CurlCommand.fetch(url, ["-r", "100-199", "-H", "If-Range: \"stale-version\""])
            #expect(response.status == 200)
            #expect(response.body == SampleCatalog.pack)
        }
    }

    @Test func ifRangeWithTheCurrentETagOrDateSendsTheRange() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let url = server.url(for: SampleCatalog.packPath)
            let head = try await CurlCommand.fetch(url, ["-I"])
            for validator in [head.header("ETag"), head.header("Last-Modified")] {
                let validator = try #require(validator)
                let response = try await CurlCommand.fetch(url, ["-r", "100-199", "-H", "If-Range: \(validator)"])
                #expect(response.status == 206)
                #expect(response.body == SampleCatalog.pack.subdata(in: 100..<200))
            }
        }
    }

    @Test func headAnnouncesTheLengthWithoutABody() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: SampleCatalog.packPath), ["-I"])
            #expect(response.exitCode == 0)
            #expect(response.status == 200)
            #expect(response.header("Content-Length") == String(SampleCatalog.pack.count))
            // curl -I does not read a body; a raw client sees the connection close right after the head.
            let chunks = try await rawExchange(
                port: server.port,
                request: "HEAD /\(SampleCatalog.packPath) HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
            )
            let received = chunks.reduce(Data(), +)
            let headEnd = try #require(received.range(of: Data("\r\n\r\n".utf8)))
            #expect(headEnd.upperBound == received.endIndex)
            await server.waitUntilIdle()
            #expect(server.requests().last?.method == "HEAD")
            #expect(server.requests().last?.bytesSent == 0)
        }
    }

    @Test(arguments: [
        ("catalog.json", "no-cache"),
        ("versions/7.json", "public, max-age=31536000, immutable"),
        (SampleCatalog.packPath, "public, max-age=31536000, immutable"),
    ])
    func cacheControlFollowsTheFileKind(path: String, expected: String) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: path))
            #expect(response.header("Cache-Control") == expected)
        }
    }

    @Test(arguments: [
        ("catalog.json", "application/json"),
        (SampleCatalog.packPath, "application/zip"),
        ("notes/readme.txt", "text/plain; charset=utf-8"),
        ("empty.bin", "application/octet-stream"),
    ])
    func contentTypeFollowsTheExtension(path: String, expected: String) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: path))
            #expect(response.header("Content-Type") == expected)
        }
    }

    @Test(arguments: ["missing.zip", "packs", "packs/", "versions/8.json"])
    func missingFilesAndDirectoriesAreNotFound(path: String) async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: path))
            #expect(response.status == 404)
        }
    }

    @Test func otherMethodsAreNotAllowed() async throws {
        try await withTestServer(files: SampleCatalog.files) { server, _ in
            let response = try await CurlCommand.fetch(server.url(for: "catalog.json"), ["-X", "DELETE"])
            #expect(response.status == 405)
            #expect(response.header("Allow") == "GET, HEAD")
        }
    }

    @Test func percentEncodedNamesAreServed() async throws {
        try await withTestServer(files: ["Levels/Level 3/map.json": Data("{}".utf8)]) { server, _ in
            let response = try await CurlCommand.fetch(server.baseURL.absoluteString + "Levels/Level%203/map.json")
            #expect(response.status == 200)
            #expect(response.body == Data("{}".utf8))
        }
    }
}
