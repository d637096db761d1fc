import Foundation
import ODRBuilder
import ODRFormat
import ODRServe
import ODRTestSupport
import Testing

/// `odrpack publish --delete` after `odrpack prune`: the destination ends with the catalog's files
/// and nothing else of the catalog, never loses a file a kept version uses (also when it fails
/// half-way), keeps a grace of dropped versions on request, and leaves other files alone.
struct CatalogPublishDeleteTests {
    typealias Steps = CatalogPublishTests.Steps

    /// The default game published three times (versions 1, 2 and 3, each changing files) to
    /// `destination`, then pruned to the newest version locally.
    static func threeVersionsPrunedToOne(publishingTo destination: CatalogPublisher.Destination,
                                         options: CatalogPublisher.Options = .init()) async throws -> CatalogFixture {
        let fixture = try await CatalogPublishTests.built(bigBytes: 120_000)
        _ = try CatalogPublishTests.publisher(fixture, to: destination, options: options).publish()
        for version in 2...3 {
            try fixture.write("big/music.bin", deterministicBytes(count: 120_000, seed: UInt64(40 + version)))
            try fixture.write("small/notes.txt", Data("notes \(version)\n".utf8))
            try await fixture.build()
            _ = try CatalogPublishTests.publisher(fixture, to: destination, options: options).publish()
        }
        let pruned = try CatalogEditor(catalog: CatalogDirectory(root: fixture.catalog)).prune(keep: 1)
        #expect(pruned.removedVersions == [1, 2])
        return fixture
    }

    @Test func publishDeleteAfterPruneLeavesNoFileTheCatalogNoLongerHas() async throws {
        let destination = try TemporaryDirectory(prefix: "odr-publish-delete")
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .folder(destination.url))
        // Files that are not the catalog's: never touched.
        try Data("<html/>".utf8).write(to: destination.appending("index.html"))
        try FileManager.default.createDirectory(at: destination.appending("other"), withIntermediateDirectories: true)
        try Data("x".utf8).write(to: destination.appending("other/thing.bin"))
        #expect(FileManager.default.fileExists(atPath: destination.appending("versions/1.json").path))

        let publisher = CatalogPublishTests.publisher(fixture, to: .folder(destination.url))
        // What --dry-run shows, before the pruned catalog.json is published.
        let dry = try publisher.deletionPlan(keepingDroppedVersions: 0, requirePublished: false)
        #expect(dry.deletions.map(\.path).contains("versions/1.json"))
        #expect(dry.deletions.last.map { $0.path.hasPrefix("versions/") } == true, "manifests go last")
        #expect(FileManager.default.fileExists(atPath: destination.appending("versions/1.json").path), "planning deletes nothing")

        _ = try publisher.publish()
        #expect(try publisher.delete(publisher.deletionPlan(keepingDroppedVersions: 0)) == dry.deletions.count)
        let left = CatalogPublishTests.files(in: destination.url)
        #expect(left == (CatalogPublishTests.files(in: fixture.catalog) + ["index.html", "other/thing.bin"]).sorted())
        try CatalogPublishTests.expectCurrent(destination.url, fixture)
        // Run again: nothing left to delete.
        #expect(try publisher.deletionPlan(keepingDroppedVersions: 0).deletions.isEmpty)
    }

    @Test func aGraceKeepsTheFilesOfTheNewestDroppedVersionOnly() async throws {
        let destination = try TemporaryDirectory(prefix: "odr-publish-grace")
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .folder(destination.url))
        // What version 2 used, read from the destination before anything is deleted.
        let published = CatalogDirectory(root: destination.url)
        let index2 = try published.loadIndex()
        let loaded2 = try published.loadVersion(2, in: index2)
        let v2 = loaded2.manifest
        let v2Metadata = loaded2.split?.files.map(\.path) ?? []
        let publisher = CatalogPublishTests.publisher(fixture, to: .folder(destination.url))
        _ = try publisher.publish()
        let plan = try publisher.deletionPlan(keepingDroppedVersions: 1)
        #expect(plan.graceVersions == [2])
        try publisher.delete(plan)
        let left = Set(CatalogPublishTests.files(in: destination.url))
        #expect(left.contains("versions/2.json"))
        #expect(!left.contains("versions/1.json"))
        for pack in v2.packs { #expect(left.contains(pack.archivePath), "\(pack.archivePath) of version 2") }
        let current = Set(CatalogPublishTests.files(in: fixture.catalog))
        #expect(left == current.union(["versions/2.json"]).union(v2.packs.map(\.archivePath)).union(v2Metadata))
    }

    @Test func deletingAgainstADestinationThatServesAnotherCatalogIsRefused() async throws {
        let destination = try TemporaryDirectory(prefix: "odr-publish-unpublished")
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .folder(destination.url))
        // The pruned catalog.json was not published yet: the destination still serves versions 1 to 3.
        let publisher = CatalogPublishTests.publisher(fixture, to: .folder(destination.url))
        let error = #expect(throws: BuildError.self) { _ = try publisher.deletionPlan(keepingDroppedVersions: 0) }
        #expect(error?.code == .publishDestination)
        #expect(error?.message.contains("publish first") == true)
        // A dry run may look ahead.
        #expect(try !publisher.deletionPlan(keepingDroppedVersions: 0, requirePublished: false).deletions.isEmpty)
    }

    @Test func aDroppedManifestWithinTheGraceThatCannotBeReadStopsTheDeleteBeforeAnything() async throws {
        let destination = try TemporaryDirectory(prefix: "odr-publish-grace-damaged")
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .folder(destination.url))
        let publisher = CatalogPublishTests.publisher(fixture, to: .folder(destination.url))
        _ = try publisher.publish()
        try Data("{ not json".utf8).write(to: destination.appending("versions/2.json"))
        let before = CatalogPublishTests.files(in: destination.url)
        let error = #expect(throws: BuildError.self) { _ = try publisher.deletionPlan(keepingDroppedVersions: 1) }
        #expect(error?.code == .publishDestination)
        #expect(error?.message.contains("nothing was deleted") == true)
        #expect(CatalogPublishTests.files(in: destination.url) == before)
    }

    @Test func pruneRemovesManifestsNoKeptVersionListsAlsoLeftovers() async throws {
        let fixture = try await CatalogPublishTests.built(bigBytes: 50_000)
        let leftover = try Data(contentsOf: fixture.catalog.appending(path: "versions/1.json"))
        try fixture.write("small/notes.txt", Data("notes 2\n".utf8))
        try await fixture.build()
        let editor = CatalogEditor(catalog: CatalogDirectory(root: fixture.catalog))
        #expect(try editor.prune(keep: 1).removedManifests == ["versions/1.json"])
        // A folder that got versions/1.json back (a copy of a published folder): removed as well.
        try leftover.write(to: fixture.catalog.appending(path: "versions/1.json"))
        let again = try editor.prune(keep: 1)
        #expect(again.removedVersions.isEmpty)
        #expect(again.removedManifests == ["versions/1.json"])
        #expect(!FileManager.default.fileExists(atPath: fixture.catalog.appending(path: "versions/1.json").path))
        #expect(FileManager.default.fileExists(atPath: fixture.catalog.appending(path: "versions/2.json").path))
    }

    @Test(.enabled(if: RcloneWebDAV.isAvailable, "rclone is not installed"))
    func aRemoteFailingHalfWayThroughTheDeleteKeepsEveryReferencedFileAndARerunFinishes() async throws {
        let served = try TemporaryDirectory(prefix: "odr-publish-delete-dav")
        let options = CatalogPublisher.Options(rcloneArguments: ["--retries", "1", "--low-level-retries", "1", "--contimeout", "2s"])
        let first = try await RcloneWebDAV.start(serving: served.url)
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .parse(first.remote("game")), options: options)
        let publisher = CatalogPublishTests.publisher(fixture, to: .parse(first.remote("game")), options: options)
        _ = try publisher.publish()
        let plan = try publisher.deletionPlan(keepingDroppedVersions: 0)
        #expect(plan.deletions.count >= 3)

        // The remote dies at the second deletion.
        let pid = first.processIdentifier
        let killer = CatalogPublisher(catalog: CatalogDirectory(root: fixture.catalog), destination: .parse(first.remote("game")),
                                      options: options,
                                      progress: { step in if case .deleting(_, 2, _) = step { kill(pid, SIGKILL) } })
        let error = #expect(throws: BuildError.self) { try killer.delete(plan) }
        #expect(error?.code == .publishDestination)
        await first.stop()
        let game = served.appending("game")
        try CatalogPublishTests.expectCurrent(game, fixture)
        #expect(CatalogPublishTests.files(in: game).contains("versions/1.json"), "manifests are deleted last")

        // Back up: the rerun deletes the rest.
        let second = try await RcloneWebDAV.start(serving: served.url)
        let rerun = CatalogPublishTests.publisher(fixture, to: .parse(second.remote("game")), options: options)
        _ = try rerun.publish()
        try rerun.delete(rerun.deletionPlan(keepingDroppedVersions: 0))
        #expect(CatalogPublishTests.files(in: game) == CatalogPublishTests.files(in: fixture.catalog))
        try CatalogPublishTests.expectCurrent(game, fixture)
        await second.stop()
    }

    @Test func odrpackPublishDeleteRunsAfterTheCatalogAndRefusesAGraceWithoutDelete() async throws {
        let destination = try TemporaryDirectory(prefix: "odr-publish-delete-cli")
        let fixture = try await Self.threeVersionsPrunedToOne(publishingTo: .folder(destination.url))
        let odrpack = try #require(builtExecutable(named: "odrpack"))
        let dry = try runCommand(odrpack.path, ["publish", fixture.catalog.path, destination.url.path, "--delete", "--dry-run"])
        #expect(dry.status == 0, "\(dry.stderr)")
        #expect(dry.stdout.contains("delete  versions/1.json"), "\(dry.stdout)")
        #expect(FileManager.default.fileExists(atPath: destination.appending("versions/1.json").path))
        let done = try runCommand(odrpack.path, ["publish", fixture.catalog.path, destination.url.path, "--delete", "--quiet"])
        #expect(done.status == 0, "\(done.stderr)")
        #expect(done.stdout.contains("no version references"), "\(done.stdout)")
        #expect(CatalogPublishTests.files(in: destination.url) == CatalogPublishTests.files(in: fixture.catalog))
        for (arguments, message) in [(["--delete-after-versions", "1"], "--delete-after-versions needs --delete"),
                                     (["--delete", "--delete-after-versions=-1"], "--delete-after-versions must be 0 to")] {
            let refused = try runCommand(odrpack.path, ["publish", fixture.catalog.path, destination.url.path] + arguments)
            #expect(refused.status != 0)
            #expect(refused.stderr.contains(message), "\(refused.stderr)")
        }
    }

    @Test func theCheckThroughThePublicURLSaysWhichOdrpackAsks() async throws {
        let peer = try RawHTTPPeer(response: Data("HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\n\r\n".utf8))
        defer { peer.stop() }
        let fixture = try await CatalogPublishTests.built(bigBytes: 10_000)
        let index = try #require(try CatalogPublishTests.publisher(fixture, to: .folder(fixture.catalog)).objects().first { $0.kind == .index })
        _ = await PublishedCatalogCheck(baseURL: peer.url(for: ""), expected: [index]).run()
        let head = try #require(peer.requestHeads.first)
        #expect(head.contains("User-Agent: odrpack/\(ODRVersion.current) (swift-odr)\r\n"), "\(head)")
        #expect(!head.contains("unknown version"))
    }
}
