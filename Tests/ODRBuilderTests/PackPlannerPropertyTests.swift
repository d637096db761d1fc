import Foundation
import ODRBuilder
import ODRFormat
import ODRTestSupport
import Testing

/// The planning invariants, checked over random trees and rules.
struct PackPlannerPropertyTests {
    static let seeds: [UInt64] = Array(1...150)

    @Test(arguments: seeds)
    func planningInvariantsHold(seed: UInt64) throws {
        var tree = try RandomAssetTree(seed: seed)
        let assets = tree.hashedAssets
        // One pack per distinct tag set (merging small packs is PackMergingTests').
        tree.rules.limits.minimumPackSize = 0
        let plan = try PackPlanner(rules: tree.rules, allowOversize: true).plan(assets)
        let shaByPath = Dictionary(uniqueKeysWithValues: assets.map { ($0.path, $0.sha256) })

        // Every file lands in exactly one pack.
        var packsHoldingPath: [String: Int] = [:]
        for pack in plan.packs { for entry in pack.entries { for path in entry.paths { packsHoldingPath[path, default: 0] += 1 } } }
        #expect(Set(packsHoldingPath.keys) == Set(plan.pathTags.keys), "seed \(seed)")
        #expect(packsHoldingPath.values.allSatisfy { $0 == 1 }, "seed \(seed)")
        let expectedPaths = assets.map(\.path).filter { !tree.rules.tags(forPath: $0).isEmpty || tree.rules.untagged == .base }
        #expect(Set(expectedPaths) == Set(plan.pathTags.keys), "seed \(seed)")

        // No content is stored twice.
        let stored = plan.packs.flatMap { $0.entries.map(\.sha256) }
        #expect(Set(stored).count == stored.count, "seed \(seed)")

        // For any set of tags T, the packs whose tag set meets T hold exactly the content T needs.
        var random = SeededGenerator(seed: seed &* 7919)
        let names = plan.tags.map(\.name)
        var querySets = names.map { Set([$0]) }
        for _ in 0..<10 { querySets.append(Set(names.filter { _ in Bool.random(using: &random) })) }
        for query in querySets {
            let held = Set(plan.packs.filter { !query.isDisjoint(with: $0.tags) }.flatMap { $0.entries.map(\.sha256) })
            let needed = Set(plan.pathTags.filter { !query.isDisjoint(with: $0.value) }.compactMap { shaByPath[$0.key] })
            #expect(held == needed, "seed \(seed), tags \(query.sorted())")
        }

        // Size limit and determinism.
        #expect(plan.packs.allSatisfy { $0.installedBytes <= tree.rules.limits.packSize || $0.entries.count == 1 }, "seed \(seed)")
        var shuffler = SeededGenerator(seed: seed)
        #expect(try PackPlanner(rules: tree.rules, allowOversize: true).plan(assets.shuffled(using: &shuffler)) == plan)
    }
}
