import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRServe
import ODRTestSupport
import Testing

/// Symbolic links planted in a store where it creates its files and folders (docs/STORE.md,
/// "Links"): the store removes them and makes its own in their place; nothing outside the store is
/// created, written or removed.
struct PlantedLinkTests {
    /// Plants, in `store`, a link at every place the store opens or creates a file or folder for
    /// the packs `ids`: dangling ones (an `O_CREAT` would make their target), ones to an existing
    /// file (an `O_TRUNC` would empty it) and ones to a folder (files would be made inside).
    static func plantLinks(in store: URL, packIDs ids: [String]) throws {
        let manager = FileManager.default
        for folder in ["locks", "staging", "manifests"] {
            try manager.createDirectory(at: store.appending(path: folder), withIntermediateDirectories: true)
        }
        var links: [String: String] = [
            "locks/store.lock": "victim/store.lock",
            "locks/session.lock": "victim/precious.txt",
            "locks/closed-cleanly": "victim/precious.txt",
            "manifests/meta": "victim",
            ResourceStore.databaseName + "-wal": "victim/wal",
            ResourceStore.databaseName + "-journal": "victim/journal",
            "packs": "victim",
        ]
        for id in ids {
            links["locks/\(id).lock"] = "victim/\(id).lock"
            links["locks/\(id).lease"] = "victim/precious.txt"
            links["staging/\(id).d"] = "victim"
            links["staging/\(id).journal"] = "victim/\(id).journal"
            links["staging/\(id).chunked"] = "victim"
        }
        let root = store.deletingLastPathComponent()
        for (at, target) in links {
            try manager.createSymbolicLink(atPath: store.appending(path: at).path, withDestinationPath: root.appending(path: target).path)
        }
    }

    @Test func linksPlantedWhereTheStoreCreatesFilesAreRemovedNeverFollowed() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 40_000)
        try await fixture.build()
        let root = try TemporaryDirectory(prefix: "odr-links")
        let victim = root.appending("victim"), store = root.appending("store")
        try FileManager.default.createDirectory(at: victim, withIntermediateDirectories: true)
        try Data("keep me".utf8).write(to: victim.appending(path: "precious.txt"))
        let ids = try fixture.manifest(1).packs.map(\.id)
        try Self.plantLinks(in: store, packIDs: ids)

        try await withTestServer(root: fixture.catalog) { server in
            let (resources, snapshot, summary) = try await InstallerTests.install(["small", "big"], from: server.baseURL, store: store)
            #expect(summary.installed.count == ids.count)
            try InstallerTests.expectInstalled(["small/map.json", "big/music.bin"], fixture: fixture, store: resources, snapshot: snapshot)
            #expect(try resources.verify().isEmpty)
        }
        // A purge takes the packs' locks and leases; a reopen repairs and writes the marker.
        let manager = try ResourceManager(configuration: .init(catalogURL: fixture.catalog, storeDirectory: store))
        _ = try await manager.purge(bytes: .max)
        _ = try ResourceStore(directory: store)

        // The victim folder holds exactly what it held, unchanged.
        let left = (try? FileManager.default.contentsOfDirectory(atPath: victim.path)) ?? ["(no folder)"]
        #expect(left == ["precious.txt"], "\(left)")
        #expect(try Data(contentsOf: victim.appending(path: "precious.txt")) == Data("keep me".utf8))
        // And no link is left in the store.
        let links = root.allFiles().filter { $0.hasPrefix("store/") }.filter { path in
            (try? FileManager.default.destinationOfSymbolicLink(atPath: root.appending(path).path)) != nil
        }
        #expect(links.isEmpty, "\(links)")
    }
}
