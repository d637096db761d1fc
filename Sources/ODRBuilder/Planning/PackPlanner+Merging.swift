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
        var needed: [String: Int64] = [:]
        for group in groups { for tag in group.tags { needed[tag, default: 0] += group.size } }

        struct Node {
            var tags: Set<String>
            var size: Int64
            var members: [Int]
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
        var byTag: [String: [Int]] = [:]
        for (index, group) in groups.enumerated() {
            // A tag set split into parts stays as it is, and so does a variant's pack: every
            // variant of a logical path must keep one tag set, which merging one variant's pack
            // (and not its siblings') into a pack of other tags would break.
            guard group.size <= limits.packSize, group.variant.isEmpty else { continue }
            nodes.append(Node(tags: Set(group.tags), size: group.size, members: [index]))
            for tag in group.tags { byTag[tag, default: []].append(nodes.count - 1) }
        }
        func key(_ node: Node) -> String { "\(groups[node.first].variant.variantDescription) \(groups[node.first].availability)" }
        func candidate(_ left: Int, _ right: Int) -> Candidate? {
            let a = nodes[left], b = nodes[right]
            guard a.alive, b.alive, a.size < limits.minimumPackSize || b.size < limits.minimumPackSize,
                  a.size + b.size <= limits.packSize, key(a) == key(b) else { return nil }
            let shared = a.tags.intersection(b.tags).count
            guard shared > 0 else { return nil }
            let cost = Double(a.tags.subtracting(b.tags).count) * Double(b.size)
                + Double(b.tags.subtracting(a.tags).count) * Double(a.size)
            let (low, high) = a.first < b.first ? (a.first, b.first) : (b.first, a.first)
            return Candidate(score: cost / Double(shared), first: low, second: high, left: left, right: right)
        }
        /// At most this many partners per pack are queued: a tag shared by thousands of packs
        /// must not make planning quadratic.
        let partnerLimit = 256
        var queue = MinHeap<Candidate>()
        func enqueue(_ index: Int) {
            var partners = Set<Int>()
            for tag in nodes[index].tags.sorted() {
                for other in byTag[tag] ?? [] where other != index && nodes[other].alive {
                    partners.insert(other)
                }
            }
            for other in partners.sorted().prefix(partnerLimit) {
                if let found = candidate(index, other) { queue.push(found) }
            }
        }
        for index in nodes.indices where nodes[index].size < limits.minimumPackSize { enqueue(index) }

        var overFetched: [String: Int64] = [:]
        while let next = queue.pop() {
            guard nodes[next.left].alive, nodes[next.right].alive else { continue }
            let a = nodes[next.left], b = nodes[next.right]
            var added: [String: Int64] = [:]
            for tag in a.tags.subtracting(b.tags) { added[tag] = b.size }
            for tag in b.tags.subtracting(a.tags) { added[tag] = a.size }
            let fits = added.allSatisfy { tag, bytes in
                (overFetched[tag] ?? 0) + bytes <= limits.overFetch.budget(forNeeded: needed[tag] ?? 0)
            }
            guard fits else { continue }
            for (tag, bytes) in added { overFetched[tag, default: 0] += bytes }
            nodes[next.left].alive = false
            nodes[next.right].alive = false
            nodes.append(Node(tags: a.tags.union(b.tags), size: a.size + b.size, members: (a.members + b.members).sorted()))
            let merged = nodes.count - 1
            for tag in nodes[merged].tags { byTag[tag, default: []].append(merged) }
            enqueue(merged)
        }

        var result: [PackGroup] = []
        var placed = Set<Int>()
        for node in nodes where node.alive {
            placed.formUnion(node.members)
            let first = groups[node.first]
            result.append(PackGroup(
                tags: node.tags.sorted(), variant: first.variant, availability: first.availability,
                entries: node.members.flatMap { groups[$0].entries }))
        }
        for (index, group) in groups.enumerated() where !placed.contains(index) { result.append(group) }
        return (result, overFetched)
    }
}
