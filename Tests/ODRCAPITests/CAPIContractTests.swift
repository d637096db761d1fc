import CODR
import Foundation
import ODRFormat
@testable import ODRCAPI
import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// The C API's contract checked from C (Tests/ODRCAPITests/C/api_checks.c), and its status codes
/// checked against the Swift runtime's.
@Suite(.enabled(if: builtLibrary(product: "odrc") != nil, "libodrc.so is not built"))
struct CAPIContractTests {
    @Test func badInputFromCIsADocumentedCodeAndRequestsFollowTheirStates() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-checks")
        let catalog = try await CProgram.sampleCatalog(in: directory)
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/api_checks.c", in: directory)
        // Slow enough that a begin can be seen requested, cancelled and timed out.
        let conditions = NetworkConditions(bytesPerSecond: 100_000)
        let result = try await withTestServer(root: catalog, conditions: conditions) { server in
            try await runCommandOffPool(checks.path, [server.baseURL.absoluteString, directory.appending("store").path])
        }
        let lines = CProgram.checkedLines(result, of: "api_checks")
        for name in ["a NULL tag list", "an empty tag list", "a tag that is not UTF-8", "beginning an unknown tag",
                     "a buffer too small", "begin after end", "a path after end", "end after end",
                     "a begin whose timeout passes first", "a cancelled begin completes with ODR_E_CANCELLED",
                     "another thread's error is not this thread's",
                     "a NaN likelihood", "a likelihood above 1", "a hint of an unknown tag",
                     "the hint installed level3 (a tag-available event)", "the hint prefetched level3 (nothing left to download)",
                     "ending a hint leaves what it installed", "level3 begins at once after its hint ended"] {
            #expect(lines.contains("ok \(name)"), "missing check: \(name)")
        }
    }

    @Test func aVariantChoiceFromCGetsItsFilesAndDownloadsOnlyItsPacks() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-variants")
        let game = try CatalogFixture.variantGame()
        try await game.build()
        let manifest = try game.manifest(1)
        let chosen = manifest.packs.filter { $0.variant.isEmpty || $0.variant == ["resolution": "2x"] || $0.variant == ["texture": "etc2"] }
        #expect(chosen.count == 4, "common, tree@2x.png's 2x pack, banner.png's own 2x pack (it has no 1x), ETC2")
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/variant_checks.c", in: directory)
        let result = try await withTestServer(root: game.catalog) { server in
            try await runCommandOffPool(checks.path, [server.baseURL.absoluteString, directory.appending("store").path,
                                                      game.assets.appending(path: "Forest/tree@2x.png").path])
        }
        let lines = CProgram.checkedLines(result, of: "variant_checks")
        #expect(lines.contains("download-size \(chosen.reduce(0) { $0 + $1.archiveBytes })"), "only the chosen packs count")
        #expect(Set(try ResourceStore(directory: directory.appending("store")).installedPackIDs()) == Set(chosen.map(\.id)))
    }

    @Test func aSplitCatalogDescribesATagForCBeforeItsSizeIsKnown() async throws {
        let directory = try TemporaryDirectory(prefix: "odr-c-describe")
        let game = try CatalogFixture.game(bigBytes: 200_000)
        try await game.build(splitMetadata: true)
        let bigPacks = try game.manifest(1).packs.filter { $0.tags.contains("big") }
        let checks = try await CProgram.build("Tests/ODRCAPITests/C/describe_checks.c", in: directory)
        // Every request takes 300 ms, so a 50 ms timeout passes before the tag's bin arrives.
        let result = try await withTestServer(root: game.catalog, conditions: NetworkConditions(latency: .milliseconds(300))) { server in
            try await runCommandOffPool(checks.path, [server.baseURL.absoluteString, directory.appending("store").path])
        }
        let lines = CProgram.checkedLines(result, of: "describe_checks")
        #expect(lines.filter { $0.hasPrefix("ok ") }.count == 17)
        #expect(lines.contains("download-size big \(bigPacks.reduce(0) { $0 + $1.archiveBytes })"), "the described tag's packs")
        #expect(try ResourceStore(directory: directory.appending("store")).installedPackIDs().isEmpty, "describing downloads no pack")
    }

    @Test func everySwiftErrorCodeHasItsOwnCStatus() throws {
        // Every `ResourceError.Code` declared in the runtime's sources, as they are today: a code added
        // without a C counterpart fails here.
        let sources = CProgram.packageRoot.appending(path: "Sources/ODRRuntime")
        let pattern = /static let \w+ = (?:ResourceError\.)?Code\(rawValue: "([a-z0-9-]+)"\)/
        var swiftCodes = Set<String>()
        let files = try #require(FileManager.default.enumerator(at: sources, includingPropertiesForKeys: nil))
        for case let file as URL in files where file.pathExtension == "swift" {
            let text = try String(contentsOf: file, encoding: .utf8)
            guard text.contains("ResourceError") else { continue }
            // Only ResourceError's codes: other error types of the runtime have codes of their own.
            let isResourceErrorCode = text.contains("extension ResourceError.Code") || file.lastPathComponent == "ResourceError.swift"
            guard isResourceErrorCode else { continue }
            for match in text.matches(of: pattern) { swiftCodes.insert(String(match.1)) }
        }
        #expect(swiftCodes.count >= 23)

        // The statuses odr.h declares, by name, through the C API itself.
        let header = try String(contentsOf: CProgram.includeDirectory.appending(path: "odr.h"), encoding: .utf8)
        let declared = header.matches(of: /\b(ODR_(?:OK|E_[A-Z_]+)) = (\d+)/).compactMap { match in UInt32(match.2).map { (String(match.1), $0) } }
        var names: [String: String] = [:]
        for (constant, value) in declared {
            let name = String(cString: odr_status_name(odr_status(rawValue: value)))
            #expect(name != "unknown-status", "\(constant) has no name")
            #expect(names[name] == nil, "\(constant) and \(names[name] ?? "") share the name \(name)")
            names[name] = constant
        }
        for code in swiftCodes.sorted() {
            #expect(names[code] != nil, "ResourceError code \(code) has no C status in odr.h")
            // And a Swift error with that code reaches C as that status.
            let (status, _) = CLastError.describe(ResourceError(.init(rawValue: code), "probe"))
            #expect(String(cString: odr_status_name(status)) == code)
        }
    }
}
