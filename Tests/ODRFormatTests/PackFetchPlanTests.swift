import ODRFormat
import Testing

/// The cost model that decides between byte ranges and the whole archive.
struct PackFetchPlanTests {
    /// `count` stored entries of `size` bytes, each with a 64-byte local header, back to back; the
    /// archive ends 1,000 bytes after the last one (its central directory).
    static func entries(_ count: Int, size: Int64 = 1 << 20) -> (entries: [PackEntryExpectation], archiveBytes: Int64) {
        var offset: Int64 = 0
        var entries: [PackEntryExpectation] = []
        for index in 0..<count {
            let digest = String(repeating: String(index % 10), count: 64)
            entries.append(PackEntryExpectation(name: "f\(index)", method: .stored, storedSize: size, size: size,
                                                headerOffset: offset, sha256: digest + "\(index)"))
            offset += 64 + size
        }
        return (entries, offset + 1000)
    }

    @Test func aPackWithNothingHeldIsOneWholeArchiveGet() {
        let (entries, archive) = Self.entries(8)
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive)
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].isWholeArchive && plan.fetches[0].range == 0..<archive)
        #expect(plan.fetchedEntries == 8 && plan.fetchBytes == archive)
    }

    @Test func oneMissingEntryIsOneRangeFromItsHeaderToTheNextHeader() {
        let (entries, archive) = Self.entries(8)
        let held = Set(entries.map(\.sha256)).subtracting([entries[3].sha256])
        let plan = PackFetchPlan.make(entries: entries.shuffled(), archiveBytes: archive, held: held)
        #expect(plan.reused.count == 7)
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].range == entries[3].headerOffset..<entries[4].headerOffset)
        #expect(!plan.fetches[0].isWholeArchive)
    }

    @Test func theLastEntryRunsToTheArchivesEnd() {
        let (entries, archive) = Self.entries(4)
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: Set(entries.dropLast().map(\.sha256)))
        #expect(plan.fetches.map(\.range) == [entries[3].headerOffset..<archive])
    }

    @Test func neighboursMergeWhenTheGapCostsLessThanARequest() throws {
        // Small entries: the gap of one held 4 KiB entry is cheaper than another request (64 KiB),
        // the 22 entries between f7 and f30 are not.
        let (entries, archive) = Self.entries(40, size: 4096)
        let missing: Set<Int> = [5, 7, 30]
        let held = Set(entries.enumerated().filter { !missing.contains($0.offset) }.map(\.element.sha256))
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: held)
        try #require(plan.fetches.count == 2)
        #expect(plan.fetches[0].range == entries[5].headerOffset..<entries[8].headerOffset)
        #expect(plan.fetches[0].targets.map(\.entry.name) == ["f5", "f7"])
        #expect(plan.fetches[1].targets.map(\.entry.name) == ["f30"])
    }

    @Test func tenPercentScatteredStaysUnderTheRequestCapAndNearTheChangedBytes() {
        let (entries, archive) = Self.entries(512)
        let changed = stride(from: 0, to: 512, by: 10).map { entries[$0] }
        let held = Set(entries.map(\.sha256)).subtracting(changed.map(\.sha256))
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: held)
        let changedBytes = changed.reduce(Int64(0)) { $0 + $1.storedSize }
        #expect(plan.fetches.count == changed.count && plan.fetches.count <= 60)
        #expect(Double(plan.fetchBytes) <= 1.15 * Double(changedBytes))
    }

    @Test func rangesThatCostAsMuchAsTheArchiveBecomeOneWholeGet() {
        let (entries, archive) = Self.entries(10)
        // The first and last entries missing: with requests as dear as the gap between them, the
        // merged range is the whole archive, so it is fetched whole, in one plain GET.
        let held = Set(entries[1...8].map(\.sha256))
        let dear = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: held,
                                      policy: RangePolicy(requestCostBytes: 16 << 20))
        #expect(dear.fetches.count == 1 && dear.fetches[0].isWholeArchive)
        #expect(dear.fetches[0].targets.map(\.entry.name) == ["f0", "f9"])
        let cheap = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: held)
        #expect(cheap.fetches.count == 2 && !cheap.fetches.contains(where: \.isWholeArchive))
        #expect(cheap.fetchBytes < archive / 4)
    }

    @Test func tooManyRangesMergeAcrossTheSmallestGaps() {
        let (entries, archive) = Self.entries(100)
        let held = Set(entries.enumerated().filter { $0.offset % 2 == 0 }.map(\.element.sha256))
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: held,
                                      policy: RangePolicy(requestCostBytes: 0, maximumRequests: 10))
        #expect(plan.fetches.count == 10)
        #expect(plan.fetchedEntries == 50)
        // Ranges stay in archive order and never overlap.
        for (a, b) in zip(plan.fetches, plan.fetches.dropFirst()) { #expect(a.range.upperBound <= b.range.lowerBound) }
    }

    @Test func aCutStoredEntryResumesWhereItsBytesEnd() {
        let (entries, archive) = Self.entries(4)
        let resume = PackRangeReader.Resume(dataOffset: entries[2].headerOffset + 64, heldBytes: 1000, heldHash: StreamingSHA256())
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0", "f1"], partial: ["f2": resume])
        #expect(plan.kept.map(\.name) == ["f0", "f1"])
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].range == (entries[2].headerOffset + 64 + 1000)..<archive)
        #expect(plan.fetches[0].targets.first?.resume?.heldBytes == 1000)
        // Without ranges, the same state is one whole GET and the cut entry starts over.
        let whole = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0", "f1"], partial: ["f2": resume],
                                       policy: RangePolicy(usesRanges: false))
        #expect(whole.fetches.count == 1 && whole.fetches[0].isWholeArchive)
        #expect(whole.fetches[0].targets.map(\.entry.name) == ["f2", "f3"])
        #expect(whole.fetches[0].targets.allSatisfy { $0.resume == nil })
    }

    /// A journal whose data offset cannot be right must not produce an empty or misplaced range:
    /// the entry starts again from its header.
    @Test(arguments: [Int64(5), Int64(1 << 30)])
    func anImplausibleResumeRestartsTheEntryFromItsHeader(dataOffsetDelta: Int64) {
        let (entries, archive) = Self.entries(4)
        let resume = PackRangeReader.Resume(dataOffset: entries[2].headerOffset + dataOffsetDelta, heldBytes: 1000,
                                            heldHash: StreamingSHA256())
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0", "f1"], partial: ["f2": resume])
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].range.lowerBound == entries[2].headerOffset)
        #expect(!plan.fetches[0].range.isEmpty)
        #expect(plan.fetches[0].targets.allSatisfy { $0.resume == nil })
    }

    /// Offsets near `Int64.max` (a crafted journal) restart the entry; they never trap.
    @Test(arguments: [Int64.max, Int64.max - 10, Int64.min, -1])
    func aResumeOffsetAtTheEdgeOfInt64RestartsTheEntry(dataOffset: Int64) {
        let (entries, archive) = Self.entries(4)
        let resume = PackRangeReader.Resume(dataOffset: dataOffset, heldBytes: 1000, heldHash: StreamingSHA256())
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0", "f1"], partial: ["f2": resume])
        #expect(plan.fetches.first?.range.lowerBound == entries[2].headerOffset)
        #expect(plan.resumedBytes == 0)
    }

    /// `count` deflated entries otherwise like ``entries(_:size:)``.
    static func deflatedEntries(_ count: Int) -> (entries: [PackEntryExpectation], archiveBytes: Int64) {
        let (stored, archive) = entries(count)
        return (stored.map { entry in
            var entry = entry
            entry.method = .deflate
            entry.size *= 2
            return entry
        }, archive)
    }

    @Test func aCutDeflatedEntryContinuesAfterItsHeldPrefix() {
        let (entries, archive) = Self.deflatedEntries(4)
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0", "f1"], heldPrefixes: ["f2": 300_000])
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].range == (entries[2].headerOffset + 300_000)..<archive)
        #expect(plan.fetches[0].heldPrefix == 300_000)
        #expect(plan.fetches[0].targets.map(\.entry.name) == ["f2", "f3"])
        #expect(plan.resumedBytes == 300_000)
    }

    /// A prefix that is empty, as long as the entry's span or longer, or in the way of a cheap merge
    /// is not used: the entry's bytes come from its header.
    @Test(arguments: [Int64(0), -5, 64 + (1 << 20), .max, 1000] as [Int64])
    func anUnusablePrefixFetchesTheEntryFromItsHeader(prefix: Int64) {
        let (entries, archive) = Self.deflatedEntries(4)
        // f1 missing too: a prefix of 1,000 bytes is a gap cheaper than a request, so the ranges merge.
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, complete: ["f0"], heldPrefixes: ["f2": prefix])
        #expect(plan.fetches.count == 1)
        #expect(plan.fetches[0].range.lowerBound == entries[1].headerOffset)
        #expect(plan.fetches[0].heldPrefix == 0)
        #expect(plan.resumedBytes == 0)
    }

    @Test func nothingMissingIsNoRequest() {
        let (entries, archive) = Self.entries(3)
        let plan = PackFetchPlan.make(entries: entries, archiveBytes: archive, held: Set(entries.map(\.sha256)))
        #expect(plan.fetches.isEmpty && plan.fetchBytes == 0 && plan.reused.count == 3)
    }
}
