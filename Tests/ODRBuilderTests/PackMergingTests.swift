import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// Merging small packs (`limits.minimumPackSize`, `limits.overFetch`): fewer requests per tag,
/// every tag within its over-fetch bound, every file still in the packs of every tag that needs it,
/// the same packs whatever the file order, and typed errors for bad settings.
struct PackMergingTests {
    func asset(_ path: String, size: Int, seed: Int) -> HashedAsset {
        let content = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ seed) } + Array("\(seed)".utf8))
        return HashedAsset(
            file: AssetFile(path: path, url: URL(filePath: "/virtual/\(path)"), size: Int64(content.count), modificationTime: 0, inode: 0),
            sha256: ContentHash.sha256Hex(of: content))
    }

    /// Twenty tracks, each with its own large files, sharing small files in many different subsets
    /// (as the tracks of a game share library textures).
    func tracks(seed: UInt64) throws -> (rules: TagRules, assets: [HashedAsset]) {
        var random = SeededGenerator(seed: seed)
        var assets: [HashedAsset] = []
        var include: [String: [String]] = [:]
        for track in 0..<20 {
            for file in 0..<3 {
                let path = "tracks/t\(track)/f\(file).bin"
                assets.append(asset(path, size: Int.random(in: 50_000...400_000, using: &random), seed: track * 10 + file))
                include["t\(track)", default: []].append(path)
            }
        }
        for shared in 0..<60 {
            let path = "textures/s\(shared).png"
            assets.append(asset(path, size: Int.random(in: 100...20_000, using: &random), seed: 1000 + shared))
            let users = (0..<20).filter { _ in Int.random(in: 0..<4, using: &random) == 0 }
            for user in users.isEmpty ? [shared % 20] : users { include["t\(user)", default: []].append(path) }
        }
        let rules = TagRules(tags: try include.map { TagRules.TagRule(name: $0.key, include: try $0.value.map { try GlobPattern($0) }) })
        return (rules, assets)
    }

    func needed(_ plan: PackPlan, tag: String) -> Int64 {
        var sizes: [String: Int64] = [:]
        for pack in plan.packs { for entry in pack.entries where entry.paths.contains(where: { plan.pathTags[$0]?.contains(tag) == true }) { sizes[entry.sha256] = entry.size } }
        return sizes.values.reduce(0, +)
    }

    @Test(arguments: Array(UInt64(1)...8))
    func mergedPacksSaveRequestsWithinTheOverFetchBound(seed: UInt64) throws {
        var (rules, assets) = try tracks(seed: seed)
        rules.limits.minimumPackSize = 0
        let exact = try PackPlanner(rules: rules).plan(assets)
        rules.limits.minimumPackSize = 1 << 20
        rules.limits.overFetch = .fraction(0.05)
        let merged = try PackPlanner(rules: rules).plan(assets)
        #expect(merged.packs.count < exact.packs.count, "seed \(seed)")
        var requestsSaved = 0
        for tag in exact.tags.map(\.name) {
            let exactPacks = exact.packs.filter { $0.tags.contains(tag) }
            let mergedPacks = merged.packs.filter { $0.tags.contains(tag) }
            requestsSaved += exactPacks.count - mergedPacks.count
            #expect(mergedPacks.count <= exactPacks.count)
            // Every file the tag needs is in its packs; what else they hold is the over-fetch.
            let own = needed(exact, tag: tag)
            let downloaded = mergedPacks.reduce(Int64(0)) { $0 + $1.installedBytes }
            #expect(needed(merged, tag: tag) == own)
            #expect(downloaded - own == merged.tags.first { $0.name == tag }?.overFetchedBytes, "seed \(seed) tag \(tag)")
            #expect(downloaded - own <= Int64(Double(own) * 0.05), "seed \(seed) tag \(tag)")
        }
        #expect(requestsSaved > 0)
        // No content stored twice; the same packs whatever the order of the files.
        let stored = merged.packs.flatMap { $0.entries.map(\.sha256) }
        #expect(Set(stored).count == stored.count)
        var shuffler = SeededGenerator(seed: seed)
        #expect(try PackPlanner(rules: rules).plan(assets.shuffled(using: &shuffler)) == merged)
    }

    @Test func zeroKeepsOnePackPerTagSet() throws {
        var (rules, assets) = try tracks(seed: 3)
        rules.limits.overFetch = .bytes(0)
        let noBound = try PackPlanner(rules: rules).plan(assets)
        rules.limits.overFetch = .fraction(0.05)
        rules.limits.minimumPackSize = 0
        let noMinimum = try PackPlanner(rules: rules).plan(assets)
        #expect(noBound == noMinimum)
        let tagSets = noBound.packs.map(\.tags)
        #expect(Set(tagSets).count == tagSets.count)
        #expect(noBound.tags.allSatisfy { $0.overFetchedBytes == 0 })
    }

    @Test func aChangedFileRenamesFewPacks() throws {
        let (rules, assets) = try tracks(seed: 5)
        let before = try PackPlanner(rules: rules).plan(assets)
        var changed = assets
        // One shared texture grows by a few bytes (a new version of one file).
        let index = try #require(changed.firstIndex { $0.path == "textures/s7.png" })
        changed[index] = asset("textures/s7.png", size: Int(changed[index].size) + 10, seed: 99)
        let after = try PackPlanner(rules: rules).plan(changed)
        let same = Set(before.packs.map { $0.entries.map(\.sha256) }).intersection(after.packs.map { $0.entries.map(\.sha256) })
        #expect(same.count >= after.packs.count - 3, "\(after.packs.count - same.count) of \(after.packs.count) packs changed")
    }

    @Test(arguments: [
        (#"{"minimumPackSize": -1}"#, "limits.minimumPackSize"),
        (#"{"minimumPackSize": "lots"}"#, "limits.minimumPackSize"),
        (#"{"packSize": "1 MiB", "minimumPackSize": "2 MiB"}"#, "limits.minimumPackSize"),
        (#"{"overFetch": -5}"#, "limits.overFetch"),
        (#"{"overFetch": "150%"}"#, "limits.overFetch"),
        (#"{"overFetch": "-1%"}"#, "limits.overFetch"),
        (#"{"overFetch": true}"#, "limits.overFetch"),
    ])
    func badSettingsAreTypedErrorsNamingTheKey(limits: String, key: String) throws {
        let text = #"{"tags": {"a": ["a"]}, "limits": \#(limits)}"#
        #expect { try TagRules.parse(Data(text.utf8)) } throws: { error in
            let error = error as? BuildError
            return error?.code == .invalidValue && error?.key == key
        }
    }

    @Test func settingsParse() throws {
        let rules = try TagRules.parse(Data(#"{"tags": {"a": ["a"]}, "limits": {"minimumPackSize": "256 KiB", "overFetch": "2.5%"}}"#.utf8))
        #expect(rules.limits.minimumPackSize == 256 << 10)
        #expect(rules.limits.overFetch == .fraction(0.025))
        let exact = try TagRules.parse(Data(#"{"tags": {"a": ["a"]}, "limits": {"minimumPackSize": 0, "overFetch": "1 MiB"}}"#.utf8))
        #expect(exact.limits.minimumPackSize == 0 && !exact.limits.mergesPacks)
        #expect(exact.limits.overFetch == .bytes(1 << 20))
        #expect(TagRules.Limits().mergesPacks)
    }
}
