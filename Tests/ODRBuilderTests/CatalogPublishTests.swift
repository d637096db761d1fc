import Foundation
import ODRBuilder
import ODRFormat
import ODRServe
import ODRTestSupport
import Testing

/// `odrpack publish` (``CatalogPublisher``) to a local folder and, through rclone, to a WebDAV
/// server on loopback: the order, the skipping, a destination that fails halfway, and the errors.
struct CatalogPublishTests {
    /// Every step, in order, as the publisher reports it.
    final class Steps: Sendable {
        let steps = Locked<[CatalogPublisher.Step]>([])
        func record(_ step: CatalogPublisher.Step) { steps.withLock { $0.append(step) } }
        var uploaded: [String] {
            steps.withLock { $0 }.compactMap { if case .uploading(let object, _, _) = $0 { object.path } else { nil } }
        }
    }

    static func publisher(_ fixture: CatalogFixture, to destination: CatalogPublisher.Destination, steps: Steps? = nil,
                          options: CatalogPublisher.Options = .init()) -> CatalogPublisher {
        var progress: (@Sendable (CatalogPublisher.Step) -> Void)?
        if let steps { progress = { steps.record($0) } }
        return CatalogPublisher(catalog: CatalogDirectory(root: fixture.catalog), destination: destination, options: options,
                                progress: progress)
    }

    /// Every file of the catalog folder (relative paths).
    static func files(in root: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey])
        var result: [String] = []
        while let url = enumerator?.nextObject() as? URL {
            guard (try? url.resourceValues(forKeys: [.isRegularFileKey]))?.isRegularFile == true else { continue }
            result.append(String(url.standardizedFileURL.path.dropFirst(root.standardizedFileURL.path.count + 1)))
        }
        return result.sorted()
    }

    /// Every pack and manifest the destination's catalog.json names is there with its bytes.
    static func expectComplete(_ destination: URL, like catalog: URL) throws {
        let published = CatalogDirectory(root: destination)
        let index = try published.loadIndex()
        for entry in index.versions {
            let manifest = try published.loadManifest(version: entry.number, in: index)
            for pack in manifest.packs {
                #expect(try ContentHash.sha256Hex(ofFileAt: published.url(of: pack.archivePath)) == pack.id, "\(pack.archivePath)")
            }
        }
    }

    /// The destination serves the fixture's current catalog.json, and holds everything it names.
    static func expectCurrent(_ destination: URL, _ fixture: CatalogFixture) throws {
        #expect(try Data(contentsOf: destination.appending(path: "catalog.json")) == Data(contentsOf: fixture.catalog.appending(path: "catalog.json")))
        try expectComplete(destination, like: fixture.catalog)
    }

    /// The default game with `bigBytes` of music, built.
    static func built(bigBytes: Int) async throws -> CatalogFixture {
        let fixture = try CatalogFixture.game(bigBytes: bigBytes)
        try await fixture.build()
        return fixture
    }

    @Test func aLocalFolderGetsPacksThenManifestsThenCatalogAndAnUpdateSkipsWhatIsThere() async throws {
        let fixture = try await Self.built(bigBytes: 300_000)
        let destination = try TemporaryDirectory(prefix: "odr-publish-folder")
        let steps = Steps()
        let report = try Self.publisher(fixture, to: .folder(destination.url), steps: steps).publish()

        #expect(Self.files(in: destination.url) == Self.files(in: fixture.catalog))
        for path in Self.files(in: fixture.catalog) {
            #expect(try Data(contentsOf: destination.appending(path)) == Data(contentsOf: fixture.catalog.appending(path: path)), "\(path)")
        }
        try Self.expectComplete(destination.url, like: fixture.catalog)
        // Packs, then manifests, then catalog.json (renamed into place after the read-back).
        let kinds = steps.uploaded.map { $0.hasPrefix("packs/") ? 0 : $0.hasPrefix("versions/") ? 1 : 2 }
        #expect(kinds == kinds.sorted())
        #expect(steps.uploaded.last == "catalog.json")
        if case .renaming(_, let to)? = steps.steps.withLock({ $0.last }) { #expect(to == "catalog.json") } else {
            Issue.record("the last step is not the rename of catalog.json")
        }
        #expect(report.verified == Self.files(in: fixture.catalog).count)

        // A new version: only its new pack(s), its manifest and catalog.json go up.
        try fixture.write("small/notes.txt", Data("new notes\n".utf8))
        try await fixture.build()
        let update = try Self.publisher(fixture, to: .folder(destination.url)).plan()
        let newFiles = Set(Self.files(in: fixture.catalog)).subtracting(Self.files(in: destination.url))
        #expect(Set(update.uploads.map(\.path)) == newFiles.union(["catalog.json"]))
        _ = try Self.publisher(fixture, to: .folder(destination.url)).publish()
        try Self.expectCurrent(destination.url, fixture)
    }

    /// A pack or manifest of the catalog folder that is a symbolic link (to a file outside, or to
    /// the right bytes elsewhere) is refused, not copied as a link or followed; nothing goes up.
    @Test(arguments: ["pack", "manifest", "packs folder"])
    func aLinkInTheCatalogFolderIsRefusedAndNothingIsPublished(_ place: String) async throws {
        let fixture = try await Self.built(bigBytes: 20_000)
        let outside = try TemporaryDirectory(prefix: "odr-publish-outside")
        let destination = try TemporaryDirectory(prefix: "odr-publish-links")
        let manager = FileManager.default
        let packs = fixture.catalog.appending(path: "packs")
        let moved: URL
        switch place {
        case "pack":
            let pack = try #require(try manager.contentsOfDirectory(atPath: packs.path).first)
            moved = outside.appending(pack)
            try manager.moveItem(at: packs.appending(path: pack), to: moved)
            try manager.createSymbolicLink(at: packs.appending(path: pack), withDestinationURL: moved)
        case "manifest":
            moved = outside.appending("1.json")
            let manifest = fixture.catalog.appending(path: "versions/1.json")
            try manager.moveItem(at: manifest, to: moved)
            try manager.createSymbolicLink(at: manifest, withDestinationURL: moved)
        default:
            moved = outside.appending("packs")
            try manager.moveItem(at: packs, to: moved)
            try manager.createSymbolicLink(at: packs, withDestinationURL: moved)
        }
        let error = #expect(throws: BuildError.self) { try Self.publisher(fixture, to: .folder(destination.url)).publish() }
        #expect(error?.code == .publishSource, "\(String(describing: error))")
        #expect(error?.message.contains("symbolic link") == true)
        #expect(Self.files(in: destination.url).isEmpty)
        // Nothing in the destination is a link either.
        #expect((try? manager.contentsOfDirectory(atPath: destination.url.path))?.isEmpty ?? true)
    }

    /// A pack whose bytes are not its id (same size) is refused with the id while it is copied:
    /// its id was assumed to be its hash, and the damaged pack was published.
    @Test func aPackWhoseBytesAreNotItsIdIsRefusedWithItsId() async throws {
        let fixture = try await Self.built(bigBytes: 20_000)
        let destination = try TemporaryDirectory(prefix: "odr-publish-hash")
        let packs = fixture.catalog.appending(path: "packs")
        let pack = try #require(try FileManager.default.contentsOfDirectory(atPath: packs.path).sorted().first)
        var bytes = try Data(contentsOf: packs.appending(path: pack))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: packs.appending(path: pack))
        let error = #expect(throws: BuildError.self) { try Self.publisher(fixture, to: .folder(destination.url)).publish() }
        #expect(error?.code == .publishSource)
        let id = String(pack.dropLast(".zip".count))
        #expect(error?.message.contains("pack \(id)") == true, "\(String(describing: error))")
        // Not there, and no catalog.json naming it.
        #expect(!Self.files(in: destination.url).contains("packs/\(pack)"))
        #expect(!Self.files(in: destination.url).contains("catalog.json"))
    }

    @Test func aDryRunPlansEverythingAndWritesNothing() async throws {
        let fixture = try await Self.built(bigBytes: 100_000)
        let destination = try TemporaryDirectory(prefix: "odr-publish-dry")
        let target = destination.appending("www/game")
        let plan = try Self.publisher(fixture, to: .folder(target)).plan()
        #expect(plan.uploads.map(\.path).sorted() == Self.files(in: fixture.catalog))
        #expect(plan.uploads.last?.path == "catalog.json")
        #expect(plan.present.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: target.path))
    }

    @Test func aDestinationFailingHalfwayKeepsTheOldCatalogWholeAndARerunFinishes() async throws {
        let fixture = try await Self.built(bigBytes: 200_000)
        let destination = try TemporaryDirectory(prefix: "odr-publish-halfway")
        _ = try Self.publisher(fixture, to: .folder(destination.url)).publish()
        let published = try Data(contentsOf: destination.appending("catalog.json"))

        // Version 2 has new packs; the destination refuses the last of them (a folder is in its way).
        try fixture.write("big/extra.bin", deterministicBytes(count: 150_000, seed: 31))
        try fixture.write("small/more.txt", Data("more\n".utf8))
        try await fixture.build()
        let plan = try Self.publisher(fixture, to: .folder(destination.url)).plan()
        let newPacks = plan.uploads.filter { $0.kind == .pack }.map(\.path)
        #expect(newPacks.count >= 2)
        let blocked = try #require(newPacks.last)
        try FileManager.default.createDirectory(at: destination.appending(blocked + "/in-the-way"), withIntermediateDirectories: true)
        let error = #expect(throws: BuildError.self) { _ = try Self.publisher(fixture, to: .folder(destination.url)).publish() }
        #expect(error?.code == .publishDestination)
        // Clients still get version 1, and every file it names is there.
        #expect(try Data(contentsOf: destination.appending("catalog.json")) == published)
        try Self.expectComplete(destination.url, like: fixture.catalog)
        #expect(!Self.files(in: destination.url).contains { $0.contains(".publish-") })

        try FileManager.default.removeItem(at: destination.appending(blocked))
        let steps = Steps()
        let report = try Self.publisher(fixture, to: .folder(destination.url), steps: steps).publish()
        // The packs uploaded before the failure are skipped.
        #expect(!steps.uploaded.contains(newPacks[0]))
        #expect(steps.uploaded.contains(blocked))
        #expect(report.plan.present.contains { $0.path == newPacks[0] })
        try Self.expectCurrent(destination.url, fixture)
    }

    @Test func theCheckThroughThePublicURLReportsAStaleEdge() async throws {
        let fixture = try await Self.built(bigBytes: 100_000)
        let current = try TemporaryDirectory(prefix: "odr-publish-edge")
        let publisher = Self.publisher(fixture, to: .folder(current.url))
        _ = try publisher.publish()
        let expected = try publisher.objects()
        try await withTestServer(root: current.url) { server in
            let report = await PublishedCatalogCheck(baseURL: server.baseURL, expected: expected).run()
            #expect(report.problems.isEmpty, "\(report.problems)")
            #expect(report.catalogIsCurrent)
            #expect(report.checked == expected.count - 1)
        }
        // An edge that cached the previous catalog.json, and a 404 for a pack of the new version.
        let stale = try TemporaryDirectory(prefix: "odr-publish-stale-edge")
        try FileManager.default.removeItem(at: stale.url)
        try FileManager.default.copyItem(at: current.url, to: stale.url)
        let pack = try #require(expected.first { $0.kind == .pack })
        try FileManager.default.removeItem(at: stale.appending(pack.path))
        var index = try CatalogIndex.decode(from: Data(contentsOf: stale.appending("catalog.json")))
        index.serial -= 1
        try CatalogFixture.unvalidatedJSON(index).write(to: stale.appending("catalog.json"))
        try await withTestServer(root: stale.url) { edge in
            let report = await PublishedCatalogCheck(baseURL: edge.baseURL.appending(path: "catalog.json"), expected: expected).run()
            #expect(!report.catalogIsCurrent)
            #expect(report.servedSerial == index.serial)
            #expect(report.missing == [.init(path: pack.path, status: 404)])
            #expect(report.problems.count == 2)
        }
    }

    @Test func aDamagedCopyOfTheRightSizeIsUploadedAgain() async throws {
        let fixture = try await Self.built(bigBytes: 100_000)
        let destination = try TemporaryDirectory(prefix: "odr-publish-damaged")
        _ = try Self.publisher(fixture, to: .folder(destination.url)).publish()
        let pack = try #require(Self.files(in: destination.url).first { $0.hasPrefix("packs/") })
        var bytes = try Data(contentsOf: destination.appending(pack))
        bytes[bytes.count / 2] ^= 0xFF
        try bytes.write(to: destination.appending(pack))
        let plan = try Self.publisher(fixture, to: .folder(destination.url)).plan()
        #expect(plan.uploads.map(\.path).contains(pack))
        _ = try Self.publisher(fixture, to: .folder(destination.url)).publish()
        try Self.expectComplete(destination.url, like: fixture.catalog)
    }

    @Test func anUnwritableDestinationIsATypedErrorAndWritesNothing() async throws {
        let fixture = try await Self.built(bigBytes: 50_000)
        let directory = try TemporaryDirectory(prefix: "odr-publish-unwritable")
        let file = directory.appending("not-a-folder")
        try Data("x".utf8).write(to: file)
        for target in [file, file.appending(path: "game")] {
            let error = #expect(throws: BuildError.self) { _ = try Self.publisher(fixture, to: .folder(target)).publish() }
            #expect(error?.code == .publishDestination, "\(target.path)")
            #expect(error?.message.contains("folder") == true)
        }
        #expect(Self.files(in: directory.url) == ["not-a-folder"])
    }

    @Test func aRemoteWithoutRcloneIsATypedErrorThatSaysHowToInstallIt() async throws {
        let fixture = try await Self.built(bigBytes: 50_000)
        var options = CatalogPublisher.Options()
        options.rclone = "rclone-not-installed-\(UUID().uuidString)"
        let error = #expect(throws: BuildError.self) {
            _ = try Self.publisher(fixture, to: .parse("r2:bucket/game"), options: options).publish()
        }
        #expect(error?.code == .publishToolMissing)
        #expect(error?.message.contains("apt install rclone") == true)
        // What the user reads: the missing program named first, not "= rclone-...".
        #expect(error?.description.hasPrefix("[publish.toolMissing] \(options.rclone): publishing to a remote needs rclone") == true)
        #expect(CatalogPublisher.Destination.parse("r2:bucket/game") == .rclone("r2:bucket/game"))
        #expect(CatalogPublisher.Destination.parse("./out:1") != .rclone("./out:1"))
    }

    @Test(.enabled(if: RcloneWebDAV.isAvailable, "rclone is not installed"))
    func aWebDAVRemoteThroughRcloneGetsTheCatalogAndARerunAfterAFailureFinishes() async throws {
        let fixture = try await Self.built(bigBytes: 200_000)
        let served = try TemporaryDirectory(prefix: "odr-publish-dav")
        let options = CatalogPublisher.Options(rcloneArguments: ["--retries", "1", "--low-level-retries", "1", "--contimeout", "2s"])

        // The server dies after the first upload: the publish fails, catalog.json never arrives.
        let first = try await RcloneWebDAV.start(serving: served.url)
        let pid = first.processIdentifier
        let killer = CatalogPublisher(
            catalog: CatalogDirectory(root: fixture.catalog), destination: .parse(first.remote("game")), options: options,
            progress: { step in if case .uploading(_, 2, _) = step { kill(pid, SIGKILL) } })
        let error = #expect(throws: BuildError.self) { _ = try killer.publish() }
        #expect(error?.code == .publishDestination)
        await first.stop()
        #expect(!FileManager.default.fileExists(atPath: served.appending("game/catalog.json").path))
        let before = Self.files(in: served.appending("game"))
        #expect(before.count == 1, "\(before)")

        // Back up (on another port): the rerun skips what arrived and finishes.
        let second = try await RcloneWebDAV.start(serving: served.url)
        let steps = Steps()
        let report = try Self.publisher(fixture, to: .parse(second.remote("game")), steps: steps, options: options).publish()
        #expect(report.plan.present.map(\.path) == before)
        #expect(Self.files(in: served.appending("game")) == Self.files(in: fixture.catalog))
        for path in Self.files(in: fixture.catalog) {
            #expect(try Data(contentsOf: served.appending("game/" + path)) == Data(contentsOf: fixture.catalog.appending(path: path)), "\(path)")
        }
        #expect(steps.uploaded.last == "catalog.json")
        // Once more: nothing but catalog.json goes up.
        let again = try Self.publisher(fixture, to: .parse(second.remote("game")), options: options).plan()
        #expect(again.uploads.map(\.path) == ["catalog.json"])
        await second.stop()
    }
}
