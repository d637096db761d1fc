import ODRFormat
import ODRRuntime
import Testing

struct LedgerTests {
    /// level1 and level2 share `shared`; level3 stands alone.
    static func catalog() throws -> LedgerCatalog {
        try LedgerCatalog(
            tags: ["level1", "level2", "level3"],
            packs: [
                .init(id: "one", bytes: 300, tags: ["level1"]),
                .init(id: "two", bytes: 200, tags: ["level2"]),
                .init(id: "shared", bytes: 100, tags: ["level1", "level2"]),
                .init(id: "three", bytes: 400, tags: ["level3"]),
            ])
    }

    /// A pack that names one tag twice belongs to it once: listed once, counted once.
    @Test func aTagNamedTwiceByOnePackCountsOnce() throws {
        let catalog = try LedgerCatalog(tags: ["a", "b"], packs: [
            .init(id: "p", bytes: 100, tags: ["a", "b", "a"]),
            .init(id: "q", bytes: 50, tags: ["a"]),
        ])
        let a = try #require(catalog.tag(named: "a")), b = try #require(catalog.tag(named: "b"))
        #expect(Array(catalog.packs(of: a)) == [PackIndex(0), PackIndex(1)])
        #expect(Array(catalog.packs(of: b)) == [PackIndex(0)])
        var ledger = Ledger(catalog: catalog)
        #expect(try ledger.begin([a]) == 150)
        #expect(try ledger.end([a]) == 150)
    }

    /// A split catalog that describes one more tag: the counts move to the larger catalog, held
    /// tags keep their indices, a pack the new tag shares stays counted once, and ending the held
    /// tag later frees what it held. A catalog that reorders the tags cannot take the counts.
    @Test func countsMoveToACatalogThatDescribesMoreTags() throws {
        let small = try LedgerCatalog(tags: ["level1"], packs: [
            .init(id: "one", bytes: 300, tags: ["level1"]),
            .init(id: "shared", bytes: 100, tags: ["level1"]),
        ])
        var ledger = Ledger(catalog: small, inUseLimit: 1_000)
        let level1 = try small.tags(named: ["level1"])
        #expect(try ledger.begin(level1) == 400)
        let larger = try Self.catalog()
        var carried = try #require(ledger.carried(to: larger))
        #expect(carried.inUseBytes == 400)
        #expect(carried.inUseLimit == 1_000)
        #expect(try larger.tags(named: ["level1"]) == level1)
        // level2 shares `shared`, already in use: only its own pack is added.
        let level2 = try larger.tags(named: ["level2"])
        #expect(try carried.begin(level2) == 200)
        #expect(carried.referenceCount(of: try #require(larger.pack(id: "shared"))) == 2)
        #expect(try carried.end(level1) == 300)
        #expect(try carried.end(level2) == 300)
        #expect(carried.inUseBytes == 0)

        let reordered = try LedgerCatalog(tags: ["level2", "level1"], packs: [.init(id: "one", bytes: 300, tags: ["level1"])])
        #expect(ledger.carried(to: reordered) == nil)
    }

    @Test func sharedPackCountsOnceAcrossTags() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog)
        let added1 = try ledger.begin(catalog.tags(named: ["level1"]))
        let added2 = try ledger.begin(catalog.tags(named: ["level2"]))
        #expect(added1 == 400)
        #expect(added2 == 200)
        #expect(ledger.inUseBytes == 600)
        #expect(ledger.referenceCount(of: try #require(catalog.pack(id: "shared"))) == 2)
    }

    @Test func overlappingRequestsKeepPacksInUseUntilTheLastEnds() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog)
        let first = try catalog.tags(named: ["level1"])
        let second = try catalog.tags(named: ["level1", "level2"])
        let shared = try #require(catalog.pack(id: "shared"))
        let one = try #require(catalog.pack(id: "one"))
        try ledger.begin(first)
        try ledger.begin(second)
        #expect(ledger.referenceCount(of: first[0]) == 2)
        try ledger.end(first)
        #expect(ledger.isInUse(one))
        #expect(ledger.isInUse(shared))
        #expect(ledger.inUseBytes == 600)
        let released = try ledger.end(second)
        #expect(released == 600)
        #expect(!ledger.isInUse(one))
        #expect(!ledger.isInUse(shared))
        #expect(ledger.inUseBytes == 0)
    }

    @Test func beginOverTheLimitFailsAndChangesNothing() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog, inUseLimit: 700)
        try ledger.begin(catalog.tags(named: ["level1"]))
        let tags = try catalog.tags(named: ["level2", "level3"])
        let error = #expect(throws: ResourceError.self) { try ledger.begin(tags) }
        #expect(error?.code == .exceededMaximumInUseSize)
        #expect(ledger.inUseBytes == 400)
        #expect(!ledger.isInUse(tags[0]))
        #expect(!ledger.isInUse(tags[1]))
        #expect(!ledger.isInUse(try #require(catalog.pack(id: "two"))))
        #expect(ledger.referenceCount(of: try #require(catalog.pack(id: "shared"))) == 1)
    }

    @Test func tagsWhosePacksAreAlreadyInUseFitAtTheLimit() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog, inUseLimit: 400)
        let level1 = try catalog.tags(named: ["level1"])
        try ledger.begin(level1)
        let added = try ledger.begin(level1)
        #expect(added == 0)
        #expect(ledger.referenceCount(of: level1[0]) == 2)
        #expect(throws: ResourceError.self) { try ledger.begin(catalog.tags(named: ["level2"])) }
    }

    @Test func endingMoreOftenThanBegunFailsAndChangesNothing() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog)
        let level1 = try catalog.tags(named: ["level1"])
        try ledger.begin(level1)
        let twice = level1 + level1
        let error = #expect(throws: ResourceError.self) { try ledger.end(twice) }
        #expect(error?.code == .endBeforeBegin)
        #expect(ledger.referenceCount(of: level1[0]) == 1)
        #expect(ledger.inUseBytes == 400)
    }

    @Test func additionalBytesIsADryRun() throws {
        let catalog = try Self.catalog()
        var ledger = Ledger(catalog: catalog)
        try ledger.begin(catalog.tags(named: ["level1"]))
        let bytes = ledger.additionalBytes(toBegin: try catalog.tags(named: ["level2", "level1", "level2"]))
        #expect(bytes == 200)
        #expect(ledger.inUseBytes == 400)
    }

    @Test func unknownTagNamesAreInvalidTags() throws {
        let catalog = try Self.catalog()
        let error = #expect(throws: ResourceError.self) { try catalog.tags(named: ["level1", "level9"]) }
        #expect(error?.code == .invalidTag)
        #expect(error?.message.contains("level9") == true)
    }

    @Test func catalogsWithRepeatedPacksOrUnknownTagsAreRejected() {
        let repeated = #expect(throws: ResourceError.self) {
            try LedgerCatalog(tags: ["a"], packs: [.init(id: "p", bytes: 1, tags: ["a"]), .init(id: "p", bytes: 2, tags: ["a"])])
        }
        #expect(repeated?.code == .invalidCatalog)
        let unknown = #expect(throws: ResourceError.self) {
            try LedgerCatalog(tags: ["a"], packs: [.init(id: "p", bytes: 1, tags: ["b"])])
        }
        #expect(unknown?.code == .invalidTag)
    }

    /// The catalog of a manifest (sharing its index's dictionaries) is the one built from names.
    @Test func aManifestsCatalogMatchesTheOneBuiltFromNames() throws {
        let byNames = try Self.catalog()
        let packs = ["one": ["level1"], "two": ["level2"], "shared": ["level1", "level2"], "three": ["level3"]]
        let order = ["one", "two", "shared", "three"]
        func manifest(tags: [String]) -> VersionManifest {
            VersionManifest(
                catalogID: "c", version: 1,
                tags: tags.map { name in
                    TagRecord(name: name, preservationPriority: 0.5, packs: order.filter { packs[$0]!.contains(name) },
                              downloadBytes: 0, installedBytes: 0)
                },
                initialInstallTags: [], prefetchOrder: [],
                packs: order.map { PackRecord(id: $0, tags: packs[$0]!, archiveBytes: 0, installedBytes: byNames.bytes(of: byNames.pack(id: $0)!), entryCount: 0) },
                files: [])
        }
        let fromManifest = try LedgerCatalog(manifest: manifest(tags: ["level1", "level2", "level3"]).makeIndex())
        #expect(fromManifest.tagNames == byNames.tagNames)
        #expect(fromManifest.packIDs == byNames.packIDs)
        #expect(fromManifest.packBytes == byNames.packBytes)
        for name in byNames.tagNames {
            let tag = try #require(fromManifest.tag(named: name))
            #expect(tag == byNames.tag(named: name))
            #expect(Array(fromManifest.packs(of: tag)) == Array(byNames.packs(of: tag)))
        }
        for id in order { #expect(fromManifest.pack(id: id) == byNames.pack(id: id)) }

        let repeated = #expect(throws: ResourceError.self) {
            try LedgerCatalog(manifest: manifest(tags: ["level1", "level2", "level3", "level1"]).makeIndex())
        }
        #expect(repeated?.code == .invalidCatalog)
    }
}
