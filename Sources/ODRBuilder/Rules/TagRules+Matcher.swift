extension TagRules {
    /// The tag rules compiled once into an index; gives the same answers as
    /// ``TagRules/tags(forPath:)``, which tries every pattern.
    ///
    /// Each include pattern is filed under the literal path components it starts with
    /// (`Levels/Level1` for `Levels/Level1/**`, the whole path for `karts/tux/tux.b3d`), and a
    /// pattern whose next segment has a wildcard also under that segment's literal characters
    /// (`lev` for `Levels/lev*.json`) in a character trie. A path looks up each of its folder
    /// prefixes (and itself) in one hash map and walks the trie along its next component, so it
    /// meets only the patterns that share its literal prefix; each of those is then matched in
    /// full, and a rule that matches has its excludes checked. Patterns that start with a wildcard
    /// (`**/*.ogg`, `*/icons/*.png`) are the only ones every path meets.
    ///
    /// A studio's script that names every file a level references (thousands of literal paths)
    /// costs one lookup per path component; compiling is linear in the patterns' length.
    public struct Matcher: Sendable {
        private let rules: [TagRule]
        /// The include patterns, each with the position of its rule in `rules`.
        private let patterns: [(rule: Int, glob: GlobPattern)]
        /// Literal patterns (by position in `patterns`) by their path.
        private let literals: [String: [Int]]
        /// Patterns with a wildcard by the literal components before it (joined by `/`; "" for none).
        private let prefixed: [String: SegmentTrie]

        init(rules: [TagRule]) {
            self.rules = rules
            var patterns: [(rule: Int, glob: GlobPattern)] = []
            var literals: [String: [Int]] = [:]
            var prefixed: [String: SegmentTrie] = [:]
            for (ruleIndex, rule) in rules.enumerated() {
                for glob in rule.include {
                    let position = patterns.count
                    patterns.append((ruleIndex, glob))
                    let key = glob.indexKey
                    let path = key.components.joined(separator: "/")
                    switch key.rest {
                    case .none: literals[path, default: []].append(position)
                    case .anyDepth: prefixed[path, default: SegmentTrie()].insert(position, prefix: [])
                    case .segment(let prefix): prefixed[path, default: SegmentTrie()].insert(position, prefix: prefix)
                    }
                }
            }
            self.patterns = patterns
            self.literals = literals
            self.prefixed = prefixed
        }

        /// The tags that need the file at `path`, sorted; empty for an untagged file.
        public func tags(forPath path: String) -> [String] {
            let components = path.split(separator: "/", omittingEmptySubsequences: true)
            var matched = Set<Int>()
            var candidates: [Int] = []
            var prefix = ""
            for depth in 0...components.count {
                if depth > 0 {
                    if depth > 1 { prefix += "/" }
                    prefix += components[depth - 1]
                    // A literal pattern found under a folder of the path matches it (a folder
                    // match covers everything below); found under the whole path, it matches
                    // unless it names folders only. No need to match it character by character.
                    for position in literals[prefix] ?? [] where depth < components.count || !patterns[position].glob.foldersOnly {
                        matched.insert(patterns[position].rule)
                    }
                }
                if let trie = prefixed[prefix] {
                    trie.collect(along: depth < components.count ? components[depth] : nil, into: &candidates)
                }
            }
            for position in candidates {
                let (rule, glob) = patterns[position]
                if !matched.contains(rule), glob.matches(path) { matched.insert(rule) }
            }
            guard !matched.isEmpty else { return [] }
            return matched.sorted().compactMap { rule in
                rules[rule].exclude.contains { $0.matches(path) } ? nil : rules[rule].name
            }
        }
    }

    /// Patterns filed by the literal characters their first wildcard segment starts with.
    struct SegmentTrie: Sendable {
        private struct Node: Sendable {
            var patterns: [Int] = []
            var children: [Character: Int] = [:]
        }
        private var nodes = [Node()]

        mutating func insert(_ pattern: Int, prefix: [Character]) {
            var node = 0
            for character in prefix {
                if let child = nodes[node].children[character] {
                    node = child
                } else {
                    nodes.append(Node())
                    nodes[node].children[character] = nodes.count - 1
                    node = nodes.count - 1
                }
            }
            nodes[node].patterns.append(pattern)
        }

        /// Appends the patterns whose prefix starts `component` (only those with an empty prefix
        /// when there is no next component).
        func collect(along component: Substring?, into result: inout [Int]) {
            var node = 0
            result += nodes[0].patterns
            guard let component else { return }
            for character in component {
                guard let child = nodes[node].children[character] else { return }
                node = child
                result += nodes[node].patterns
            }
        }
    }
}
