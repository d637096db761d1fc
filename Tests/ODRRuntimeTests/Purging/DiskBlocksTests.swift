import Foundation
import ODRFormat
@testable import ODRRuntime
import ODRTestSupport
import Testing

/// What an install reserves and what the store counts are the disk's blocks, as `du` sees them.
struct DiskBlocksTests {
    @Test func filesRoundUpToWholeBlocksAndFoldersTakeOneEach() {
        #expect(DiskBlocks.bytes(ofFile: 0) == 0)
        #expect(DiskBlocks.bytes(ofFile: 1) == 4096)
        #expect(DiskBlocks.bytes(ofFile: 4096) == 4096)
        #expect(DiskBlocks.bytes(ofFile: 4097) == 8192)
        #expect(DiskBlocks.bytes(ofFile: -5) == 0)
        #expect(DiskBlocks.bytes(ofFile: .max) == .max, "clamped, not trapping")
        #expect(DiskBlocks.bytes(ofFile: 1000, blockSize: 0) == 1000, "a block size under 1 counts bytes")
        #expect(DiskBlocks.bytes(ofFileSizes: [100, 5000], folders: 2) == 4096 + 8192 + 2 * 4096)
        #expect(DiskBlocks.bytes(ofFileSizes: [.max, .max], folders: .max) == .max)
        #expect(DiskBlocks.folderCount(ofEntryNames: []) == 1, "the pack's own folder")
        #expect(DiskBlocks.folderCount(ofEntryNames: ["a/b/c.png", "a/b/d.png", "a/e.png", "f.png", "g/"]) == 4)
    }

    /// The room an install reserves before it starts is what `du` sees of the pack after it, on a
    /// file system of whole blocks (ext4 here): never less, so a budget check never lets an
    /// install overrun, and not much more.
    @Test func anInstallReservesWhatDuSeesAfterIt() async throws {
        let fixture = try CatalogFixture.game(bigBytes: 70_000)
        try await fixture.build()
        let directory = try TemporaryDirectory(prefix: "odr-store")
        let store = try ResourceStore(directory: directory.url)
        let engine = try TransferEngine()
        let client = CatalogClient(catalogURL: fixture.catalog, store: store, transport: engine)
        let snapshot = try await client.describe(["small", "big"], in: try await client.refresh())
        let installer = PackInstaller(store: store, transport: engine)
        let packs = try snapshot.packs(forTags: ["small", "big"])
        let reserved = try packs.map { try installer.newDiskBytes(of: $0, in: snapshot) }
        _ = try await installer.install(packs, from: snapshot)
        for (pack, reserved) in zip(packs, reserved) {
            let measured = try diskUsage(of: [store.packFolder(id: pack.id).path])
            #expect(reserved >= measured && reserved - measured <= 64 << 10, "pack \(pack.id): reserved \(reserved), du \(measured)")
            #expect(try installer.newDiskBytes(of: pack, in: snapshot) == 0, "installed")
        }
        // small's two files of one content are one file on disk, reserved once.
        let small = try #require(packs.first { $0.tags == ["small"] })
        #expect(try store.diskAccount().pack(id: small.id)?.bytes == (try diskUsage(of: [store.packFolder(id: small.id).path])))
    }
}
