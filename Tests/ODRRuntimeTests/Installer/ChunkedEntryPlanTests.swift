import Foundation
import ODRFormat
@testable import ODRRuntime
import Testing

/// The plan of a chunked entry, over hand-made chunk tables: which chunks come from disk, which
/// travel, and as which ranges.
struct ChunkedEntryPlanTests {
    /// A stored entry named `big.bin` at header offset 1000, of `sizes` chunks with digests `c0`, `c1`, ... (padded).
    static func entry(_ sizes: [Int64]) -> (PackEntryExpectation, [FileChunk]) {
        let chunks = sizes.enumerated().map { FileChunk(size: $1, storedSize: $1, sha256: digest($0)) }
        let total = sizes.reduce(0, +)
        let entry = PackEntryExpectation(name: "big.bin", method: .stored, storedSize: total, size: total, headerOffset: 1000,
                                         sha256: String(repeating: "f", count: 64))
        return (entry, chunks)
    }

    static func digest(_ index: Int) -> String {
        let hex = String(index, radix: 16)
        return String(repeating: "0", count: 64 - hex.count) + hex
    }

    static func held(_ indices: some Sequence<Int>, sizes: [Int64]) -> [String: ResourceStore.HeldChunk] {
        var held: [String: ResourceStore.HeldChunk] = [:]
        for index in indices {
            held[digest(index)] = ResourceStore.HeldChunk(file: URL(filePath: "/store/packs/old/big.bin"), offset: Int64(index) << 20, size: sizes[index])
        }
        return held
    }

    @Test func onlyTheChunksNotHeldTravelAsMergedRanges() throws {
        let sizes = [Int64](repeating: 1 << 20, count: 10)
        let (entry, table) = Self.entry(sizes)
        let plan = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0,
                                                      held: Self.held([0, 1, 2, 3, 6, 7, 8, 9], sizes: sizes), policy: RangePolicy()))
        // The data starts after the 30-byte local header and the name.
        let dataOffset: Int64 = 1000 + 30 + 7
        #expect(plan.fetches == [ChunkedEntryPlan.Fetch(range: (dataOffset + 4 << 20)..<(dataOffset + 6 << 20), chunks: 4..<6)])
        #expect(plan.fetchBytes == 2 << 20)
        #expect(Set(plan.held.keys) == [0, 1, 2, 3, 6, 7, 8, 9])
        #expect(plan.heldBytes == 8 << 20 && plan.resumedBytes == 0)
    }

    @Test func aHeldChunkBetweenTwoMissingOnesCheaperThanARequestArrivesWithThem() throws {
        let sizes: [Int64] = [1 << 20, 1 << 20, 1000, 1 << 20, 1 << 20]
        let (entry, table) = Self.entry(sizes)
        let plan = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0, held: Self.held([0, 2, 4], sizes: sizes),
                                                      policy: RangePolicy(requestCostBytes: 64 << 10)))
        #expect(plan.fetches.map(\.chunks) == [1..<4])
        #expect(Set(plan.held.keys) == [0, 4])
        // With requests cheap, the held chunk stays on disk and two ranges travel.
        let cheap = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0, held: Self.held([0, 2, 4], sizes: sizes),
                                                       policy: RangePolicy(requestCostBytes: 10)))
        #expect(cheap.fetches.map(\.chunks) == [1..<2, 3..<4])
        #expect(Set(cheap.held.keys) == [0, 2, 4])
        // At most one request: the smallest gap closes.
        let one = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0, held: Self.held([0, 2, 4], sizes: sizes),
                                                     policy: RangePolicy(requestCostBytes: 10, maximumRequests: 1)))
        #expect(one.fetches.map(\.chunks) == [1..<4])
    }

    @Test func chunksDoneAreNeitherFetchedNorCopied() throws {
        let sizes = [Int64](repeating: 4096, count: 6)
        let (entry, table) = Self.entry(sizes)
        let plan = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 3, held: Self.held([1, 4], sizes: sizes),
                                                      policy: RangePolicy(requestCostBytes: 100)))
        #expect(plan.done == 3 && plan.resumedBytes == 3 * 4096)
        #expect(Set(plan.held.keys) == [4])
        #expect(plan.fetches.map(\.chunks) == [3..<4, 5..<6])
        // Nothing done and nothing held: the entry downloads as an unchunked one does.
        #expect(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0, held: [:], policy: RangePolicy()) == nil)
        // Done only (an attempt that fetched the first chunks): the rest travels.
        let resumed = try #require(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 2, held: [:], policy: RangePolicy()))
        #expect(resumed.fetches.map(\.chunks) == [2..<6])
    }

    @Test func aTableThatDoesNotTileTheEntryIsNotPlanned() {
        let (entry, table) = Self.entry([4096, 4096])
        var short = entry
        short.size += 1
        short.storedSize += 1
        #expect(ChunkedEntryPlan.make(entry: short, chunks: table, done: 0, held: Self.held([0], sizes: [4096, 4096]), policy: RangePolicy()) == nil)
        var huge = entry
        huge.headerOffset = .max - 10
        #expect(ChunkedEntryPlan.make(entry: huge, chunks: table, done: 0, held: Self.held([0], sizes: [4096, 4096]), policy: RangePolicy()) == nil)
        // A held chunk of another size than the table's is not taken.
        var held = Self.held([0], sizes: [4096, 4096])
        held[Self.digest(0)]?.size = 100
        #expect(ChunkedEntryPlan.make(entry: entry, chunks: table, done: 0, held: held, policy: RangePolicy()) == nil)
    }

    @Test func journalChunkLinesParseOnlyWhenClean() {
        #expect(StagingJournal.ChunksLine("chunks 12 Levels/world.pak")?.count == 12)
        #expect(StagingJournal.ChunksLine("chunks 12 Levels/world.pak")?.name == "Levels/world.pak")
        for bad in ["chunks -1 a.bin", "chunks +1 a.bin", "chunks 1 ../a.bin", "chunks 99999999999999999999999 a.bin", "chunks 1", "chunk 1 a.bin"] {
            #expect(StagingJournal.ChunksLine(Substring(bad)) == nil, "\(bad)")
        }
    }
}
