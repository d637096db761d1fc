import Foundation
import ODRServe
import ODRTestSupport
import Testing

/// Requests that try to read outside the catalog are refused and never see a byte of the target.
struct PathSafetyTests {
    static let secret = "top secret \(UUID().uuidString)"

    @Test(arguments: [
        "/../secret.txt",
        "/packs/../../secret.txt",
        "/%2e%2e/secret.txt",
        "/%2E%2E/%2e%2e/secret.txt",
        "/packs/%2e%2e%2f%2e%2e%2fsecret.txt",
        "/..%2fsecret.txt",
        "/%252e%252e/secret.txt",
        "/outside/secret.txt",
        "/outside-file",
        "/%00secret.txt",
        "/bad%zzescape",
    ])
    func pathsLeadingOutsideAreRefused(target: String) async throws {
        let outside = try TemporaryDirectory(prefix: "odr-outside")
        let catalog = try TemporaryDirectory(prefix: "odr-catalog")
        // The catalog sits next to the secret, so `..` from the root would reach it.
        try Data(Self.secret.utf8).write(to: catalog.url.deletingLastPathComponent().appending(path: "secret.txt"))
        defer { try? FileManager.default.removeItem(at: catalog.url.deletingLastPathComponent().appending(path: "secret.txt")) }
        try Data(Self.secret.utf8).write(to: outside.appending("secret.txt"))
        try Data("inside".utf8).write(to: catalog.appending("inside.txt"))
        try FileManager.default.createSymbolicLink(at: catalog.appending("outside"), withDestinationURL: outside.url)
        try FileManager.default.createSymbolicLink(
            at: catalog.appending("outside-file"), withDestinationURL: outside.appending("secret.txt"))

        try await withTestServer(root: catalog.url) { server in
            let url = "http://127.0.0.1:\(server.port)\(target)"
            let response = try await CurlCommand.fetch(url, ["--path-as-is"])
            #expect([400, 403, 404].contains(response.status), "\(target) gave \(response.status)")
            #expect(!String(decoding: response.body, as: UTF8.self).contains(Self.secret))
        }
    }

    @Test func symbolicLinksInsideTheCatalogAreFollowed() async throws {
        let catalog = try TemporaryDirectory(prefix: "odr-catalog")
        try FileManager.default.createDirectory(at: catalog.appending("real"), withIntermediateDirectories: true)
        try Data("inside".utf8).write(to: catalog.appending("real/file.txt"))
        try FileManager.default.createSymbolicLink(at: catalog.appending("alias"), withDestinationURL: catalog.appending("real"))
        try await withTestServer(root: catalog.url) { server in
            let response = try await CurlCommand.fetch(server.url(for: "alias/file.txt"))
            #expect(response.status == 200)
            #expect(response.body == Data("inside".utf8))
        }
    }
}
