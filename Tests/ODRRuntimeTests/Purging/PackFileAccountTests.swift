import ODRRuntime
import Testing

private let mb: Int64 = 1 << 20

/// Packs of three versions of a 20-file tag: version 1's pack (0) holds f1a, f2a and f3; version 2's
/// (1) changes f1 to f1b; the current one (2) changes f2 to f2b. The 17 other files and f3 are in
/// all three.
private func threeVersions(pinnedOld: Bool = false) -> PackFileAccount {
    var files: [PackFileAccount.File] = (0..<18).map { _ in .init(bytes: mb, packs: [0, 1, 2]) }
    files.append(.init(bytes: mb, packs: [0], isPinned: pinnedOld))  // f1a
    files.append(.init(bytes: mb, packs: [1, 2]))                     // f1b
    files.append(.init(bytes: mb, packs: [0, 1]))                     // f2a
    files.append(.init(bytes: mb, packs: [2]))                        // f2b
    return PackFileAccount(files: files)
}

struct PackFileAccountTests {
    @Test func eachFileCountsOnceAndAPackOwnsOnlyWhatNoOtherHolds() {
        let account = threeVersions()
        #expect(account.installedBytes == 22 * mb && account.sharedBytes == 20 * mb && account.pinnedBytes == 0)
        #expect(account.ownBytes(of: 0) == mb && account.ownBytes(of: 1) == 0 && account.ownBytes(of: 2) == mb)
        #expect(account.totalBytes(of: 1) == 20 * mb && account.sharedBytes(of: 1) == 20 * mb)
        #expect(account.bytesFreed(removing: [0]) == mb)
        // Without version 1's pack, version 2's owns f2a.
        #expect(account.bytesFreed(removing: [0, 1]) == 2 * mb)
        #expect(account.bytesFreed(removing: [0, 1, 2]) == 22 * mb)
        var removing = account
        #expect(removing.remove(0) == mb && removing.ownBytes(of: 1) == mb && removing.remove(0) == 0)
    }

    @Test func aPinnedFileIsNeverFreed() {
        let account = threeVersions(pinnedOld: true)
        #expect(account.ownBytes(of: 0) == 0 && account.pinnedBytes(of: 0) == mb && account.pinnedBytes == mb)
        #expect(account.bytesFreed(removing: [0, 1, 2]) == 21 * mb)
    }

    /// A plan's freed bytes are what deleting its packs in order frees, not the packs' sizes.
    @Test func thePlanCountsWhatDeletingReallyFrees() {
        let account = threeVersions()
        let candidates = [
            PurgeCandidate(id: 0, bytes: 20 * mb, lastUse: 1, isSuperseded: true),
            PurgeCandidate(id: 1, bytes: 20 * mb, lastUse: 2, isSuperseded: true),
            PurgeCandidate(id: 2, bytes: 20 * mb, lastUse: 3),
        ]
        let planner = PurgePlanner()
        let small = planner.plan(candidates, bytesNeeded: 1, now: 10, account: account)
        #expect(small.deletions.map(\.id) == [0] && small.bytesFreed == mb, "the superseded pack's own 1 MiB, not its 20")
        // Version 2's pack owned nothing when planned, and frees f2a once version 1's is gone;
        // that meets the need, so the current pack stays.
        let two = planner.plan(candidates, bytesNeeded: 2 * mb, now: 10, account: account)
        #expect(two.deletions.map(\.id) == [0, 1] && two.deletions.map(\.bytes) == [mb, mb])
        #expect(two.bytesFreed == account.bytesFreed(removing: [0, 1]))
        let all = planner.plan(candidates, bytesNeeded: 30 * mb, now: 10, account: account)
        #expect(all.bytesFreed == 22 * mb && all.shortfall == 8 * mb)
        // In use: never chosen, and what only it holds with others is never counted.
        var held = candidates
        held[2].isInUse = true
        let spared = planner.plan(held, bytesNeeded: 30 * mb, now: 10, account: account)
        #expect(spared.deletions.map(\.id) == [0, 1] && spared.bytesFreed == 2 * mb)
    }
}
