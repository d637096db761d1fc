import Foundation
import ODRFormat
import ODRRuntime
import ODRTestSupport
import Testing

/// The store's byte figures against what `du` sees: packs of successive versions share their
/// unchanged files by hard link, and every figure counts each file once (issue 38).
@Suite(.enabled(if: ODRExecutable.url != nil))
struct StoreBytesCommandTests {
    struct Status: Decodable {
        struct Usage: Decodable { var installedBytes: Int64; var installedPacks: Int; var sharedBytes: Int64; var pinnedBytes: Int64 }
        var store: Usage
    }
    struct Plan: Decodable {
        struct Pack: Decodable { var id: String; var reason: String; var bytes: Int64 }
        var bytesFreed: Int64; var packs: [Pack]
    }

    static let mebibyte: Int64 = 1 << 20
    static let files = 20

    /// A tag `world` of 20 incompressible files of 1 MiB, built as version 1.
    static func world() async throws -> CatalogFixture {
        let game = try CatalogFixture(rules: #"{ "tags": { "world": { "include": ["world"] } } }"#)
        for index in 0..<files { try game.write("world/f\(index).bin", deterministicBytes(count: Int(mebibyte), seed: UInt64(index + 1))) }
        try await game.build()
        return game
    }

    /// Changes file `index` of `world` and builds the next version.
    static func update(_ game: CatalogFixture, file index: Int, seed: UInt64) async throws {
        try game.write("world/f\(index).bin", deterministicBytes(count: Int(mebibyte), seed: seed))
        try await game.build()
    }

    static func status(_ common: [String]) async throws -> Status {
        let result = try await ODRExecutable.run(["status"] + common + ["--json"])
        try #require(result.status == 0, "\(result.stderr)")
        return try JSONDecoder().decode(Status.self, from: Data(result.stdout.utf8))
    }

    static func fetch(_ common: [String], _ extra: [String] = []) async throws {
        let result = try await ODRExecutable.run(["fetch"] + common + extra + ["--no-sync", "--quiet", "world"])
        try #require(result.status == 0, "\(result.stderr)")
    }

    @Test func statusAndPurgeAgreeWithDuAfterThreeUpdatesAndOldVersionsAreBounded() async throws {
        let game = try await Self.world()
        let stores = try TemporaryDirectory(prefix: "odr-store-bytes")
        let store = stores.appending("store").path
        let common = ["--catalog", game.catalog.path, "--store", store]
        try await Self.fetch(common)
        for update in 1...3 {
            try await Self.update(game, file: update, seed: UInt64(100 + update))
            try await Self.fetch(common)
        }
        let measured = try diskUsage(ofPacksIn: store)
        let status = try await Self.status(common)
        #expect(status.store.installedBytes == measured,
                "status says \(status.store.installedBytes) bytes installed, du says \(measured)")
        // The current version (20 MiB) and the previous one's own file (1 MiB); version 1's and
        // 2's packs went once no request held them.
        #expect(status.store.installedPacks == 2)
        #expect(Double(measured) <= Double(21 * Self.mebibyte) * 1.03, "du \(measured)")
        #expect(status.store.sharedBytes == 19 * Self.mebibyte && status.store.pinnedBytes == 0)

        let purge = try await ODRExecutable.run(["purge", "--catalog", game.catalog.path, "--store", store, "--bytes", "1", "--json"])
        #expect(purge.status == 0, "\(purge.stderr)")
        let plan = try JSONDecoder().decode(Plan.self, from: Data(purge.stdout.utf8))
        let freed = measured - (try diskUsage(ofPacksIn: store))
        #expect(plan.packs.map(\.reason) == ["superseded"])
        #expect(plan.bytesFreed == freed, "purge says it freed \(plan.bytesFreed), du says \(freed)")
        // Its own file and its two folders (the pack's and `world/`).
        #expect(freed >= Self.mebibyte && freed <= Self.mebibyte + 64 << 10)

        // The log counts the same bytes as the purge.
        let log = try await ODRExecutable.run(["log", "--store", store, "--json"])
        struct Line: Decodable { var kind: String; var packID: String; var bytes: Int64; var reason: String }
        let lines = try JSONDecoder().decode([Line].self, from: Data(log.stdout.utf8))
        #expect(lines.first.map { [$0.kind, $0.packID, "\($0.bytes)"] } == ["purge", plan.packs[0].id, "\(freed)"])
        #expect(lines.filter { $0.reason == "older-version" }.count == 2, "versions 1 and 2 reclaimed as the next ones came")

        // One more update, then a purge of everything: the superseded pack frees its own file, and
        // the current one, deleted after it, all of its files (none is shared any more).
        try await Self.update(game, file: 4, seed: 104)
        try await Self.fetch(common)
        let full = try diskUsage(ofPacksIn: store)
        let all = try await ODRExecutable.run(["purge", "--catalog", game.catalog.path, "--store", store, "--bytes", "\(Int64.max)", "--json"])
        #expect(all.status == 0, "\(all.stderr)")
        let allPlan = try JSONDecoder().decode(Plan.self, from: Data(all.stdout.utf8))
        let allFreed = full - (try diskUsage(ofPacksIn: store))
        #expect(allPlan.packs.map(\.reason).first == "superseded" && allPlan.packs.count == 2)
        #expect(allPlan.bytesFreed == allFreed, "purge says it freed \(allPlan.bytesFreed), du says \(allFreed)")
    }

    /// Small files in many folders, like a real game's data (three of SuperTuxKart's tracks: 358
    /// files in 154 folders, most under 4 KiB): every figure is du's, in allocated blocks with the
    /// folders, where the files' lengths add up to well under half of it.
    @Test func smallFilesInManyFoldersAreCountedAsDuCountsThem() async throws {
        let game = try CatalogFixture(rules: #"{ "tags": { "track": { "include": ["track"] } } }"#)
        for index in 0..<240 {
            try game.write("track/d\(index % 60)/f\(index).bin", deterministicBytes(count: 100 + index * 37 % 2000, seed: UInt64(index + 1)))
        }
        try await game.build()
        let stores = try TemporaryDirectory(prefix: "odr-store-bytes")
        let store = stores.appending("store").path
        let common = ["--catalog", game.catalog.path, "--store", store]
        func fetch() async throws {
            let result = try await ODRExecutable.run(["fetch"] + common + ["--no-sync", "--quiet", "track"])
            try #require(result.status == 0, "\(result.stderr)")
        }
        try await fetch()
        let lengths = try game.manifest(1).packs.lazy.map(\.installedBytes).reduce(0, +)
        let first = try diskUsage(ofPacksIn: store)
        #expect(Double(lengths) < Double(first) * 0.5, "the files' lengths \(lengths), du \(first)")
        #expect(try await Self.status(common).store.installedBytes == first)

        // An update of one file: the new pack links 239 files and has 61 folders of its own.
        try game.write("track/d7/f7.bin", deterministicBytes(count: 1500, seed: 900))
        try await game.build()
        try await fetch()
        let measured = try diskUsage(ofPacksIn: store)
        let status = try await Self.status(common)
        #expect(status.store.installedPacks == 2 && status.store.installedBytes == measured,
                "status says \(status.store.installedBytes), du says \(measured)")

        // The superseded pack frees its folders and its one own file, as du sees it.
        let purge = try await ODRExecutable.run(["purge"] + common + ["--bytes", "1", "--json"])
        let plan = try JSONDecoder().decode(Plan.self, from: Data(purge.stdout.utf8))
        let freed = measured - (try diskUsage(ofPacksIn: store))
        #expect(plan.packs.map(\.reason) == ["superseded"] && plan.bytesFreed == freed,
                "purge says it freed \(plan.bytesFreed), du says \(freed)")
        #expect(try await Self.status(common).store.installedBytes == (try diskUsage(ofPacksIn: store)))

        // Everything: the plan's bytes are every block du saw.
        let before = try diskUsage(ofPacksIn: store)
        let all = try await ODRExecutable.run(["purge"] + common + ["--bytes", "\(Int64.max)", "--json"])
        let allPlan = try JSONDecoder().decode(Plan.self, from: Data(all.stdout.utf8))
        let after = try diskUsage(ofPacksIn: store)
        #expect(allPlan.bytesFreed == before && after == 0, "\(all.stdout)")
    }

    @Test func keepingNoVersionLeavesOnlyTheCurrentPack() async throws {
        let game = try await Self.world()
        let stores = try TemporaryDirectory(prefix: "odr-store-bytes")
        let store = stores.appending("store").path
        let common = ["--catalog", game.catalog.path, "--store", store]
        try await Self.fetch(common, ["--keep-versions", "0"])
        for update in 1...3 {
            try await Self.update(game, file: update, seed: UInt64(200 + update))
            try await Self.fetch(common, ["--keep-versions", "0"])
        }
        let status = try await Self.status(common)
        #expect(status.store.installedPacks == 1 && status.store.sharedBytes == 0)
        #expect(status.store.installedBytes == (try diskUsage(ofPacksIn: store)))
        let refused = try await ODRExecutable.run(["fetch"] + common + ["--keep-versions", "2", "world"])
        #expect(refused.status != 0 && refused.stderr.contains("--keep-versions must be 0 or 1"))
    }

    /// A budget above one copy of the tag and below two: each update needs room only for the file
    /// that changed, since the others become hard links.
    @Test func updatesSucceedUnderABudgetBelowTwoCopies() async throws {
        let game = try await Self.world()
        let stores = try TemporaryDirectory(prefix: "odr-store-bytes")
        let store = stores.appending("store").path
        let budget = 30 * Self.mebibyte
        let common = ["--catalog", game.catalog.path, "--store", store]
        try await Self.fetch(common, ["--cache-budget", "\(budget)"])
        for update in 1...3 {
            try await Self.update(game, file: update, seed: UInt64(300 + update))
            try await Self.fetch(common, ["--cache-budget", "\(budget)"])
            let measured = try diskUsage(ofPacksIn: store)
            #expect(measured <= budget, "after update \(update): du \(measured)")
        }
    }

    /// A store copied without its links (`cp -r`): every pack's files are its own, and the figures
    /// say so; a file also linked from outside the store is counted as not freeable.
    @Test func aCopiedStoreAndAFileLinkedFromOutsideAreCountedFromTheirInodes() async throws {
        let game = try await Self.world()
        let stores = try TemporaryDirectory(prefix: "odr-store-bytes")
        let store = stores.appending("store").path
        try await Self.fetch(["--catalog", game.catalog.path, "--store", store])
        try await Self.update(game, file: 1, seed: 401)
        try await Self.fetch(["--catalog", game.catalog.path, "--store", store])

        let copy = stores.appending("copy").path
        let cp = try runCommand("/bin/cp", ["-r", store, copy])
        try #require(cp.status == 0, "\(cp.stderr)")
        let common = ["--catalog", game.catalog.path, "--store", copy]
        let status = try await Self.status(common)
        #expect(status.store.installedPacks == 2 && status.store.sharedBytes == 0)
        #expect(status.store.installedBytes == (try diskUsage(ofPacksIn: copy)))
        #expect(status.store.installedBytes >= 40 * Self.mebibyte && status.store.installedBytes <= 40 * Self.mebibyte + 64 << 10)
        let verify = try await ODRExecutable.run(["verify", "--store", copy])
        #expect(verify.status == 0, "\(verify.stdout)\(verify.stderr)")

        // In another copy made with its links (`cp -a`), one shared file of the current pack replaced
        // by a copy of itself: that file now counts twice, as du counts it, and nothing is wrong.
        let linked = stores.appending("linked").path
        #expect(try runCommand("/bin/cp", ["-a", store, linked]).status == 0)
        let current = try #require(try game.manifest(2).packs.first?.id)
        let shared = linked + "/packs/\(current)/world/f0.bin"
        #expect(try runCommand("/bin/cp", [shared, shared + ".copy"]).status == 0)
        #expect(rename(shared + ".copy", shared) == 0)
        let replaced = try await Self.status(["--catalog", game.catalog.path, "--store", linked])
        #expect(replaced.store.sharedBytes == 18 * Self.mebibyte)
        #expect(replaced.store.installedBytes == (try diskUsage(ofPacksIn: linked)))
        let verifyReplaced = try await ODRExecutable.run(["verify", "--store", linked])
        #expect(verifyReplaced.status == 0, "\(verifyReplaced.stdout)\(verifyReplaced.stderr)")

        // In the original, a file of the superseded pack linked from outside: pinned, not freeable.
        let manifest = try game.manifest(1)
        let old = try #require(manifest.packs.first?.id)
        let outside = stores.appending("kept-by-user.bin").path
        #expect(link(store + "/packs/\(old)/world/f1.bin", outside) == 0)
        let original = try await Self.status(["--catalog", game.catalog.path, "--store", store])
        #expect(original.store.pinnedBytes == Self.mebibyte)
        let dry = try await ODRExecutable.run(["purge", "--catalog", game.catalog.path, "--store", store, "--bytes", "1", "--dry-run", "--json"])
        let plan = try JSONDecoder().decode(Plan.self, from: Data(dry.stdout.utf8))
        #expect(plan.packs.first { $0.id == old }.map { $0.bytes < 64 << 10 } ?? true,
                "the superseded pack frees its folders, nothing of the pinned file: \(plan.packs)")
        let text = try await ODRExecutable.run(["status", "--catalog", game.catalog.path, "--store", store])
        #expect(text.stdout.contains("linked from outside"), "\(text.stdout)")
    }
}
