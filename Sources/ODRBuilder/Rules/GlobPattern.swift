/// A compiled glob pattern over `/`-separated paths relative to the assets root.
///
/// - `*` matches any run of characters inside one path segment, `?` exactly one character.
/// - `**` as a whole segment matches zero or more segments (`Levels/**/map.json`).
/// - `[abc]`, `[a-z]`, `[!a-z]` (or `[^a-z]`) match one character from (or not from) a class.
/// - `\` escapes the next character.
/// - A pattern that matches a folder matches every file below it (`Levels/Level1` tags the whole
///   folder); a trailing `/` (`Levels/Level1/`) matches folders only.
///
/// ```swift
/// let glob = try GlobPattern("Levels/Level[1-3]/**/*.png")
/// glob.matches("Levels/Level2/art/sky.png")   // true
/// ```
public struct GlobPattern: Sendable, Hashable, CustomStringConvertible {
    /// The pattern as written.
    public let source: String
    let segments: [Segment]
    /// Whether the pattern ends with `/` and so matches folders only.
    let foldersOnly: Bool

    /// Why a pattern cannot be compiled.
    public struct SyntaxError: Error, Sendable, Equatable, CustomStringConvertible {
        /// A sentence describing the problem.
        public var reason: String
        public var description: String { reason }
    }

    enum Segment: Sendable, Hashable {
        case anyDepth
        case tokens([Token])
    }

    enum Token: Sendable, Hashable {
        case literal(Character)
        case anyRun
        case anyOne
        case set(CharacterClass)
    }

    struct CharacterClass: Sendable, Hashable {
        var negated: Bool
        var ranges: [ClosedRange<Character>]

        func contains(_ character: Character) -> Bool {
            ranges.contains { $0.contains(character) } != negated
        }
    }

    /// Compiles `pattern`.
    ///
    /// - Throws: `SyntaxError` for an empty pattern, an absolute path, a `.` or `..` segment, an
    ///   unclosed or empty character class, a `**` inside a segment, or a trailing `\`.
    public init(_ pattern: String) throws(SyntaxError) {
        source = pattern
        guard !pattern.isEmpty else { throw SyntaxError(reason: "the pattern is empty") }
        guard !pattern.hasPrefix("/") else {
            throw SyntaxError(reason: "patterns are relative to the assets folder; remove the leading '/'")
        }
        var body = Substring(pattern)
        foldersOnly = body.hasSuffix("/")
        while body.hasSuffix("/") { body = body.dropLast() }
        guard !body.isEmpty else { throw SyntaxError(reason: "the pattern names no path") }
        var compiled: [Segment] = []
        for part in body.split(separator: "/", omittingEmptySubsequences: false) {
            if part.isEmpty { throw SyntaxError(reason: "the pattern contains an empty segment ('//')") }
            if part == "." || part == ".." {
                throw SyntaxError(reason: "'\(part)' segments are not allowed; patterns stay inside the assets folder")
            }
            if part == "**" {
                // Consecutive `**` segments mean the same as one.
                if compiled.last != .anyDepth { compiled.append(.anyDepth) }
                continue
            }
            compiled.append(.tokens(try Self.tokens(of: part)))
        }
        segments = compiled
    }

    private static func tokens(of segment: Substring) throws(SyntaxError) -> [Token] {
        var result: [Token] = []
        var index = segment.startIndex
        while index < segment.endIndex {
            let character = segment[index]
            index = segment.index(after: index)
            switch character {
            case "\\":
                guard index < segment.endIndex else {
                    throw SyntaxError(reason: "the pattern ends with an unfinished escape '\\'")
                }
                result.append(.literal(segment[index]))
                index = segment.index(after: index)
            case "*":
                if index < segment.endIndex, segment[index] == "*" {
                    throw SyntaxError(reason: "'**' must be a whole path segment, as in 'a/**/b'")
                }
                result.append(.anyRun)
            case "?":
                result.append(.anyOne)
            case "[":
                let (set, next) = try characterClass(in: segment, from: index)
                result.append(.set(set))
                index = next
            default:
                result.append(.literal(character))
            }
        }
        return result
    }

    /// Parses a class body starting just after `[`; returns the class and the index after `]`.
    private static func characterClass(
        in segment: Substring, from start: Substring.Index
    ) throws(SyntaxError) -> (CharacterClass, Substring.Index) {
        var index = start
        var negated = false
        if index < segment.endIndex, segment[index] == "!" || segment[index] == "^" {
            negated = true
            index = segment.index(after: index)
        }
        var members: [Character] = []
        var ranges: [ClosedRange<Character>] = []
        var closed = false
        while index < segment.endIndex {
            var character = segment[index]
            index = segment.index(after: index)
            if character == "]" {
                closed = true
                break
            }
            if character == "\\" {
                guard index < segment.endIndex else { break }
                character = segment[index]
                index = segment.index(after: index)
            }
            // A range `a-z`; a `-` first or last is a literal.
            if index < segment.endIndex, segment[index] == "-" {
                let afterDash = segment.index(after: index)
                if afterDash < segment.endIndex, segment[afterDash] != "]" {
                    var upper = segment[afterDash]
                    var next = segment.index(after: afterDash)
                    if upper == "\\", next < segment.endIndex {
                        upper = segment[next]
                        next = segment.index(after: next)
                    }
                    guard character <= upper else {
                        throw SyntaxError(reason: "the range '\(character)-\(upper)' is reversed")
                    }
                    ranges.append(character...upper)
                    index = next
                    continue
                }
            }
            members.append(character)
        }
        guard closed else { throw SyntaxError(reason: "a character class '[' is not closed with ']'") }
        ranges += members.map { $0...$0 }
        guard !ranges.isEmpty else { throw SyntaxError(reason: "the character class '[]' is empty") }
        return (CharacterClass(negated: negated, ranges: ranges), index)
    }

    public var description: String { source }

    /// The first path component every match starts with, when the pattern's first segment has no
    /// wildcard (`Levels` for `Levels/Level[1-3]/**`); `nil` when the first component can vary.
    /// Lets a rule set look only at the rules that can match a path.
    public var firstComponent: String? {
        guard case .tokens(let tokens)? = segments.first else { return nil }
        var name = ""
        for token in tokens {
            guard case .literal(let character) = token else { return nil }
            name.append(character)
        }
        return name
    }

    /// Whether the pattern matches the file at `path` or one of the folders that contain it.
    ///
    /// - Parameter path: a clean relative path with `/` separators, such as `Levels/Level1/map.json`.
    public func matches(_ path: String) -> Bool {
        let components = path.split(separator: "/", omittingEmptySubsequences: true)
        // A folder match covers everything below it: try every proper prefix (the folders) and,
        // unless the pattern is folders-only, the whole path (the file).
        let lastLength = foldersOnly ? components.count - 1 : components.count
        guard lastLength >= 1 else { return false }
        var memo: [Int: Bool] = [:]
        for length in 1...lastLength where match(segment: 0, component: 0, in: components[..<length], memo: &memo) {
            return true
        }
        return false
    }

    private func match(
        segment: Int, component: Int, in components: ArraySlice<Substring>, memo: inout [Int: Bool]
    ) -> Bool {
        if segment == segments.count { return component == components.count }
        let key = (components.count << 32) | (segment << 16) | component
        if let known = memo[key] { return known }
        let result: Bool
        switch segments[segment] {
        case .anyDepth:
            result = (component...components.count).contains {
                match(segment: segment + 1, component: $0, in: components, memo: &memo)
            }
        case .tokens(let tokens):
            result = component < components.count
                && Self.match(tokens[...], Array(components[components.startIndex + component])[...])
                && match(segment: segment + 1, component: component + 1, in: components, memo: &memo)
        }
        memo[key] = result
        return result
    }

    /// Matches one segment's tokens against one path component, backtracking over `*`.
    private static func match(_ tokens: ArraySlice<Token>, _ text: ArraySlice<Character>) -> Bool {
        var tokens = tokens
        var text = text
        while let token = tokens.first {
            switch token {
            case .anyRun:
                let rest = tokens.dropFirst()
                if rest.isEmpty { return true }
                var candidate = text
                while true {
                    if match(rest, candidate) { return true }
                    guard !candidate.isEmpty else { return false }
                    candidate = candidate.dropFirst()
                }
            case .anyOne:
                guard !text.isEmpty else { return false }
            case .literal(let expected):
                guard text.first == expected else { return false }
            case .set(let set):
                guard let character = text.first, set.contains(character) else { return false }
            }
            tokens = tokens.dropFirst()
            text = text.dropFirst()
        }
        return text.isEmpty
    }
}

extension GlobPattern {
    /// Where a pattern sits in ``TagRules/Matcher``'s index: the literal path components it starts
    /// with, and what follows them.
    struct IndexKey: Equatable {
        /// What follows the literal components.
        enum Rest: Equatable {
            /// Nothing: the whole pattern is a literal path (`Levels/Level1/map.json`).
            case none
            /// A `**` segment.
            case anyDepth
            /// A segment with a wildcard, starting with these literal characters (`lev` for `lev*.json`).
            case segment(prefix: [Character])
        }
        /// The leading segments without wildcards, unescaped.
        var components: [String]
        var rest: Rest
    }

    /// The pattern's literal components and what follows them; every path it matches (or whose
    /// folder it matches) starts with those components, then a component that starts with the
    /// rest's literal characters.
    var indexKey: IndexKey {
        var components: [String] = []
        for segment in segments {
            switch segment {
            case .anyDepth:
                return IndexKey(components: components, rest: .anyDepth)
            case .tokens(let tokens):
                var literal: [Character] = []
                for token in tokens {
                    guard case .literal(let character) = token else {
                        return IndexKey(components: components, rest: .segment(prefix: literal))
                    }
                    literal.append(character)
                }
                components.append(String(literal))
            }
        }
        return IndexKey(components: components, rest: .none)
    }
}
