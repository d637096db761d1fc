import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// A store whose database, pack folders or catalog were changed outside the runtime: every
/// command gets a typed error or repairs, nothing outside the store is created or deleted, no
/// process traps, and no file serves bytes other than the current manifest lists.
struct TamperedStoreTests {
    /// A fixture installed from a loopback server into `root/store`, beside which a victim folder
    /// `root/victim` stands that nothing may touch.
    struct Installed {
        let fixture: CatalogFixture
        let root: TemporaryDirectory
        var store: URL { root.appending("store") }
        var victim: URL { root.appending("victim") }
        var database: URL { store.appending(path: ResourceStore.databaseName) }

        static func make(tags: [String] = ["small", "big"], catalog: URL? = nil, fixture: CatalogFixture) async throws -> Installed {
            let root = try TemporaryDirectory(prefix: "odr-tampered")
            try FileManager.default.createDirectory(at: root.appending("victim"), withIntermediateDirectories: true)
            try Data("keep me".utf8).write(to: root.appending("victim/precious.txt"))
            let installed = Installed(fixture: fixture, root: root)
            _ = try await InstallerTests.install(tags, from: catalog ?? fixture.catalog, store: installed.store)
            return installed
        }

        /// Runs SQL on the store's database as another program would.
        func tamper(_ sql: String) throws {
            try SQLiteDatabase(path: database.path).execute(sql: sql)
        }

        /// Every path below `root` outside the store: only the victim's folder and file.
        func outsideTheStore() -> [String] {
            root.allFiles().filter { !$0.hasPrefix("store/") } + ((try? FileManager.default.contentsOfDirectory(atPath: root.url.path)) ?? []).sorted()
        }
    }

    static let untouched = ["victim/precious.txt", "store", "victim"]

    // MARK: Numbers out of range

    @Test(arguments: [
        "installedBytes = 9223372036854775807", "installedBytes = -9223372036854775808", "archiveBytes = -1",
        "useCount = 9223372036854775807", "installedAt = 'yesterday'", "lastUsedAt = 1e999", "isInstalled = 7",
    ])
    func aRowOutOfRangeIsADamagedPackNotATrap(_ assignment: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(fixture: fixture)
        let store = try ResourceStore(directory: installed.store)
        let manager = try ResourceManager(configuration: .init(catalogURL: fixture.catalog, storeDirectory: installed.store))
        let victim = try #require(try store.packs().first).id
        let others = try store.installedPackIDs().subtracting([victim])
        try installed.tamper("UPDATE pack SET \(assignment) WHERE id = '\(victim)'")

        // While the store is open: the row is trusted for nothing, verify names it, sums hold.
        #expect(try store.packs().map(\.id).contains(victim) == false)
        #expect(try store.installedPackIDs() == others)
        #expect(try store.usage().installedBytes >= 0)
        let problems = try store.verify()
        #expect(problems.contains { $0.packID == victim && $0.message.hasPrefix("damaged database row") }, "\(problems)")
        _ = try await manager.purge(bytes: .max)
        #expect(Set(try manager.store.verify().map(\.packID)) == [victim])

        // Opening repairs it: the row goes, and the next fetch installs the pack again.
        let reopened = try ResourceStore(directory: installed.store)
        #expect(reopened.repairReport.removedDamagedRows.count == 1)
        #expect(try reopened.verify().isEmpty)
        _ = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: installed.store)
        #expect(try reopened.installedPackIDs().contains(victim))
        #expect(try reopened.verify().isEmpty)

        // The commands do not die on it either: each repairs it when it opens the store.
        for arguments in [["verify", "--store", installed.store.path],
                          ["purge", "--catalog", fixture.catalog.path, "--store", installed.store.path, "--bytes", "1000000000"],
                          ["status", "--catalog", fixture.catalog.path, "--store", installed.store.path]] {
            _ = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: installed.store)
            try installed.tamper("UPDATE pack SET \(assignment) WHERE id = '\(victim)'")
            let outcome = try await ODRExecutable.run(arguments)
            #expect(!outcome.killedBySignal, "\(arguments[0]): \(outcome.stderr)")
            #expect(outcome.status == 0, "\(arguments[0]): \(outcome.stdout) \(outcome.stderr)")
            #expect(try ResourceStore(directory: installed.store).verify().isEmpty)
        }
    }

    /// The rows' sizes are not the disk's: every figure is read from the files' inodes, so rows
    /// claiming 2^62 bytes each (valid one by one, past Int64 together) change no figure, and a
    /// purge of `Int64.max` bytes neither traps nor claims what it did not free.
    @Test func hugeButValidSizesInRowsChangeNoFigure() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(fixture: fixture)
        let store = try ResourceStore(directory: installed.store)
        let onDisk = try store.usage().installedBytes
        #expect(onDisk > 0)
        try installed.tamper("UPDATE pack SET installedBytes = \(StoreRow.maximumBytes), archiveBytes = \(StoreRow.maximumBytes)")
        #expect(try store.installedPackIDs().count >= 3)
        #expect(try store.usage().installedBytes == onDisk)
        let verify = try await ODRExecutable.run(["verify", "--store", installed.store.path])
        #expect(verify.status == 0 && !verify.killedBySignal, "\(verify.stderr)")
        let manager = try ResourceManager(configuration: .init(catalogURL: fixture.catalog, storeDirectory: installed.store))
        try await manager.prepare()
        let proposal = try manager.purgePlan(bytes: .max)
        #expect(proposal.bytesFreed == onDisk)
        #expect(proposal.shortfall == Int64.max - onDisk)
        let purge = try await ODRExecutable.run(["purge", "--catalog", fixture.catalog.path, "--store", installed.store.path, "--bytes", "9223372036854775807"])
        #expect(purge.status == 0 && !purge.killedBySignal, "\(purge.stderr)")
        #expect(try store.installedPackIDs().isEmpty, "\(purge.stdout)")
        #expect(try store.usage().installedBytes == 0)
    }

    // MARK: Ids that would become paths outside the store

    @Test func aPackIDFromATamperedDatabaseNeverBecomesAPath() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(fixture: fixture)
        let hostile = "../../victim"
        let insert = """
            INSERT INTO pack (id, archiveBytes, installedBytes, installedAt, lastUsedAt, isInstalled, useCount)
            VALUES ('\(hostile)', 10, 10, 1, 1, 1, 0);
            INSERT INTO packEntry (packID, name, size, sha256) VALUES ('\(hostile)', 'precious.txt', 7, NULL);
            """
        let store = try ResourceStore(directory: installed.store)
        try installed.tamper(insert)

        // Through the library, with the store open while the row appears.
        #expect(try store.packs().contains { $0.id == hostile } == false)
        #expect(try store.verify().contains { $0.message.hasPrefix("damaged database row") })
        await #expect(throws: ResourceError.self) { try await store.removePack(id: hostile, reason: .leastRecentlyUsed) }
        do { _ = try await store.removePack(id: hostile, reason: .leastRecentlyUsed) } catch { #expect(error.code == .invalidArgument) }
        let manager = try ResourceManager(configuration: .init(catalogURL: fixture.catalog, storeDirectory: installed.store))
        try await manager.prepare()
        _ = try await manager.purge(bytes: .max)
        #expect(manager.store.isPackInUse(id: hostile) == false)
        #expect(installed.outsideTheStore() == Self.untouched, "nothing outside the store was created or deleted")

        // Through the commands, each starting on the tampered row.
        let common = ["--catalog", fixture.catalog.path, "--store", installed.store.path]
        for arguments in [["status"] + common, ["purge"] + common + ["--bytes", "9223372036854775807"], ["fetch"] + common + ["small"],
                          ["path"] + common + ["small/notes.txt"], ["verify", "--store", installed.store.path]] {
            try? installed.tamper(insert)
            let outcome = try await ODRExecutable.run(arguments)
            #expect(!outcome.killedBySignal, "\(arguments[0])")
            #expect(outcome.status == 0, "\(arguments[0]): \(outcome.stdout) \(outcome.stderr)")
            #expect(installed.outsideTheStore() == Self.untouched, "\(arguments[0]) changed something outside the store")
        }
        #expect(try Data(contentsOf: installed.victim.appending(path: "precious.txt")) == Data("keep me".utf8))
        #expect(try ResourceStore(directory: installed.store).verify().isEmpty)
    }

    @Test func namesInPacksAndStagingThatAreNotPackIDsAreRemovedWithoutLocks() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(fixture: fixture)
        for folder in ["packs/not-a-pack", "staging/..hidden.d"] {
            try FileManager.default.createDirectory(at: installed.store.appending(path: folder), withIntermediateDirectories: true)
        }
        let reopened = try ResourceStore(directory: installed.store)
        #expect(reopened.repairReport.removedPackFolders == ["not-a-pack"])
        #expect(reopened.repairReport.removedStagingItems == ["..hidden.d"])
        let locks = try FileManager.default.contentsOfDirectory(atPath: installed.store.appending(path: "locks").path)
        #expect(locks.allSatisfy { !$0.hasPrefix("not-a-pack") && $0 != ".lock" }, "\(locks)")
        #expect(try reopened.verify().isEmpty)
    }

    // MARK: Catalog rows

    /// A damaged catalog row counts as never fetched and is replaced by the next check; a damaged
    /// trust record is never reset silently: checks fail with `storage-failure` until a repair.
    @Test func aDamagedCatalogRowIsReplacedAndADamagedTrustRecordWaitsForRepair() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(tags: ["small"], fixture: fixture)
        let store = try ResourceStore(directory: installed.store)
        let client = CatalogClient(catalogURL: fixture.catalog, store: store, transport: try TransferEngine())
        let serial = try fixture.index().serial

        try installed.tamper("UPDATE catalog SET highestSerial = 1e30, checkedAt = 'never'")
        #expect(try store.followedCatalog(url: fixture.catalog) == nil)
        _ = try await client.refresh()
        #expect(try store.followedCatalog(url: fixture.catalog)?.highestSerial == serial)

        try installed.tamper("UPDATE catalogTrust SET highestSerial = 'many'")
        do throws(ResourceError) {
            _ = try await client.refresh()
            Issue.record("a damaged trust record was trusted or reset")
        } catch {
            #expect(error.code == .storageFailure)
            #expect(error.message.contains("--repair"))
        }
        let report = try await store.repairDamage()
        #expect(report.removedDamagedRows.count == 1, "\(report)")
        _ = try await client.refresh()
        #expect(try store.catalogTrust(catalogID: fixture.index().id)?.highestSerial == serial)
        #expect(try store.verify().isEmpty)
    }

    /// The advice of that `storage-failure` is true: `odr verify` reports the damaged trust
    /// record and `odr verify --repair` forgets it, after which the catalog checks again. Before,
    /// verify never read trust rows, so `--repair` found nothing to do and the store stayed stuck.
    @Test func odrVerifyRepairForgetsADamagedTrustRecord() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(tags: ["small"], fixture: fixture)
        try installed.tamper("UPDATE catalogTrust SET keySetJSON = 7")
        let common = ["--catalog", fixture.catalog.path, "--store", installed.store.path]
        let stuck = try await ODRExecutable.run(["update"] + common)
        #expect(stuck.status == 1 && stuck.stderr.contains("error[storage-failure]") && stuck.stderr.contains("odr verify --repair"), "\(stuck.stderr)")

        let verify = try await ODRExecutable.run(["verify", "--store", installed.store.path])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("mismatch: damaged trust record of catalog"), "\(verify.stdout)")
        let repair = try await ODRExecutable.run(["verify", "--store", installed.store.path, "--repair"])
        #expect(repair.status == 0, "\(repair.stdout) \(repair.stderr)")
        #expect(repair.stdout.contains("repaired: removed trust record of catalog"), "\(repair.stdout)")
        let again = try await ODRExecutable.run(["update"] + common)
        #expect(again.status == 0, "\(again.stderr)")
    }

    /// A trust record whose key set is not a blob (an integer, text) is damaged, not read as "no
    /// key set": that would forget a key rotation and accept the rotated-away keys again.
    @Test(arguments: ["7", "'{\"version\":1}'"])
    func aTrustRecordWithAKeySetOfAnotherTypeIsDamagedNotForgotten(_ keySet: String) throws {
        let directory = try TemporaryDirectory(prefix: "odr-tampered")
        let store = try ResourceStore(directory: directory.url)
        try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path)
            .execute(sql: "INSERT INTO catalogTrust (catalogID, highestSerial, keySetJSON) VALUES ('game', 3, \(keySet))")
        #expect {
            _ = try store.catalogTrust(catalogID: "game")
        } throws: { error in
            let error = error as? ResourceError
            return error?.code == .storageFailure && error?.message.contains("--repair") == true
        }
    }

    // MARK: The way back from a damaged file

    @Test func verifyRepairBringsBackAFileChangedInPlace() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(tags: ["small"], fixture: fixture)
        let store = try ResourceStore(directory: installed.store)
        let snapshot = try #require(try CatalogClient(catalogURL: fixture.catalog, store: store, transport: TransferEngine()).storedSnapshot())
        let file = try store.url(forResource: "small/notes.txt", in: snapshot)
        chmod(file.path, 0o644)
        try Data("NOTES\n".utf8).write(to: file)  // same size: opening the store does not notice

        let common = ["--catalog", fixture.catalog.path, "--store", installed.store.path]
        let verify = try await ODRExecutable.run(["verify", "--store", installed.store.path])
        #expect(verify.status == 1)
        #expect(verify.stdout.contains("mismatch"), "\(verify.stdout)")
        #expect(verify.stderr.contains("error[integrity]") && verify.stderr.contains("--repair"), "\(verify.stderr)")
        let stuck = try await ODRExecutable.run(["fetch"] + common + ["small"])
        #expect(stuck.status == 0)

        let repair = try await ODRExecutable.run(["verify", "--store", installed.store.path, "--repair"])
        #expect(repair.status == 0, "\(repair.stdout) \(repair.stderr)")
        #expect(repair.stdout.contains("repaired: pack"), "\(repair.stdout)")
        // It says what to fetch again, by tag.
        #expect(repair.stdout.contains("removed; fetch again: odr fetch small"), "\(repair.stdout)")
        let fetch = try await ODRExecutable.run(["fetch"] + common + ["small"])
        #expect(fetch.status == 0, "\(fetch.stderr)")
        let path = try await ODRExecutable.run(["path"] + common + ["small/notes.txt"])
        let served = path.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try Data(contentsOf: URL(filePath: served)) == fixture.contents(of: "small/notes.txt"))
        #expect(try await ODRExecutable.run(["verify", "--store", installed.store.path]).status == 0)
    }

    // MARK: Serving only what the manifest lists

    /// A name in a pack folder that holds something other than its entry (a swapped link, a folder)
    /// is never served: the entry is.
    @Test(arguments: ["other file", "folder"])
    func aPathThatHoldsSomethingElseServesItsEntry(_ replacement: String) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let installed = try await Installed.make(tags: ["small"], fixture: fixture)
        let store = try ResourceStore(directory: installed.store)
        let snapshot = try #require(try CatalogClient(catalogURL: fixture.catalog, store: store, transport: TransferEngine()).storedSnapshot())
        let file = try #require(snapshot.manifest.files.first { $0.path != $0.entry })
        let byPath = store.packURL(id: file.pack).appending(path: file.path)
        try FileManager.default.removeItem(at: byPath)
        if replacement == "folder" {
            try FileManager.default.createDirectory(at: byPath, withIntermediateDirectories: true)
        } else {
            try Data(repeating: 0x41, count: Int(file.size)).write(to: byPath)
        }
        let served = try store.url(forResource: file.path, in: snapshot)
        #expect(try Data(contentsOf: served) == fixture.contents(of: file.path))
    }

    /// Two paths whose entries (and digests) are swapped: the install is refused rather than
    /// serving each path the other's bytes.
    @Test func swappedEntriesAreRefusedNotServedCrossed() async throws {
        let fixture = try CatalogFixture()
        try fixture.write("a/x.txt", Data(String(repeating: "x", count: 300).utf8))
        try fixture.write("a/y.txt", Data(String(repeating: "y", count: 500).utf8))
        try fixture.write("b/z.txt", Data("z".utf8))
        try Data(#"{"catalogID": "swap", "tags": {"a": {"include": ["a"]}, "b": {"include": ["b"]}}}"#.utf8)
            .write(to: fixture.assets.appending(path: "odr.json"))
        try await fixture.build()
        try Self.republish(fixture, version: 1) { manifest in
            var files = manifest.files
            let x = try #require(files.firstIndex { $0.path == "a/x.txt" }), y = try #require(files.firstIndex { $0.path == "a/y.txt" })
            (files[x].path, files[y].path) = (files[y].path, files[x].path)
            manifest.files = files.sorted { $0.path < $1.path }
        }
        let root = try TemporaryDirectory(prefix: "odr-tampered")
        do {
            _ = try await InstallerTests.install(["a"], from: fixture.catalog, store: root.appending("store"))
            let store = try ResourceStore(directory: root.appending("store"))
            let snapshot = try #require(try CatalogClient(catalogURL: fixture.catalog, store: store, transport: TransferEngine()).storedSnapshot())
            for path in ["a/x.txt", "a/y.txt"] {
                // Whatever is served is what the manifest lists for the path.
                let file = try #require(snapshot.lookup.file(atPath: path))
                #expect(ContentHash.sha256Hex(of: try Data(contentsOf: store.url(forResource: path, in: snapshot))) == file.sha256)
            }
            Issue.record("the swapped entries were installed")
        } catch let error as ResourceError {
            #expect(error.code == .invalidCatalog, "\(error)")
        }
    }

    /// Version 2 lists an installed pack id with other contents: the old bytes never serve it, and
    /// a fetch installs what version 2 lists.
    @Test(arguments: [true, false])
    func aPackIDReusedForOtherContentsIsInstalledAgain(serverHasTheNewArchive: Bool) async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let root = try TemporaryDirectory(prefix: "odr-tampered")
        try await withTestServer(root: fixture.catalog) { server in
            let (store, first, _) = try await InstallerTests.install(["small"], from: server.baseURL, store: root.appending("store"))
            let old = try #require(first.lookup.file(atPath: "small/notes.txt")).pack
            try await Self.publishVersion2ReusingPackID(old, fixture: fixture, withItsArchive: serverHasTheNewArchive)
            let client = CatalogClient(catalogURL: server.baseURL, store: store, transport: try TransferEngine())
            let second = try await client.refresh()
            #expect(second.version == 2)
            do throws(ResourceError) {
                let url = try store.url(forResource: "small/notes.txt", in: second)
                Issue.record("served \(url.path) before installing version 2's pack")
            } catch {
                #expect(error.code == .resourceNotInstalled)
            }
            let installer = PackInstaller(store: store, transport: try TransferEngine())
            do throws(ResourceError) {
                _ = try await installer.install(try second.packs(forTags: ["small"]), from: second)
                #expect(serverHasTheNewArchive)
                #expect((try? Data(contentsOf: store.url(forResource: "small/notes.txt", in: second))) == Data("new notes\n".utf8))
            } catch {
                #expect(!serverHasTheNewArchive)
                #expect(error.code == .integrity, "\(error)")
                #expect(throws: ResourceError.self) { try store.url(forResource: "small/notes.txt", in: second) }
            }
            #expect(try store.verify().isEmpty || !serverHasTheNewArchive)
        }
    }

    /// The same through `odr`, as a player's machine runs it: the second fetch installs version 2's
    /// pack under the reused id, and `odr path` serves its bytes.
    @Test func odrFetchAndPathServeTheNewContentsOfAReusedPackID() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let root = try TemporaryDirectory(prefix: "odr-tampered")
        try await withTestServer(root: fixture.catalog) { server in
            let common = ["--catalog", server.baseURL.absoluteString, "--store", root.appending("store").path]
            #expect(try await ODRExecutable.run(["fetch"] + common + ["small"]).status == 0)
            let old = try #require(try fixture.manifest(1).files.first { $0.path == "small/notes.txt" }).pack
            try await Self.publishVersion2ReusingPackID(old, fixture: fixture, withItsArchive: true)
            let fetch = try await ODRExecutable.run(["fetch"] + common + ["small"])
            #expect(fetch.status == 0, "\(fetch.stderr)")
            let path = try await ODRExecutable.run(["path"] + common + ["small/notes.txt"])
            #expect(path.status == 0, "\(path.stderr)")
            let served = URL(filePath: path.stdout.trimmingCharacters(in: .whitespacesAndNewlines))
            #expect(try Data(contentsOf: served) == Data("new notes\n".utf8))
            #expect(try await ODRExecutable.run(["verify", "--store", root.appending("store").path]).status == 0)
        }
    }

    /// Builds version 2 with a changed `small/notes.txt` (a new pack), then renames that pack to
    /// `old`, the id of version 1's pack, in the manifest; with `withItsArchive`, the server's
    /// `packs/<old>.zip` becomes the new archive.
    static func publishVersion2ReusingPackID(_ old: String, fixture: CatalogFixture, withItsArchive: Bool) async throws {
        try fixture.write("small/notes.txt", Data("new notes\n".utf8))
        try await fixture.build()
        let new = try #require(try fixture.manifest(2).files.first { $0.path == "small/notes.txt" }).pack
        try #require(new != old)
        try republish(fixture, version: 2) { manifest in
            let json = String(decoding: try manifest.encoded(), as: UTF8.self).replacingOccurrences(of: new, with: old)
            manifest = try VersionManifest.decode(from: Data(json.utf8))
        }
        if withItsArchive {
            let packs = fixture.catalog.appending(path: "packs")
            try FileManager.default.removeItem(at: packs.appending(path: "\(old).zip"))
            try FileManager.default.copyItem(at: packs.appending(path: "\(new).zip"), to: packs.appending(path: "\(old).zip"))
        }
    }

    /// Rewrites version `version`'s manifest through `change` and pins the result in `catalog.json`.
    static func republish(_ fixture: CatalogFixture, version: Int, _ change: (inout VersionManifest) throws -> Void) throws {
        var index = try fixture.index()
        let position = try #require(index.versions.firstIndex { $0.number == version })
        var manifest = try fixture.manifest(version)
        try change(&manifest)
        // As a hostile publisher would write it: a tampered manifest may break the format's rules.
        let data = try CatalogFixture.unvalidatedJSON(manifest)
        try data.write(to: fixture.catalog.appending(path: index.versions[position].manifest))
        index.versions[position].sha256 = ContentHash.sha256Hex(of: data)
        index.versions[position].size = Int64(data.count)
        index.serial += 1
        try index.encoded().write(to: fixture.catalog.appending(path: CatalogIndex.fileName))
    }
}
