import ODRRuntime

/// Belady's MIN: deletes the packs needed furthest in the future, never-again first. It reads the
/// whole script in advance, so no real device can run it; it is the reference the online policies
/// are measured against.
///
/// With packs of equal size it downloads the fewest bytes possible; with mixed sizes it is the
/// classic offline heuristic, not a proven optimum.
public struct BeladyPolicy: EvictionPolicy {
    /// For each pack access, the number of the next beginning that needs the same pack.
    private let nextAfterAccess: [Int32]
    /// For each pack, the number of the next beginning that needs it, as of the last access.
    private var nextUse: [Int32]
    private static let never = Int32.max

    /// Reads `script` to learn, for every access, when the pack is needed next.
    public init(script: SimulationScript) {
        var beginnings: [Int32] = []
        var packs: [PackIndex] = []
        script.forEachPackAccess { beginning, pack in
            beginnings.append(Int32(beginning))
            packs.append(pack)
        }
        var seen = [Int32](repeating: Self.never, count: script.catalog.packs.count)
        var next = [Int32](repeating: Self.never, count: packs.count)
        for access in packs.indices.reversed() {
            next[access] = seen[packs[access].index]
            seen[packs[access].index] = beginnings[access]
        }
        nextAfterAccess = next
        // Before its first access, a pack is needed at its first access.
        nextUse = seen
    }

    public var name: String { "belady" }

    public mutating func didAccess(_ pack: PackIndex, access: Int, time: Double) {
        nextUse[pack.index] = nextAfterAccess[access]
    }

    public mutating func plan(_ candidates: PurgeCandidates, bytesNeeded: Int64) -> PurgePlan {
        var remaining = candidates.all()
        var deletions: [PurgePlan.Deletion] = []
        var freed: Int64 = 0
        // Few packs go per plan, so picking the furthest each time beats sorting them all.
        while freed < bytesNeeded, !remaining.isEmpty {
            var best = 0
            for i in remaining.indices.dropFirst() where isFurther(remaining[i], than: remaining[best]) { best = i }
            let chosen = remaining.swapRemoveAt(best)
            deletions.append(.init(id: chosen.id, bytes: chosen.bytes, reason: .furthestNextUse))
            freed += chosen.bytes
        }
        return PurgePlan(bytesNeeded: bytesNeeded, deletions: deletions)
    }

    /// Needed later; among packs needed at the same time (or never), the larger frees more at once.
    private func isFurther(_ a: PurgeCandidate, than b: PurgeCandidate) -> Bool {
        let (na, nb) = (nextUse[a.id], nextUse[b.id])
        if na != nb { return na > nb }
        if a.bytes != b.bytes { return a.bytes > b.bytes }
        return a.id < b.id
    }
}

extension Array {
    /// Removes the element at `index` by moving the last element into its place: O(1), order lost.
    mutating func swapRemoveAt(_ index: Int) -> Element {
        swapAt(index, count - 1)
        return removeLast()
    }
}
