import Foundation
import ODRFormat
import ODRRuntime
import ODRTestSupport
import Testing

/// `file://` URLs (bundled or local catalogs) go through the same engine as HTTP.
struct FileURLTransferTests {
    @Test func copiesAFileURLIntoAFileSink() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.appending("source.bin")
        let body = deterministicBytes(count: 3 * 1024 * 1024 + 17, seed: 1)
        try body.write(to: source)
        let engine = try TransferEngine()
        let destination = directory.appending("copy.bin")
        var request = TransferRequest(url: source)
        request.expectedSize = Int64(body.count)
        request.expectedSHA256 = ContentHash.sha256Hex(of: body)

        let result = try await engine.download(request, into: FileSink(url: destination))

        #expect(result.outcome == .downloaded)
        #expect(result.bytes == Int64(body.count))
        #expect(result.sha256 == ContentHash.sha256Hex(of: body))
        #expect(try Data(contentsOf: destination) == body)
    }

    @Test func missingFileIsResourceUnavailable() async throws {
        let directory = try TemporaryDirectory()
        let engine = try TransferEngine()
        let sink = RecordingSink()
        let error = await #expect(throws: ResourceError.self) {
            try await engine.download(TransferRequest(url: directory.appending("absent.zip")), into: sink)
        }
        #expect(error?.code == .resourceUnavailable)
        #expect(sink.failure?.code == .resourceUnavailable)
    }

    @Test func wrongHashIsAnIntegrityErrorAndTheFileIsRemoved() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.appending("source.bin")
        try deterministicBytes(count: 100_000, seed: 2).write(to: source)
        let destination = directory.appending("copy.bin")
        var request = TransferRequest(url: source)
        request.expectedSHA256 = String(repeating: "0", count: 64)
        let engine = try TransferEngine()

        let error = await #expect(throws: ResourceError.self) {
            try await engine.download(request, into: FileSink(url: destination))
        }
        #expect(error?.code == .integrity)
        #expect(!FileManager.default.fileExists(atPath: destination.path))
    }

    @Test func wrongSizeIsAnIntegrityError() async throws {
        let directory = try TemporaryDirectory()
        let source = directory.appending("source.bin")
        try deterministicBytes(count: 1000, seed: 3).write(to: source)
        let engine = try TransferEngine()
        for expected: Int64 in [999, 1001] {
            var request = TransferRequest(url: source)
            request.expectedSize = expected
            let error = await #expect(throws: ResourceError.self) {
                try await engine.download(request, into: RecordingSink())
            }
            #expect(error?.code == .integrity)
        }
    }
}
