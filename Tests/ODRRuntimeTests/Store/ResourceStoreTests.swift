import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

struct ResourceStoreTests {
    @Test func openingRepairsWhatACrashLeftBehind() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: directory.url)
        let packs = snapshot.manifest.packs.map(\.id)
        let missing = packs[0], incomplete = packs[1]
        try FileManager.default.removeItem(at: store.packURL(id: missing))
        let someEntry = try #require(snapshot.manifest.expectedEntries(inPack: incomplete).first)
        let victim = store.packURL(id: incomplete).appending(path: someEntry.name)
        try FileManager.default.removeItem(at: victim)
        let orphan = String(repeating: "a", count: 64), stray = String(repeating: "b", count: 64)
        try FileManager.default.createDirectory(at: directory.appending("packs/\(orphan)"), withIntermediateDirectories: true)
        // A pack being assembled that no catalog lists: nothing would ever pick it up again.
        try FileManager.default.createDirectory(at: directory.appending("staging/\(orphan).d"), withIntermediateDirectories: true)
        try Data("entry".utf8).write(to: directory.appending("staging/\(orphan).d/entry.bin"))
        try Data("data 30 cut.bin\n".utf8).write(to: directory.appending("staging/\(orphan).journal"))
        // Not a folder, and the raw archive of the installer before entry-level installs: removed.
        try Data("x".utf8).write(to: directory.appending("staging/\(stray).d"))
        try Data("partial".utf8).write(to: directory.appending("staging/\(stray).zip"))
        try Data(#"{"entityTag":"\"e\""}"#.utf8).write(to: directory.appending("staging/\(stray).zip.resume"))

        // The first store stays open, as a crashed process would have left it: no clean close.
        let reopened = try withExtendedLifetime(store) { try ResourceStore(directory: directory.url) }
        let report = reopened.repairReport
        #expect(report.checkedEveryEntry)
        #expect(report.removedPackFolders == [orphan])
        #expect(Set(report.packsMarkedNotInstalled) == [missing, incomplete])
        #expect(report.removedStagingItems == ["\(orphan).d", "\(orphan).journal", "\(stray).d", "\(stray).zip", "\(stray).zip.resume"])
        #expect(report.keptPartialDownloads.isEmpty)
        #expect(!FileManager.default.fileExists(atPath: reopened.packURL(id: incomplete).path))
        #expect(try reopened.installedPackIDs() == Set(packs).subtracting([missing, incomplete]))
        #expect(try reopened.events().filter { $0.kind == .repair }.count == 2)
        #expect(try reopened.verify().isEmpty)
    }

    /// Staging keeps a pack being assembled only while a stored catalog version lists it and the
    /// store lacks it: then its verified entries save the next fetch bytes.
    @Test func stagingKeepsOnlyPacksAnInstallCanStillUse() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let installed = try store.installedPackIDs()
        let wanted = try #require(snapshot.manifest.packs.map(\.id).first { !installed.contains($0) })
        let done = try #require(installed.first)
        for id in [wanted, done] {
            try FileManager.default.createDirectory(at: directory.appending("staging/\(id).d"), withIntermediateDirectories: true)
            try Data("entry".utf8).write(to: directory.appending("staging/\(id).d/entry.bin"))
            try Data("data 30 entry.bin\n".utf8).write(to: directory.appending("staging/\(id).journal"))
        }
        let reopened = try withExtendedLifetime(store) { try ResourceStore(directory: directory.url) }
        #expect(reopened.repairReport.keptPartialDownloads == [wanted])
        #expect(Set(reopened.repairReport.removedStagingItems) == ["\(done).d", "\(done).journal"])
        #expect(try Data(contentsOf: directory.appending("staging/\(wanted).d/entry.bin")) == Data("entry".utf8))
        #expect(FileManager.default.fileExists(atPath: directory.appending("staging/\(wanted).journal").path))
    }

    /// A store whose packs were installed before it recorded their entries (schema v1) is checked
    /// against the manifest once, and the entries are recorded then: later opens find a missing file
    /// even with no manifest left to consult.
    @Test func packsInstalledBeforeEntriesWereRecordedAreCheckedAndBackfilled() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: directory.url)
        let packs = snapshot.manifest.packs.map(\.id)
        let database = try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path)
        let recorded = try database.fetchOne(sql: "SELECT COUNT(*) FROM packEntry")?.value(at: 0).integer()
        #expect((recorded ?? 0) > 0)
        try database.execute(sql: "DELETE FROM packEntry")
        let incomplete = packs[0]
        let victim = try #require(snapshot.manifest.expectedEntries(inPack: incomplete).first)
        try FileManager.default.removeItem(at: store.packURL(id: incomplete).appending(path: victim.name))

        let first = try withExtendedLifetime(store) { try ResourceStore(directory: directory.url) }
        #expect(first.repairReport.packsMarkedNotInstalled == [incomplete])
        let backfilled = Set(try database.fetchAll(sql: "SELECT DISTINCT packID FROM packEntry").compactMap { try $0.value(at: 0).text() })
        #expect(backfilled == Set(packs.dropFirst()))

        // With the manifests gone, only the recorded entries can tell that a file is missing.
        try database.execute(sql: "DELETE FROM manifest")
        let damaged = packs[1]
        let second = try #require(snapshot.manifest.expectedEntries(inPack: damaged).first)
        try FileManager.default.removeItem(at: first.packURL(id: damaged).appending(path: second.name))
        let reopened = try withExtendedLifetime(first) { try ResourceStore(directory: directory.url) }
        #expect(reopened.repairReport.packsMarkedNotInstalled == [damaged])
        #expect(try reopened.installedPackIDs() == Set(packs.dropFirst(2)))
    }

    /// After a clean close, opening checks only that each installed pack has its folder; after a
    /// crash (or while another store is open) it checks every entry again.
    @Test func aCleanCloseSkipsTheEntryCheckAndACrashDoesNot() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let packs: [String], entry: PackEntryExpectation
        do {
            let (_, snapshot, _) = try await InstallerTests.install(["small", "big"], from: fixture.catalog, store: directory.url)
            packs = snapshot.manifest.packs.map(\.id)
            entry = try #require(snapshot.manifest.expectedEntries(inPack: packs[1]).first)
        }
        // Both stores above (the installer's and the snapshot's) are closed now.
        let packsFolder = directory.appending("packs")
        try FileManager.default.removeItem(at: packsFolder.appending(path: packs[0]))
        try FileManager.default.removeItem(at: packsFolder.appending(path: packs[1]).appending(path: entry.name))

        let clean = try ResourceStore(directory: directory.url)
        #expect(!clean.repairReport.checkedEveryEntry)
        #expect(clean.repairReport.packsMarkedNotInstalled == [packs[0]])
        #expect(try clean.verify().map(\.path) == [entry.name])

        // `clean` is still open: a second opener cannot know that nobody crashed, so it checks all.
        let second = try withExtendedLifetime(clean) { try ResourceStore(directory: directory.url) }
        #expect(second.repairReport.checkedEveryEntry)
        #expect(second.repairReport.packsMarkedNotInstalled == [packs[1]])
    }

    /// The store reads its compact copy of a manifest from `manifests/<SHA-256 of the JSON>.odrm`;
    /// a damaged or missing one falls back to the JSON and is written again.
    @Test func aDamagedOrMissingCompactManifestFallsBackToTheJSON() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let database = try SQLiteDatabase(path: directory.appending(ResourceStore.databaseName).path)
        let digest = try #require(try database.fetchOne(sql: "SELECT jsonSHA256 FROM manifestFile")?.value(at: 0).text())
        let json = try #require(try database.fetchOne(sql: "SELECT json FROM manifest")?.value(at: 0).blob())
        #expect(digest == ContentHash.sha256Hex(of: json))
        let file = directory.appending("manifests/\(digest).odrm")
        let compact = try Data(contentsOf: file)
        #expect(try VersionManifest(compactFileAt: file) == snapshot.manifest)

        for damage in [Data([0x4f, 0x44, 0x52, 0x4d, 0x02, 0xff]), nil] {
            if let damage { try damage.write(to: file) } else { try FileManager.default.removeItem(at: file) }
            #expect(try store.manifest(catalogURL: fixture.catalog, version: snapshot.version) == snapshot.manifest)
            #expect(try Data(contentsOf: file) == compact)
        }
    }

    /// A compact manifest file that no stored manifest names (its transaction failed) is removed
    /// when the store opens; the named one stays.
    @Test func unnamedManifestFilesAreRemovedOnOpen() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        _ = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let folder = directory.appending("manifests")
        let named = try FileManager.default.contentsOfDirectory(atPath: folder.path)
        #expect(named.count == 1)
        let orphan = String(repeating: "a", count: 64) + ".odrm"
        try Data("left over".utf8).write(to: folder.appending(path: orphan))
        let reopened = try ResourceStore(directory: directory.url)
        #expect(reopened.repairReport.removedManifestFiles == [orphan])
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == named)
    }

    @Test func aStoreThatDoesNotFlushNeverVouchesForACleanClose() throws {
        let directory = try TemporaryDirectory(prefix: "odr-store")
        do { _ = try ResourceStore(directory: directory.url, synchronousWrites: false) }
        #expect(try ResourceStore(directory: directory.url).repairReport.checkedEveryEntry)
        #expect(try !ResourceStore(directory: directory.url).repairReport.checkedEveryEntry)
    }

    @Test func verifyFindsACorruptedFile() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["small"], from: fixture.catalog, store: directory.url)
        let url = try store.url(forResource: "small/notes.txt", in: snapshot)
        chmod(url.path, 0o644)
        try Data("NOTES\n".utf8).write(to: url)
        let problems = try store.verify()
        #expect(problems.map(\.path) == ["small/notes.txt"])
    }

    @Test func prioritiesPurgesAndTheEventLogPersist() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["big"], from: fixture.catalog, store: directory.url)
        try store.setPreservationPriority(0.95, forTag: "big", catalogURL: fixture.catalog)
        let pack = try #require(snapshot.lookup.tag(named: "big")?.packs.first)
        try await store.removePack(id: pack, reason: .leastRecentlyUsed)

        let reopened = try ResourceStore(directory: directory.url)
        #expect(try reopened.preservationPriorityOverrides(catalogURL: fixture.catalog) == ["big": 0.95])
        #expect(snapshot.preservationPriority(ofTag: "small", overrides: [:]) == 0.3)
        #expect(try reopened.pack(id: pack)?.isInstalled == false)
        #expect(!FileManager.default.fileExists(atPath: reopened.packURL(id: pack).path))
        let last = try #require(try reopened.events().last)
        #expect(last.kind == .purge && last.packID == pack && last.reason == "least-recently-used")
        #expect(try reopened.usage().installedPacks == snapshot.lookup.packs(forTags: ["big"]).count - 1)
    }

    @Test func useCountsGrowWithEachBeginAndOutlivePurgesAndReopening() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 1000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let (store, snapshot, _) = try await InstallerTests.install(["big"], from: fixture.catalog, store: directory.url)
        let pack = try #require(snapshot.lookup.tag(named: "big")?.packs.first)
        #expect(try store.pack(id: pack)?.useCount == 0, "installed but not used yet")
        try store.markUsed([pack], beginnings: [pack: 2])
        try store.markUsed([pack])  // a request ended: the time moves, the count does not
        #expect(try store.pack(id: pack)?.useCount == 2)
        try await store.removePack(id: pack, reason: .leastRecentlyUsed)

        let reopened = try withExtendedLifetime(store) { try ResourceStore(directory: directory.url) }
        #expect(try reopened.pack(id: pack)?.useCount == 2, "a purge and a restart keep the count")
        try reopened.markUsed([], beginnings: [pack: 1])
        #expect(try reopened.pack(id: pack)?.useCount == 3)
    }

    @Test func packsOfAStoreFromBeforeUseCountsCountAsUsedOnce() throws {
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let id = String(repeating: "c", count: 64)
        do {
            // A store as the runtime left it before the use-count migration.
            let old = try SQLiteDatabase(path: directory.url.appending(path: ResourceStore.databaseName).path)
            try StoreSchema.migrator.migrate(old, upTo: "v4")
            try old.execute(sql: """
                INSERT INTO pack (id, archiveBytes, installedBytes, installedAt, lastUsedAt, isInstalled)
                VALUES ('\(id)', 10, 20, 1, 2, 0)
                """)
        }
        let store = try ResourceStore(directory: directory.url)
        let pack = try #require(try store.pack(id: id))
        #expect(pack.useCount == 1)
        #expect(pack.lastUsedAt == 2)
        try store.markUsed([id], beginnings: [id: 1])
        #expect(try store.pack(id: id)?.useCount == 2)
    }

    /// Migration v7 gathers the trust of every URL of a catalog into one record per catalog id:
    /// the highest serial, and the key set of the highest version.
    @Test func trustOfAStoreFromBeforeV7IsKeptPerCatalogID() throws {
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let key = try SigningKey(seed: Data(0..<32)).publicKey
        let rotated = try JSONEncoder().encode(try TrustedKeySet(version: 2, keys: [key], threshold: 1))
        let first = try JSONEncoder().encode(try TrustedKeySet(version: 1, keys: [key], threshold: 1))
        do {
            let old = try SQLiteDatabase(path: directory.url.appending(path: ResourceStore.databaseName).path)
            try StoreSchema.migrator.migrate(old, upTo: "v6")
            for (url, serial, keySet) in [("http://a/", 7, rotated), ("http://b/", 9, first)] {
                try old.execute(sql: "INSERT INTO catalog (url, distribution, catalogID, highestSerial, keySetJSON) VALUES (?, 'live', 'game', ?, ?)",
                                arguments: [url, serial, keySet])
            }
        }
        let store = try ResourceStore(directory: directory.url)
        let trust = try #require(try store.catalogTrust(catalogID: "game"))
        #expect(trust.highestSerial == 9)
        #expect(trust.keySet?.version == 2)
    }
}
