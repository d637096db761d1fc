import Foundation
@testable import ODRFormat
import Testing

/// `catalog.json` and manifests mean one thing to every reader: no duplicate keys, and a
/// manifest path that can only name a file inside the catalog.
struct CatalogJSONStrictnessTests {
    static let digest = String(repeating: "d", count: 64)

    static func catalogJSON(manifest: String = "versions/1.json", extra: String = "") -> Data {
        Data("""
            {"formatVersion": 1, "id": "game", "serial": 3\(extra), "distributions": {"live": 1},
             "versions": [{"number": 1, "manifest": "\(manifest)", "sha256": "\(digest)", "size": 10}]}
            """.utf8)
    }

    @Test func aValidCatalogDecodes() throws {
        let index = try CatalogIndex.decode(from: Self.catalogJSON())
        #expect(index.serial == 3)
        #expect(index.versions.first?.manifest == "versions/1.json")
    }

    // MARK: Duplicate keys

    @Test(arguments: [
        (#", "serial": 9"#, "serial"),
        // The same key spelled with an escape is the same key.
        (#", "seri\u0061l": 9"#, "serial"),
    ])
    func aDuplicateTopLevelKeyIsRefused(extra: String, field: String) throws {
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: Self.catalogJSON(extra: extra)) }
        #expect(error?.code == .duplicate, "\(String(describing: error))")
        #expect(error?.field == field)
    }

    @Test func aDuplicateNestedKeyIsRefusedNamingItsPath() throws {
        let data = Data("""
            {"formatVersion": 1, "id": "game", "serial": 3, "distributions": {"live": 1, "live": 2},
             "versions": [{"number": 1, "manifest": "versions/1.json"}, {"number": 2, "manifest": "versions/2.json", "number": 3}]}
            """.utf8)
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: data) }
        #expect(error?.code == .duplicate)
        #expect(error?.field == "distributions.live")

        let second = Data("""
            {"formatVersion": 1, "id": "game", "serial": 3, "distributions": {"live": 1},
             "versions": [{"number": 1, "manifest": "versions/1.json"}, {"number": 2, "manifest": "versions/2.json", "number": 3}]}
            """.utf8)
        let nested = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: second) }
        #expect(nested?.code == .duplicate)
        #expect(nested?.field == "versions[1].number")
    }

    @Test func aDuplicateKeyInAManifestFileIsRefused() throws {
        let text = String(decoding: try sampleManifest().encoded(), as: UTF8.self)
        // The second file record gets its pack twice: Swift would keep one, Python the other.
        let duplicated = text.replacingOccurrences(of: "\"path\" : \"Shared/rock.png\"", with: "\"path\" : \"Shared/rock.png\", \"pack\" : \"\(String(repeating: "a", count: 64))\"")
        #expect(duplicated != text)
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: Data(duplicated.utf8)) }
        #expect(error?.code == .duplicate)
        #expect(error?.field == "files[1].pack")
    }

    /// Equal keys in different objects, keys that only look alike, and strings holding quotes,
    /// braces and escapes are not duplicates.
    @Test func keysOfDifferentObjectsAndTrickyStringsAreNotDuplicates() throws {
        let data = Data(#"""
            {"formatVersion": 1, "id": "g\"a{m}e\\", "serial": 3, "distributions": {"live": 1, "Live": 1, "li\\ve": 1, "\ud83d\ude00": 1},
             "versions": [{"number": 1, "manifest": "versions/1.json"}, {"number": 2, "manifest": "versions/2.json"}]}
            """#.utf8)
        let index = try CatalogIndex.decode(from: data)
        #expect(index.id == #"g"a{m}e\"#)
        #expect(index.distributions.count == 4)
    }

    @Test(arguments: ["{", #"{"a": 1"#, #"{"a" 1}"#, #"{"a": 1,}"#, "[1 2]", #"{"a": "unterminated}"#, #"{} {}"#])
    func textThatIsNotJSONIsMalformed(text: String) throws {
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: Data(text.utf8)) }
        #expect(error?.code == .malformedJSON, "\(String(describing: error))")
    }

    @Test func deepNestingIsMalformedWithoutExhaustingTheStack() throws {
        let text = String(repeating: "[", count: 100_000) + String(repeating: "]", count: 100_000)
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: Data(text.utf8)) }
        #expect(error?.code == .malformedJSON)
    }

    /// The check reads a manifest of 100,000 files in a fraction of the time decoding it takes.
    @Test func aLargeManifestIsCheckedQuickly() throws {
        var manifest = sampleManifest()
        let file = manifest.files[1]
        manifest.files = (0..<100_000).map { i in
            var copy = file
            copy.path = "Shared/\(i).png"
            copy.entry = copy.path
            return copy
        }
        manifest.packs[1].entryCount = 100_000
        let data = try JSONEncoder().encode(manifest)
        let clock = ContinuousClock()
        let elapsed = try clock.measure { _ = try VersionManifest.decode(from: data) }
        #expect(elapsed < .seconds(60), "\(elapsed)")
    }

    // MARK: Manifest paths

    @Test(arguments: [
        "http:/other-host/versions/1.json",
        "https://other-host/versions/1.json",
        "file:/etc/passwd",
        "file:///tmp/fifo",
        "versions/%2e%2e/%2e%2e/secret.json",
        "versions/%2E%2E/x.json",
        "%2fetc/passwd",
        "/versions/1.json",
        "versions/../1.json",
        "./versions/1.json",
        "versions//1.json",
        "versions\\1.json",
        "versions/1.json?x=1",
        "versions/1.json#x",
        "versions/1 2.json",
    ])
    func aManifestPathOutsideTheCatalogIsAnInvalidPath(path: String) throws {
        let json = Self.catalogJSON(manifest: path.replacingOccurrences(of: "\\", with: "\\\\"))
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: json) }
        #expect(error?.code == .invalidPath, "\(path): \(String(describing: error))")
        #expect(error?.field == "versions[0].manifest")
        #expect(RelativePath.problem(inCatalogPath: path) != nil)
    }

    @Test(arguments: ["versions/1.json", "v-2/1_a~b.json", "manifest.json"])
    func aPlainRelativeManifestPathIsAccepted(path: String) throws {
        #expect(try CatalogIndex.decode(from: Self.catalogJSON(manifest: path)).versions[0].manifest == path)
    }

    /// The decoder holds every value of a text at once: a text denser in values than any catalog
    /// (bare numbers) is refused on its count, in the pass that checks the keys, before anything
    /// is decoded (before, 32 MiB of `0,` took 838 MiB to refuse). Real text of that size passes.
    @Test func moreValuesThanTheTextsSizeAllowsAreRefusedBeforeDecoding() throws {
        let count = JSONKeyCheck.maximumValueCount(forBytes: 2_500_000) + 1
        var text = Data(#"{"catalogID":"x","files":["#.utf8)
        text.reserveCapacity(2 * count + 200)
        for i in 0..<count { text += i == 0 ? Data("0".utf8) : Data(",0".utf8) }
        text += Data(#"]}"#.utf8)
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: text) }
        #expect(error?.code == .sizeMismatch && error?.field == "maximumValueCount")
        #expect(error?.message.contains("JSONKeyCheck.maximumValueCount") == true)
        #expect(JSONKeyCheck.maximumValueCount(forBytes: 32 << 20) > (32 << 20) / 20)
    }
}
