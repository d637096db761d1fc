import Foundation
import ODRFormat
import Testing

/// A small valid manifest that tests then break one field at a time.
func sampleManifest() -> VersionManifest {
    let packA = String(repeating: "a", count: 64)
    let packB = String(repeating: "b", count: 64)
    let hash = String(repeating: "c", count: 64)
    return VersionManifest(
        catalogID: "sample", version: 1,
        tags: [
            TagRecord(name: "level1", preservationPriority: 0.5, packs: [packA, packB], downloadBytes: 300, installedBytes: 400),
            TagRecord(name: "level2", preservationPriority: 0, packs: [packB], downloadBytes: 100, installedBytes: 100),
        ],
        initialInstallTags: ["level1"], prefetchOrder: ["level2"],
        packs: [
            PackRecord(id: packA, tags: ["level1"], archiveBytes: 200, installedBytes: 300, entryCount: 1),
            PackRecord(id: packB, tags: ["level1", "level2"], archiveBytes: 100, installedBytes: 100, entryCount: 1),
        ],
        files: [
            FileRecord(path: "Levels/1/map.json", pack: packA, entry: "Levels/1/map.json", sha256: hash, storedSize: 150, size: 300, headerOffset: 0, method: .deflate),
            FileRecord(path: "Shared/rock.png", pack: packB, entry: "Shared/rock.png", sha256: hash, storedSize: 60, size: 60, headerOffset: 0, method: .stored),
        ])
}

struct ManifestValidationTests {
    @Test func validManifestRoundTripsToIdenticalBytes() throws {
        let data = try sampleManifest().encoded()
        let decoded = try VersionManifest.decode(from: data)
        #expect(decoded == sampleManifest())
        #expect(try decoded.encoded() == data)
        #expect(String(decoding: data, as: UTF8.self).hasSuffix("}\n"))
    }

    /// One way to break a manifest, and the code and field the error must report.
    struct Breakage: Sendable, CustomTestStringConvertible {
        var name: String
        var code: FormatError.Code
        var field: String
        var mutate: @Sendable (inout VersionManifest) -> Void
        var testDescription: String { name }
    }

    static let breakages: [Breakage] = [
        Breakage(name: "unsupported version", code: .unsupportedFormatVersion, field: "formatVersion") { $0.formatVersion = 99 },
        Breakage(name: "negative size", code: .invalidValue, field: "files[0].size") { $0.files[0].size = -1 },
        Breakage(name: "negative archive bytes", code: .invalidValue, field: "packs[1].archiveBytes") { $0.packs[1].archiveBytes = -5 },
        Breakage(name: "absolute path", code: .invalidPath, field: "files[0].path") { $0.files[0].path = "/etc/passwd" },
        Breakage(name: "dot-dot path", code: .invalidPath, field: "files[1].path") { $0.files[1].path = "Shared/../../x" },
        Breakage(name: "backslash path", code: .invalidPath, field: "files[0].path") { $0.files[0].path = "Levels\\1" },
        Breakage(name: "duplicate path", code: .duplicate, field: "files[1].path") { $0.files[1].path = $0.files[0].path },
        Breakage(name: "dangling file pack", code: .danglingReference, field: "files[0].pack") { $0.files[0].pack = String(repeating: "d", count: 64) },
        Breakage(name: "dangling tag pack", code: .danglingReference, field: "tags[1].packs[0]") { $0.tags[1].packs = [String(repeating: "e", count: 64)] },
        Breakage(name: "pack listed twice by a tag", code: .duplicate, field: "tags[1].packs[1]") { $0.tags[1].packs.append($0.tags[1].packs[0]) },
        Breakage(name: "pack tagged by a tag that omits it", code: .danglingReference, field: "tags") { $0.tags[1].packs = [] },
        Breakage(name: "pack tagged with an unknown tag", code: .danglingReference, field: "packs[0].tags[1]") { $0.packs[0].tags = ["level1", "level9"] },
        Breakage(name: "unknown prefetch tag", code: .danglingReference, field: "prefetchOrder[0]") { $0.prefetchOrder = ["level9"] },
        Breakage(name: "priority above one", code: .invalidValue, field: "tags[0].preservationPriority") { $0.tags[0].preservationPriority = 1.5 },
        Breakage(name: "bad pack id", code: .invalidValue, field: "packs[0].id") { $0.packs[0].id = "XYZ" },
        Breakage(name: "bad tag name", code: .invalidValue, field: "tags[0].name") { $0.tags[0].name = "level 1" },
    ]

    @Test(arguments: breakages)
    func invalidManifestIsRejectedNamingTheField(_ breakage: Breakage) throws {
        var manifest = sampleManifest()
        breakage.mutate(&manifest)
        // Encode without validating, as a hostile or buggy producer would.
        let data = try JSONEncoder().encode(manifest)
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: data) }
        #expect(error?.code == breakage.code, "\(String(describing: error))")
        #expect(error?.field == breakage.field, "\(String(describing: error))")
    }

    @Test func malformedJSONNamesTheMissingKey() throws {
        var object = try JSONSerialization.jsonObject(with: try sampleManifest().encoded()) as! [String: Any]
        var packs = object["packs"] as! [[String: Any]]
        packs[1].removeValue(forKey: "archiveBytes")
        object["packs"] = packs
        let data = try JSONSerialization.data(withJSONObject: object)
        let error = #expect(throws: FormatError.self) { try VersionManifest.decode(from: data) }
        #expect(error?.code == .malformedJSON)
        #expect(error?.field == "packs[1].archiveBytes")
    }

    @Test func catalogIndexRejectsDistributionToUnknownVersion() throws {
        let index = CatalogIndex(id: "sample", serial: 3, distributions: ["live": 2], versions: [.init(number: 1, manifest: "versions/1.json")])
        let data = try JSONEncoder().encode(index)
        let error = #expect(throws: FormatError.self) { try CatalogIndex.decode(from: data) }
        #expect(error?.code == .danglingReference)
        #expect(error?.field == "distributions.live")
    }

    @Test func catalogIndexRoundTrips() throws {
        let index = CatalogIndex(id: "sample", serial: 3, distributions: ["live": 1, "test": 2], versions: [
            .init(number: 1, manifest: "versions/1.json"), .init(number: 2, manifest: "versions/2.json"),
        ])
        #expect(try CatalogIndex.decode(from: index.encoded()) == index)
    }

    @Test func expectedEntriesCollapseFilesSharingAnEntry() throws {
        var manifest = sampleManifest()
        var twin = manifest.files[1]
        twin.path = "Shared/rock-copy.png"
        manifest.files.append(twin)
        try manifest.validate()
        #expect(manifest.expectedEntries(inPack: manifest.packs[1].id).map(\.name) == ["Shared/rock.png"])
        #expect(manifest.makeIndex().packs(forTags: ["level2"]) == [manifest.packs[1].id])
    }
}
