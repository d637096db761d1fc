import Foundation
import ODRFormat
import ODRRuntime
import ODRTestSupport
import Testing

/// The memory budget for metadata, measured on the real `odr fetch`: hostile split catalogs whose
/// metadata claims far more memory than a genuine one of a few megabytes ever does must end in the
/// typed error naming the limit, with the process's peak resident memory (`ru_maxrss`) under
/// 256 MiB (docs/SECURITY.md, "Hostile input").
///
/// The catalogs are folders (`--catalog DIR`), unsigned, so every pin is the attacker's to write.
struct MetadataMemoryCommandTests {
    static let budget = 256 << 20

    /// A split catalog of one tag, `big`, with one small file.
    static func splitCatalog() async throws -> CatalogFixture {
        let fixture = try CatalogFixture(rules: #"{ "catalogID": "memory", "tags": { "big": { "include": ["big"] } } }"#)
        try fixture.write("big/a.bin", deterministicBytes(count: 1_000, seed: 4001))
        try await fixture.build(splitMetadata: true)
        return fixture
    }

    /// Writes `manifest` as version 1's manifest and pins it in `catalog.json`.
    static func pin(manifest data: Data, in fixture: CatalogFixture) throws {
        let path = VersionManifest.manifestPath(forVersion: 1)
        try data.write(to: fixture.catalog.appending(path: path))
        var index = try CatalogIndex.decode(from: Data(contentsOf: fixture.catalog.appending(path: CatalogIndex.fileName)))
        let number = try #require(index.versions.firstIndex { $0.number == 1 })
        index.versions[number].sha256 = ContentHash.sha256Hex(of: data)
        index.versions[number].size = Int64(data.count)
        try CatalogFixture.unvalidatedJSON(index).write(to: fixture.catalog.appending(path: CatalogIndex.fileName))
    }

    /// Runs `odr fetch big` against the folder catalog, on a thread of its own.
    static func fetch(_ fixture: CatalogFixture) async throws -> MeasuredRun {
        let odr = try #require(ODRExecutable.url, "odr is not built; run swift build first")
        let store = try TemporaryDirectory(prefix: "odr-store")
        let arguments = ["fetch", "--catalog", fixture.catalog.path, "--store", store.url.path, "big"]
        return try await withCheckedThrowingContinuation { continuation in
            Thread { continuation.resume(with: Result { try runMeasuringPeakMemory(odr, arguments) }) }.start()
        }
    }

    /// Runs `odr fetch big` and expects `invalid-catalog` naming `limit`, at a peak under ``budget``.
    static func expectRefusedWithinBudget(_ fixture: CatalogFixture, naming limit: String) async throws {
        let run = try await fetch(fixture)
        #expect(!run.killedBySignal && run.status != 0, "\(run.stderr)")
        #expect(run.stderr.contains("error[invalid-catalog]") && run.stderr.contains(limit), "\(run.stderr)")
        #expect(run.peakResidentBytes < budget, "peak \(run.peakResidentBytes >> 20) MiB")
        print("odr fetch refused naming \(limit): peak resident \(run.peakResidentBytes >> 10) KiB")
    }

    /// One table of 1,500,000 minimal, valid-looking records (75 MB inflated, served deflated in
    /// a few MB) that its bin says the pack has: before the budget every record was decoded
    /// (about 230 bytes each beside the inflated bytes) before the table was found not to be the
    /// pack's; now the bin's count is refused before the table is fetched.
    @Test func aTableOfMillionsOfRecordsIsRefusedFromItsBinsCount() async throws {
        let fixture = try await Self.splitCatalog()
        let split = try SplitManifest.decode(from: Data(contentsOf: fixture.catalog.appending(path: VersionManifest.manifestPath(forVersion: 1))))
        var bin = try TagBin.decode(from: Data(contentsOf: fixture.catalog.appending(path: SplitMetadata.binPath(for: split.bins[0]))))
        let pack = bin.packs[0].pack

        let count = 1_500_000
        var table = Data("ODRT".utf8) + [1] + Self.rawSHA256(pack.id)
        Self.appendVarint(UInt64(count), to: &table)
        var generator = SeededGenerator(seed: 4002)
        for i in 0..<count {
            let path = Data(String(format: "big/f%07d", i).utf8)
            Self.appendVarint(UInt64(path.count), to: &table)
            table += path
            table.append(0)  // the entry is the path
            // A digest with a few varying bytes, so the table deflates like a real one (far below
            // 128 times), not like zeros.
            table += (0..<4).map { _ in UInt8.random(in: 0...255, using: &generator) } + [UInt8](repeating: 0x5A, count: 28)
            table += [1, 1, 0, 0]  // stored size 1, size 1, header offset 0, stored
        }
        let served = try SplitMetadata.served(compact: table)
        let tablePin = MetadataPin(of: served)
        try served.write(to: fixture.catalog.appending(path: SplitMetadata.tablePath(for: tablePin)))
        bin.packs[0] = BinPack(pack: pack, table: tablePin, fileCount: count)
        let binBytes = try bin.encoded()
        let binPin = MetadataPin(of: binBytes)
        try binBytes.write(to: fixture.catalog.appending(path: SplitMetadata.binPath(for: binPin)))
        var hostile = split
        hostile.bins = [binPin]
        try Self.pin(manifest: hostile.encoded(), in: fixture)

        try await Self.expectRefusedWithinBudget(fixture, naming: "SplitMetadata.maximumFileRecords")
    }

    /// A top manifest with 2,000,000 bins (the format allows 65,536), pinned at its 180 MB: before,
    /// it was downloaded whole and decoded twice (as a whole manifest, then as a split one), past
    /// 1 GiB; now the download stops at the manifest limit (32 MiB).
    @Test func aTopManifestOfMillionsOfBinsIsCutOffAtTheManifestLimit() async throws {
        let fixture = try await Self.splitCatalog()
        try Self.pin(manifest: CatalogFixture.splitManifestJSON(bins: 2_000_000, catalogID: "memory"), in: fixture)
        try await Self.expectRefusedWithinBudget(fixture, naming: "maximumManifestBytes")
    }

    /// 170,000 bins in 15 MB, within every byte limit: the bin count is refused from one pass over
    /// the bytes, before anything is decoded.
    @Test func aTopManifestWithMoreBinsThanTheFormatAllowsIsRefusedBeforeDecoding() async throws {
        let fixture = try await Self.splitCatalog()
        let manifest = CatalogFixture.splitManifestJSON(bins: 170_000, catalogID: "memory")
        #expect(manifest.count < SplitManifest.maximumBytes)
        try Self.pin(manifest: manifest, in: fixture)
        try await Self.expectRefusedWithinBudget(fixture, naming: "SplitManifest.maximumBinCount")
    }

    /// A whole manifest (format 1) in place of the split one, just under the manifest limit:
    /// `records` file records of a pack nobody lists, or as many bare numbers, the densest JSON
    /// there is (every value is held by the decoder at once). Decoded whole, then refused.
    @Test(arguments: [false, true])
    func aWholeManifestAtTheManifestLimitIsDecodedWithinTheBudget(bareNumbers: Bool) async throws {
        let fixture = try await Self.splitCatalog()
        var text = Data(#"{"catalogID":"memory","files":["#.utf8)
        let limit = CatalogTrust.defaultMaximumManifestBytes - 1024
        var i = 0
        while text.count < limit - 300 {
            if i > 0 { text.append(UInt8(ascii: ",")) }
            if bareNumbers {
                text.append(UInt8(ascii: "0"))
            } else {
                let name = String(format: "f%07d", i)
                text += Data(#"{"entry":"\#(name)","headerOffset":0,"method":"stored","pack":"\#(String(repeating: "b", count: 64))","path":"\#(name)","sha256":"\#(String(repeating: "c", count: 64))","size":1,"storedSize":1}"#.utf8)
            }
            i += 1
        }
        text += Data(#"],"formatVersion":1,"initialInstallTags":[],"packs":[],"prefetchOrder":[],"tags":[],"version":1}"#.utf8)
        try Self.pin(manifest: text, in: fixture)
        try await Self.expectRefusedWithinBudget(fixture, naming: "is not valid")
    }

    static func appendVarint(_ value: UInt64, to data: inout Data) {
        var rest = value
        while rest >= 0x80 {
            data.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        data.append(UInt8(rest))
    }

    static func rawSHA256(_ hex: String) -> [UInt8] {
        let digits = Array(hex.utf8)
        return stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }
}
