import ODRFormat

extension PackPlanner {
    /// The files of one pack before splitting: a tag set (the union of the tag sets merged into
    /// it), a variant and the variants its paths have.
    struct PackGroup {
        var tags: [String]
        var variant: Variant
        var availability: String
        var entries: [PackPlan.Entry]
        var size: Int64 { entries.reduce(0) { $0 + $1.size } }
    }

    /// Merges small packs, cheapest first, while every tag stays within its over-fetch bound.
    ///
    /// The model is one pack per distinct tag set (`groups`, in their canonical order). Two packs
    /// of common files (no variant) may merge when they share a tag, have the same variant availability, at least
    /// one of them is under ``TagRules/Limits/minimumPackSize``, and together they fit the pack size
    /// limit. Merging packs with tag sets A and B saves every tag in both one request, and makes
    /// each tag of A not in B download B's bytes (and the other way round): the candidate with the
    /// fewest such bytes per saved request merges first (ties by the groups' canonical order), as
    /// long as no tag's over-fetched bytes exceed ``TagRules/Limits/overFetch`` of its own bytes.
    /// Everything depends only on tag sets and sizes, never on file order, so the same input gives
    /// the same packs, and a change to one pack moves only the merges its size or tags take part in.
    ///
    /// - Returns: the merged groups, and the uncompressed bytes each tag now fetches beyond its files.
    func merge(_ groups: [PackGroup]) -> (groups: [PackGroup], overFetched: [String: Int64]) {
        let limits = rules.limits
        guard limits.mergesPacks, groups.count > 1 else { return (groups, [:]) }
        // Tags are numbered in name order and a node's tag set is its ascending numbers, so the
        // comparisons the queue makes thousands of times are merge walks over small integer arrays
        // (hashing tag names was most of a no-op rebuild's planning on SuperTuxKart's rules).
        let tagNames = Set(groups.flatMap(\.tags)).sorted()
        let tagNumber = Dictionary(uniqueKeysWithValues: tagNames.enumerated().map { ($1, $0) })
        var needed = [Int64](repeating: 0, count: tagNames.count)
        for group in groups { for tag in group.tags { needed[tagNumber[tag]!] += group.size } }
        // Packs merge only within one variant description and availability: each pair of those is a kind.
        var kinds: [String: Int] = [:]

        struct Node {
            var tags: [Int]
            var size: Int64
            var members: [Int]
            var kind: Int
            var alive = true
            var first: Int { members[0] }
        }
        struct Candidate: Comparable {
            var score: Double
            var first: Int
            var second: Int
            var left: Int
            var right: Int
            static func < (a: Candidate, b: Candidate) -> Bool {
                (a.score, a.first, a.second) < (b.score, b.first, b.second)
            }
        }
        var nodes: [Node] = []
        var byTag = [[Int]](repeating: [], count: tagNames.count)
        for (index, group) in groups.enumerated() {
            // A tag set split into parts stays as it is, and so does a variant's pack: every
            // variant of a logical path must keep one tag set, which merging one variant's pack
            // (and not its siblings') into a pack of other tags would break.
            guard group.size <= limits.packSize, group.variant.isEmpty else { continue }
            let kindKey = "\(group.variant.variantDescription) \(group.availability)"
            let kind = kinds[kindKey] ?? kinds.count
            kinds[kindKey] = kind
            let tags = Set(group.tags.map { tagNumber[$0]! }).sorted()
            nodes.append(Node(tags: tags, size: group.size, members: [index], kind: kind))
            for tag in tags { byTag[tag].append(nodes.count - 1) }
        }
        func candidate(_ left: Int, _ right: Int) -> Candidate? {
            let a = nodes[left], b = nodes[right]
            guard a.alive, b.alive, a.size < limits.minimumPackSize || b.size < limits.minimumPackSize,
                  a.size + b.size <= limits.packSize, a.kind == b.kind else { return nil }
            let shared = Self.sharedCount(a.tags, b.tags)
            guard shared > 0 else { return nil }
            let cost = Double(a.tags.count - shared) * Double(b.size) + Double(b.tags.count - shared) * Double(a.size)
            let (low, high) = a.first < b.first ? (a.first, b.first) : (b.first, a.first)
            return Candidate(score: cost / Double(shared), first: low, second: high, left: left, right: right)
        }
        /// At most this many partners per pack are queued: a tag shared by thousands of packs
        /// must not make planning quadratic.
        let partnerLimit = 256
        var queue = MinHeap<Candidate>()
        func enqueue(_ index: Int) {
            var partners = Set<Int>()
            for tag in nodes[index].tags {
                for other in byTag[tag] where other != index && nodes[other].alive {
                    partners.insert(other)
                }
            }
            for other in partners.sorted().prefix(partnerLimit) {
                if let found = candidate(index, other) { queue.push(found) }
            }
        }
        for index in nodes.indices where nodes[index].size < limits.minimumPackSize { enqueue(index) }

        // Bytes each tag fetches beyond its own files, by tag number (nil: no merge touched it).
        var overFetched = [Int64?](repeating: nil, count: tagNames.count)
        while let next = queue.pop() {
            guard nodes[next.left].alive, nodes[next.right].alive else { continue }
            let a = nodes[next.left], b = nodes[next.right]
            // Each tag of A not in B fetches B's bytes, and the other way round.
            let added = Self.difference(a.tags, b.tags).map { ($0, b.size) } + Self.difference(b.tags, a.tags).map { ($0, a.size) }
            let fits = added.allSatisfy { tag, bytes in
                (overFetched[tag] ?? 0) + bytes <= limits.overFetch.budget(forNeeded: needed[tag])
            }
            guard fits else { continue }
            for (tag, bytes) in added { overFetched[tag] = (overFetched[tag] ?? 0) + bytes }
            nodes[next.left].alive = false
            nodes[next.right].alive = false
            nodes.append(Node(
                tags: Self.union(a.tags, b.tags), size: a.size + b.size, members: (a.members + b.members).sorted(),
                kind: a.kind))
            let merged = nodes.count - 1
            for tag in nodes[merged].tags { byTag[tag].append(merged) }
            enqueue(merged)
        }

        var result: [PackGroup] = []
        var placed = Set<Int>()
        for node in nodes where node.alive {
            placed.formUnion(node.members)
            let first = groups[node.first]
            result.append(PackGroup(
                tags: node.tags.map { tagNames[$0] }, variant: first.variant, availability: first.availability,
                entries: node.members.flatMap { groups[$0].entries }))
        }
        for (index, group) in groups.enumerated() where !placed.contains(index) { result.append(group) }
        var fetched: [String: Int64] = [:]
        for (tag, bytes) in overFetched.enumerated() { if let bytes { fetched[tagNames[tag]] = bytes } }
        return (result, fetched)
    }

    /// How many numbers two ascending arrays share.
    static func sharedCount(_ a: [Int], _ b: [Int]) -> Int {
        var (i, j, count) = (0, 0, 0)
        while i < a.count && j < b.count {
            if a[i] == b[j] { count += 1; i += 1; j += 1 } else if a[i] < b[j] { i += 1 } else { j += 1 }
        }
        return count
    }

    /// The numbers of ascending `a` not in ascending `b`, ascending.
    static func difference(_ a: [Int], _ b: [Int]) -> [Int] {
        var result: [Int] = []
        var j = 0
        for value in a {
            while j < b.count && b[j] < value { j += 1 }
            if j == b.count || b[j] != value { result.append(value) }
        }
        return result
    }

    /// Two ascending arrays' numbers together, ascending, each once.
    static func union(_ a: [Int], _ b: [Int]) -> [Int] {
        var result: [Int] = []
        result.reserveCapacity(a.count + b.count)
        var (i, j) = (0, 0)
        while i < a.count || j < b.count {
            if j == b.count || (i < a.count && a[i] < b[j]) { result.append(a[i]); i += 1 }
            else if i == a.count || b[j] < a[i] { result.append(b[j]); j += 1 }
            else { result.append(a[i]); i += 1; j += 1 }
        }
        return result
    }
}
