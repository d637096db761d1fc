import Foundation
import ODRFormat
import Testing

/// Names a manifest may not hold: ones the runtime's pack folders would resolve to the wrong
/// bytes, and ones the file system cannot hold. All are refused when the manifest is read, so
/// nothing is downloaded.
struct ManifestNameTests {
    static let packA = String(repeating: "a", count: 64)
    static let packB = String(repeating: "b", count: 64)
    static let hashX = String(repeating: "1", count: 64)
    static let hashY = String(repeating: "2", count: 64)
    static let hashZ = String(repeating: "3", count: 64)

    /// A manifest of two packs (`level1` in A, `level2` in B) holding `files`, given as
    /// (path, pack, entry, content hash); each entry is 10 stored bytes at its own offset.
    static func manifest(_ files: [(String, String, String, String)]) -> VersionManifest {
        var offsets: [String: Int64] = [:]
        let records = files.map { path, pack, entry, hash in
            let offset = offsets["\(pack)/\(entry)"] ?? Int64(offsets.count * 100)
            offsets["\(pack)/\(entry)"] = offset
            return FileRecord(path: path, pack: pack, entry: entry, sha256: hash, storedSize: 10, size: 10, headerOffset: offset, method: .stored)
        }
        return VersionManifest(
            catalogID: "names", version: 1,
            tags: [
                TagRecord(name: "level1", preservationPriority: 0.5, packs: [packA], downloadBytes: 10_000, installedBytes: 100),
                TagRecord(name: "level2", preservationPriority: 0.5, packs: [packB], downloadBytes: 10_000, installedBytes: 100),
            ],
            initialInstallTags: [], prefetchOrder: [],
            packs: [
                PackRecord(id: packA, tags: ["level1"], archiveBytes: 10_000, installedBytes: 100, entryCount: 2),
                PackRecord(id: packB, tags: ["level2"], archiveBytes: 10_000, installedBytes: 100, entryCount: 2),
            ],
            files: records)
    }

    static func decodeError(_ manifest: VersionManifest) throws -> FormatError? {
        let data = try JSONEncoder().encode(manifest)
        return #expect(throws: FormatError.self) { try VersionManifest.decode(from: data) }
    }

    struct Case: Sendable, CustomTestStringConvertible {
        var name: String
        var code: FormatError.Code
        var field: String
        var files: [(String, String, String, String)]
        var testDescription: String { name }
    }

    static let refused: [Case] = [
        // x's bytes are entry y and y's are entry x: the folder holds entries x and y, the links
        // fail with EEXIST, and `odr path x` served y's bytes.
        Case(name: "swapped entries", code: .duplicate, field: "files[0].entry",
             files: [("x", packA, "y", hashY), ("y", packA, "x", hashX)]),
        // x -> y, y -> z: path y is entry y's name but holds z's bytes.
        Case(name: "chained entries", code: .duplicate, field: "files[1].entry",
             files: [("x", packA, "y", hashY), ("y", packA, "z", hashZ)]),
        // Path d (entry x) beside entry d/e: the folder's d is a directory, which `odr path d` returned.
        Case(name: "a path beside an entry inside it", code: .invalidPath, field: "files[1].path",
             files: [("d", packA, "x", hashX), ("f", packA, "d/e", hashY)]),
        // Entries d and d/e cannot both be extracted into one folder.
        Case(name: "an entry beside an entry inside it", code: .invalidPath, field: "files[1].path",
             files: [("d", packA, "d", hashX), ("d/e", packA, "d/e", hashY)]),
        // Across packs: the game sees one tree, where d cannot be a file and a folder.
        Case(name: "a file beside a file inside it, in other packs", code: .invalidPath, field: "files[1].path",
             files: [("a", packA, "a", hashX), ("a/b", packB, "a/b", hashY)]),
        Case(name: "a deeper nesting across packs", code: .invalidPath, field: "files[2].path",
             files: [("m/n", packA, "m/n", hashX), ("m.txt", packA, "m.txt", hashY), ("m/n/o/p", packB, "m/n/o/p", hashZ)]),
        Case(name: "a component of 256 bytes", code: .invalidPath, field: "files[0].path",
             files: [(String(repeating: "n", count: 256), packA, "e", hashX)]),
        Case(name: "an entry with a component of 300 bytes", code: .invalidPath, field: "files[0].entry",
             files: [("p", packA, "d/" + String(repeating: "é", count: 150), hashX)]),
        Case(name: "a path of 1025 bytes", code: .invalidPath, field: "files[0].path",
             files: [(Array(repeating: String(repeating: "p", count: 204), count: 5).joined(separator: "/") + "/abc", packA, "e", hashX)]),
    ]

    @Test(arguments: refused)
    func refusedNamesAreInvalidWhenReadNamingTheField(_ refusal: Case) throws {
        let error = try Self.decodeError(Self.manifest(refusal.files))
        #expect(error?.code == refusal.code, "\(String(describing: error))")
        #expect(error?.field == refusal.field, "\(String(describing: error))")
    }

    /// What the rules still allow: shared entries (a path linked to another path's entry), the
    /// same name in two packs (two folders), `d.txt` beside `d/e` (no nesting), and the limits
    /// themselves.
    @Test func namesThatFitTheLayoutAreAccepted() throws {
        let longest = Array(repeating: String(repeating: "q", count: 203), count: 5).joined(separator: "/") + "/abcd"
        #expect(longest.utf8.count == RelativePath.maximumPathBytes)
        let manifest = Self.manifest([
            ("copy.png", Self.packA, "rock.png", Self.hashX),
            ("d.txt", Self.packA, "d.txt", Self.hashY),
            ("d/e", Self.packA, "d/e", Self.hashZ),
            (longest, Self.packA, longest, Self.hashZ),
            ("rock.png", Self.packA, "rock.png", Self.hashX),
            ("x", Self.packB, "y", Self.hashY),
            ("y", Self.packA, "y", Self.hashX),
            (String(repeating: "n", count: 255), Self.packB, "n", Self.hashZ),
        ])
        let decoded = try VersionManifest.decode(from: try JSONEncoder().encode(manifest))
        #expect(decoded.files.count == 8)
    }

    @Test func relativePathLimitsAreNameMaxAndTheDocumentedPathLimit() {
        #expect(RelativePath.isClean(String(repeating: "a", count: 255)))
        #expect(!RelativePath.isClean(String(repeating: "a", count: 256)))
        // Bytes, not characters: 128 two-byte characters are 256 bytes.
        #expect(!RelativePath.isClean(String(repeating: "é", count: 128)))
        #expect(RelativePath.isClean(Array(repeating: String(repeating: "a", count: 254), count: 4).joined(separator: "/") + "/bbbb"))
        #expect(!RelativePath.isClean(Array(repeating: String(repeating: "a", count: 254), count: 4).joined(separator: "/") + "/bbbbb"))
    }

    @Test func firstNestingFindsAFolderAmongManyPaths() {
        var paths = (0..<1000).map { "dir\($0)/file" }
        #expect(RelativePath.firstNesting(in: paths) == nil)
        paths.append("dir500")
        #expect(RelativePath.firstNesting(in: paths).map { [$0.folder, $0.inside] } == ["dir500", "dir500/file"])
        #expect(RelativePath.firstNesting(in: ["a", "a", "a.b", "a-b/c"]) == nil)
    }

    /// 100,000 files in 1,000 folders validate in well under the time decoding them takes.
    @Test func validatingALargeManifestStaysFast() throws {
        var files: [(String, String, String, String)] = []
        for i in 0..<100_000 {
            files.append(("folder\(i % 1000)/sub\(i % 7)/file\(i).bin", i % 2 == 0 ? Self.packA : Self.packB, "e\(i)", Self.hashX))
        }
        var manifest = Self.manifest([])
        manifest.files = files.map { FileRecord(path: $0.0, pack: $0.1, entry: $0.2, sha256: $0.3, storedSize: 0, size: 0, headerOffset: 0, method: .stored) }
        let clock = ContinuousClock()
        let elapsed = try clock.measure { try manifest.validate() }
        #expect(elapsed < .seconds(60), "\(elapsed)")
    }
}
