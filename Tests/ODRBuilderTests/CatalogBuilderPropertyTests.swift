import ODRTestSupport
import Foundation
import ODRBuilder
import ODRFormat
import Testing

/// The planning invariants checked on real catalogs: random trees are built to disk and the
/// published manifest is read back.
struct CatalogBuilderPropertyTests {
    @Test(arguments: Array(UInt64(1000)...UInt64(1011)))
    func publishedManifestsKeepTheInvariants(seed: UInt64) async throws {
        let fixture = try BuildFixture()
        let tree = try RandomAssetTree(seed: seed)
        try tree.write(to: fixture.assets)
        var rules = "{\"tags\": {"
        rules += tree.rules.tags.map { tag in
            "\"\(tag.name)\": {\"include\": [\(tag.include.map { "\"\($0.source)\"" }.joined(separator: ","))], "
                + "\"exclude\": [\(tag.exclude.map { "\"\($0.source)\"" }.joined(separator: ","))]}"
        }.joined(separator: ", ")
        rules += "}, \"untagged\": \"\(tree.rules.untagged.rawValue)\", \"limits\": {\"packSize\": \(tree.rules.limits.packSize), \"minimumPackSize\": 0}}"
        try fixture.write("odr.json", rules)

        try await fixture.build(cached: false) { $0.allowOversize = true }
        let manifest = try fixture.manifest(1)
        let index = manifest.makeIndex()
        let content = Dictionary(uniqueKeysWithValues: tree.files.map { ($0.path, ContentHash.sha256Hex(of: $0.content)) })

        // Every file lands in exactly one pack, and its bytes are the file's.
        let expectedPaths = tree.files.map(\.path).filter { !tree.rules.tags(forPath: $0).isEmpty || tree.rules.untagged == .base }
        #expect(manifest.files.map(\.path) == expectedPaths.sorted(), "seed \(seed)")
        for file in manifest.files { #expect(file.sha256 == content[file.path], "seed \(seed)") }

        // No content is stored twice in the version.
        var entries: [String: String] = [:]
        for file in manifest.files {
            let key = "\(file.pack)/\(file.entry)"
            if let sha = entries[key] { #expect(sha == file.sha256) } else { entries[key] = file.sha256 }
        }
        #expect(Set(entries.values).count == entries.count, "seed \(seed)")

        // For any set of tags, the packs it needs hold exactly the content its tags need.
        var random = SeededGenerator(seed: seed)
        let names = manifest.tags.map(\.name)
        for _ in 0..<8 {
            let query = Set(names.filter { _ in Bool.random(using: &random) })
            let packs = Set(index.packs(forTags: query))
            let held = Set(manifest.files.filter { packs.contains($0.pack) }.map(\.sha256))
            let needed = Set(manifest.files.filter { file in
                let tags = tree.rules.tags(forPath: file.path)
                return !query.isDisjoint(with: tags.isEmpty ? [TagRules.baseTag] : tags)
            }.map(\.sha256))
            #expect(held == needed, "seed \(seed), tags \(query.sorted())")
        }
        _ = try CatalogVerifier(catalog: fixture.catalog).verify()
    }
}
