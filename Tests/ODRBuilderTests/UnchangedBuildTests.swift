#if canImport(Glibc)
import Glibc
#endif
import Foundation
@testable import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// A rebuild with nothing changed returns at once from the proof the last build left beside the
/// cache (``UnchangedBuild``): the same report as a full rebuild, no byte written; and any change to
/// an input the proof covers takes the full build.
struct UnchangedBuildTests {
    static let rules = #"{"catalogID": "proof", "tags": {"a": ["A"], "b": ["B"]}, "untagged": "base"}"#

    static func fixture(rules: String = rules) throws -> BuildFixture {
        let fixture = try BuildFixture()
        try fixture.write("odr.json", rules)
        try fixture.write("A/one.txt", String(repeating: "one ", count: 500))
        try fixture.write("A/deep/two.txt", "two")
        try fixture.write("B/three.bin", deterministicBytes(count: 4000, seed: 3))
        return fixture
    }

    /// Builds with the proof's margin at zero, so that files just written can be proven unchanged.
    @discardableResult
    static func build(_ fixture: BuildFixture, configure: (inout BuildOptions) -> Void = { _ in }) async throws -> BuildReport {
        try await fixture.build {
            $0.unchangedProofMargin = 0
            configure(&$0)
        }
    }

    static func proofInode(_ fixture: BuildFixture) -> UInt64? {
        FileStamp.of(path: UnchangedBuild.location(forCache: fixture.cache).path)?.inode
    }

    /// Rebuilds, and says whether the rebuild returned from the proof: a full build removes the
    /// proof first and writes a new file, so only a rebuild from the proof keeps its inode. A second
    /// link keeps the old inode alive meanwhile: without it, the file system may give the new proof
    /// the number the removed one just freed (ext4 often does).
    static func rebuiltFromProof(
        _ fixture: BuildFixture, configure: (inout BuildOptions) -> Void = { _ in }
    ) async throws -> (fromProof: Bool, report: BuildReport) {
        let proof = UnchangedBuild.location(forCache: fixture.cache).path
        let kept = proof + ".kept-by-test"
        _ = unlink(kept)
        let held = link(proof, kept) == 0
        defer { _ = unlink(kept) }
        let before = proofInode(fixture)
        let report = try await build(fixture, configure: configure)
        return (held && before != nil && proofInode(fixture) == before, report)
    }

    /// The catalog and the build cache, byte for byte.
    static func outputs(_ fixture: BuildFixture) throws -> [String: Data] {
        var files = try fixture.snapshot()
        files["../cache.json"] = try Data(contentsOf: fixture.cache)
        return files
    }

    @Test func aRebuildWithNothingChangedReturnsFromTheProofAndWritesNothing() async throws {
        let fixture = try Self.fixture()
        let first = try await Self.build(fixture)
        #expect(first.publishedNewVersion)
        #expect(Self.proofInode(fixture) != nil, "the build left no proof")
        let before = try Self.outputs(fixture)
        let catalogStamps = try fixture.snapshot().keys.sorted().map { FileStamp.of(path: fixture.output.appending(path: $0).path) }

        for _ in 0..<2 {
            let (fromProof, report) = try await Self.rebuiltFromProof(fixture)
            #expect(fromProof)
            #expect(!report.publishedNewVersion && report.version == 1 && report.hashedFiles == 0 && report.writtenPacks == 0)
            #expect(try Self.outputs(fixture) == before)
            #expect(try fixture.snapshot().keys.sorted().map { FileStamp.of(path: fixture.output.appending(path: $0).path) } == catalogStamps,
                    "a rebuild from the proof touched the catalog")
        }
    }

    /// The proof's report is the full rebuild's, for whole and split metadata, chunked files,
    /// variants, warnings and a version that grew the untagged set.
    @Test(arguments: ["split", "whole", "chunked", "variants", "warnings", "grown"])
    func theProofsReportIsTheFullRebuilds(_ kind: String) async throws {
        let fixture: BuildFixture
        var configure: (inout BuildOptions) -> Void = { _ in }
        switch kind {
        case "whole":
            fixture = try Self.fixture()
            configure = { $0.splitMetadata = false }
        case "chunked":
            fixture = try ChunkedBuildTests.fixture()
            let sizes = try ChunkedBuildTests.sizes()
            configure = { $0.packOptions.chunkSizes = sizes }
        case "variants":
            fixture = try BuildFixture()
            try VariantBuildTests.writeAssets(to: fixture)
        case "warnings":
            fixture = try Self.fixture(rules: #"{"tags": {"a": ["A"], "b": ["B"], "empty": ["Nothing"]}, "limits": {"packSize": 5000, "minimumPackSize": 0, "initialInstallAndPrefetch": 10}, "initialInstall": ["a"], "untagged": "warn"}"#)
            try fixture.write("A/more.txt", String(repeating: "more ", count: 700))
            try fixture.write("untagged.txt", "untagged")
        case "grown":
            fixture = try Self.fixture(rules: #"{"tags": {"a": ["A"]}, "limits": {"baseGrowthWarning": 1000}, "untagged": "base"}"#)
            try await Self.build(fixture, configure: configure)
            try fixture.write("Untagged/new.bin", deterministicBytes(count: 20_000, seed: 9))
        default:
            fixture = try Self.fixture()
        }
        let built = try await Self.build(fixture, configure: configure)
        #expect(built.publishedNewVersion)
        if kind == "grown" { #expect(built.warnings.contains { $0.code == .baseGrew }, "\(built.warnings)") }
        if kind == "warnings" { #expect(built.warnings.count >= 3, "\(built.warnings)") }
        let (fromProof, proved) = try await Self.rebuiltFromProof(fixture, configure: configure)
        #expect(fromProof)
        let full = try await Self.build(fixture) {
            configure(&$0)
            $0.usesUnchangedProof = false
        }
        #expect(!full.publishedNewVersion)
        #expect(proved == full)
        #expect(proved.rendered() == full.rendered())
        // And the full rebuild left a proof that still holds.
        #expect(try await Self.rebuiltFromProof(fixture, configure: configure).fromProof)
    }

    /// Every input the proof covers, changed: the rebuild is a full one, and leaves a proof again.
    @Test(arguments: [
        "file content", "file size", "file added", "file removed", "file renamed", "folder added", "hidden file added",
        "rules bytes", "rules tags", "variants", "compression", "split option", "distribution", "catalog id",
        "compression level", "chunk sizes", "allow oversize", "signing", "catalog index", "latest manifest",
        "pack removed", "pack truncated", "split metadata file", "newer version elsewhere", "cache removed",
        "cache replaced", "symbolic link retargeted",
    ])
    func aChangeTakesTheFullBuild(_ change: String) async throws {
        let fixture = try Self.fixture()
        try fixture.write("C/target1.txt", "target one")
        try fixture.write("C/target2.txt", "target two, longer")
        try FileManager.default.createSymbolicLink(atPath: fixture.assets.appending(path: "A/link.txt").path, withDestinationPath: "../C/target1.txt")
        try await Self.build(fixture)
        #expect(try await Self.rebuiltFromProof(fixture).fromProof)
        var configure: (inout BuildOptions) -> Void = { _ in }
        let assets = fixture.assets
        func move(_ from: String, _ to: String) throws {
            try FileManager.default.moveItem(at: assets.appending(path: from), to: assets.appending(path: to))
        }
        switch change {
        case "file content":
            // Same size, same folder: only the file's own times and (for an editor's save) inode say so.
            try fixture.write("A/deep/two.txt", "TWO")
        case "file size": try fixture.write("A/deep/two.txt", "two and more")
        case "file added": try fixture.write("A/deep/four.txt", "four")
        case "file removed": try FileManager.default.removeItem(at: assets.appending(path: "A/deep/two.txt"))
        case "file renamed": try move("A/deep/two.txt", "A/deep/zwei.txt")
        case "folder added": try FileManager.default.createDirectory(at: assets.appending(path: "A/deep/empty"), withIntermediateDirectories: false)
        case "hidden file added": try fixture.write("A/.hidden", "hidden")
        case "rules bytes": try fixture.write("odr.json", Self.rules + "\n")
        case "rules tags": try fixture.write("odr.json", #"{"catalogID": "proof", "tags": {"a": ["A"], "b": ["B", "A/deep"]}, "untagged": "base"}"#)
        case "variants":
            try fixture.write("odr.json", #"{"catalogID": "proof", "tags": {"a": ["A"], "b": ["B"]}, "variants": [{"axis": "resolution", "values": ["1x", "2x"], "marker": "@", "default": "1x", "files": ["**/*.png"]}], "untagged": "base"}"#)
        case "compression":
            try fixture.write("odr.json", #"{"catalogID": "proof", "tags": {"a": {"include": ["A"], "compression": "store"}, "b": ["B"]}, "untagged": "base"}"#)
        case "split option": configure = { $0.splitMetadata = false }
        case "distribution": configure = { $0.distribution = "beta" }
        case "catalog id": configure = { $0.catalogID = "proof" }
        case "compression level": configure = { $0.packOptions.compressionLevel = 9 }
        case "chunk sizes": configure = { $0.packOptions.chunkSizes = try! ChunkedBuildTests.sizes() }
        case "allow oversize": configure = { $0.allowOversize = true }
        case "signing":
            let signing = try CatalogSigning(keys: [SigningKey.generate()], expiresIn: 30 * 86_400)
            configure = { $0.signing = signing }
        case "catalog index":
            // Another distribution pointed at the version, by a build with another cache.
            try await fixture.build {
                $0.cache = fixture.directory.appending("other-cache.json")
                $0.distribution = "beta"
            }
        case "latest manifest":
            let index = try fixture.index()
            let url = fixture.output.appending(path: index.versions.last!.manifest)
            var bytes = try Data(contentsOf: url)
            bytes.append(contentsOf: Array(" ".utf8))
            try bytes.write(to: url)
        case "pack removed", "pack truncated":
            let pack = try fixture.manifest(1).packs[0]
            let url = fixture.catalog.packURL(id: pack.id)
            if change == "pack removed" {
                try FileManager.default.removeItem(at: url)
            } else {
                try Data(try Data(contentsOf: url).dropLast()).write(to: url)
            }
        case "split metadata file":
            let folder = fixture.output.appending(path: SplitMetadata.folder)
            let file = try #require(FileManager.default.subpathsOfDirectory(atPath: folder.path).sorted().first)
            try FileManager.default.removeItem(at: folder.appending(path: file))
        case "newer version elsewhere":
            // Another assets folder (with its own cache) published version 2 to the same catalog.
            let other = fixture.directory.appending("other-assets")
            try FileManager.default.copyItem(at: assets, to: other)
            try "changed".write(to: other.appending(path: "B/new.txt"), atomically: false, encoding: .utf8)
            try await fixture.build(assets: other) { $0.cache = fixture.directory.appending("other-cache.json") }
        case "cache removed": try FileManager.default.removeItem(at: fixture.cache)
        case "cache replaced":
            let bytes = try Data(contentsOf: fixture.cache)
            try FileManager.default.removeItem(at: fixture.cache)
            try bytes.write(to: fixture.cache)
        case "symbolic link retargeted":
            // The link itself is replaced by one of the same name.
            let link = assets.appending(path: "A/link.txt").path
            try FileManager.default.removeItem(atPath: link)
            try FileManager.default.createSymbolicLink(atPath: link, withDestinationPath: "../C/target2.txt")
        default:
            Issue.record("unknown change \(change)")
        }
        let (fromProof, report) = try await Self.rebuiltFromProof(fixture, configure: configure)
        #expect(!fromProof, "\(change): the rebuild returned from the proof")

        if change.hasPrefix("file") || change == "folder added" {
            #expect(report.publishedNewVersion == (change != "folder added"), "\(change)")
        }
        if change == "pack removed" {
            #expect(!report.publishedNewVersion)
            let pack = try fixture.manifest(1).packs[0]
            #expect(FileStamp.of(path: fixture.catalog.packURL(id: pack.id).path)?.size == pack.archiveBytes, "the pack was not written again")
        }
        if change == "split metadata file" {
            // The latest version no longer reads, so the build publishes the files as a new one.
            #expect(report.publishedNewVersion)
        }
        if change == "symbolic link retargeted" {
            #expect(report.publishedNewVersion)
            #expect(try fixture.manifest(2).files.first { $0.path == "A/link.txt" }?.size == Int64("target two, longer".utf8.count))
        }
        if change == "rules bytes" || change == "cache removed" || change == "cache replaced" || change == "hidden file added" {
            #expect(!report.publishedNewVersion, "\(change)")
        }
        // A signed build leaves no proof, and a pack of the wrong size (which a build does not
        // replace) fails every proof: the next rebuild is full again.
        if change == "signing" || change == "pack truncated" {
            #expect(try await !Self.rebuiltFromProof(fixture, configure: configure).fromProof)
        } else {
            #expect(try await Self.rebuiltFromProof(fixture, configure: configure).fromProof, "\(change): no proof after the full build")
        }
    }

    /// Files that changed less than the margin before the scan began leave no proof: a file written
    /// again in the same clock tick keeps its times. The margin is 2 s, the coarsest timestamps of
    /// common file systems.
    @Test func recentlyChangedFilesLeaveNoProof() async throws {
        let fixture = try Self.fixture()
        #expect(fixture.options().unchangedProofMargin == 2_000_000_000)
        try await fixture.build { $0.unchangedProofMargin = 60_000_000_000 }
        #expect(Self.proofInode(fixture) == nil, "files written just now were trusted")
        try await Self.build(fixture)
        #expect(Self.proofInode(fixture) != nil)
        // A full build that can prove nothing removes the proof of the build before it.
        try fixture.write("A/fresh.txt", "fresh")
        try await fixture.build { $0.unchangedProofMargin = 60_000_000_000 }
        #expect(Self.proofInode(fixture) == nil)
    }

    /// Without a cache there is no proof, and a proof is never taken with signing.
    @Test func noCacheNoProof() async throws {
        let fixture = try Self.fixture()
        try await fixture.build(cached: false) { $0.unchangedProofMargin = 0 }
        #expect(Self.proofInode(fixture) == nil)
    }

    /// A proof that is truncated, from another key or malformed is ignored.
    @Test func aDamagedProofIsIgnored() async throws {
        let fixture = try Self.fixture()
        try await Self.build(fixture)
        let location = UnchangedBuild.location(forCache: fixture.cache)
        let bytes = try Data(contentsOf: location)
        let proof = try #require(UnchangedBuild(parsing: bytes, key: String(decoding: bytes.split(separator: UInt8(ascii: "\n"))[1], as: UTF8.self)))
        #expect(proof.files.map { $0.path } == ["A/deep/two.txt", "A/one.txt", "B/three.bin"])
        #expect(proof.folders.map { $0.path } == ["", "A", "A/deep", "B"])
        #expect(proof.encoded() == bytes)
        #expect(UnchangedBuild(parsing: bytes, key: String(repeating: "0", count: 64)) == nil)
        for cut in [10, bytes.count / 2, bytes.count - 1] {
            #expect(UnchangedBuild(parsing: bytes.prefix(cut), key: proof.key) == nil)
        }
        try Data(bytes.prefix(bytes.count / 2)).write(to: location)
        let report = try await Self.build(fixture)
        #expect(!report.publishedNewVersion)
        #expect(Self.proofInode(fixture) != nil)
    }
}
