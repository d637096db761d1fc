import Foundation
import ODRFormat
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Sharing a store from C (Tests/ODRCAPITests/C/share_checks.c): a C program shares the store of a
/// manager that installed tags from CDN A, and a second manager, with the share as its peer,
/// installs the same tags while CDN B sends it no pack bytes; every bad argument is a code.
@Suite(.enabled(if: builtLibrary(product: "odrc") != nil, "libodrc.so is not built"))
struct CShareTests {
    @Test func aCProgramSharesItsStoreAndASecondManagerInstallsFromIt() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-share")
        let catalog = try await CProgram.sampleCatalog(in: directory)
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/share_checks.c", in: directory)
        let storeA = directory.appending("store-a"), storeB = directory.appending("store-b")
        let (result, fromCDNB) = try await withTestServer(root: catalog) { cdnA in
            try await withTestServer(root: catalog) { cdnB in
                let result = try await runCommandOffPool(checks.path, [cdnA.baseURL.absoluteString, cdnB.baseURL.absoluteString,
                                                                       storeA.path, storeB.path])
                return (result, cdnB.requests())
            }
        }
        let lines = CProgram.checkedLines(result, of: "share_checks")
        for name in ["sharing a NULL manager", "zero transfers at once", "a rate of zero bytes per second", "a port above 65535",
                     "a port another share holds", "the URL names the host and the port", "the second manager installs level1-3",
                     "stopping a share twice", "the port of a stopped share", "stop a share after its manager was destroyed",
                     "odr_shutdown while a share is alive", "odr_shutdown once every share is destroyed",
                     "discovering peers is 0 or 1", "a discovery timeout under 100 ms"] {
            #expect(lines.contains("ok \(name)"), "missing check: \(name)")
        }

        // B holds what A holds, and CDN B sent none of its packs' bytes: the share did.
        let installedA = try ResourceStore(directory: storeA).installedPackIDs()
        let installedB = try ResourceStore(directory: storeB).installedPackIDs()
        #expect(!installedB.isEmpty && installedB == installedA)
        let packBytes = try installedB.reduce(Int64(0)) { total, id in
            total + Int64(try Data(contentsOf: catalog.appending(path: "packs/\(id).zip")).count)
        }
        let cdnPackBytes = fromCDNB.filter { $0.target.contains("/packs/") }.reduce(0) { $0 + $1.bytesSent }
        let logB = try ResourceStore(directory: storeB).events().map { "\($0.kind) \($0.reason)" }
        #expect(cdnPackBytes == 0, "CDN B sent \(cdnPackBytes) pack bytes of \(packBytes): \(fromCDNB.filter { $0.target.contains("/packs/") }.map { "\($0.target) \($0.range ?? "") \($0.bytesSent)" }) \(logB)")
        let sent = try #require(lines.first { $0.hasPrefix("share-sent ") }.flatMap { Int64($0.dropFirst("share-sent ".count)) })
        #expect(sent > 0, "the share sent the files B installed (packs of \(packBytes) bytes)")

        // The file B reads is the sample game's.
        let path = try #require(lines.first { $0.hasPrefix("path ") }.map { String($0.dropFirst("path ".count)) })
        #expect(path.hasPrefix(storeB.path))
        let original = try Data(contentsOf: CProgram.packageRoot.appending(path: "SampleAssets/Levels/Level3/map.json"))
        #expect(try Data(contentsOf: URL(filePath: path)) == original)

        // ODR_OPT_DISCOVER_PEERS reached the manager: A browsed (and, with no Avahi here, went on).
        #expect(try ResourceStore(directory: storeA).events().contains { $0.kind == .discovery })
    }
}
