import ODRFormat

/// Reads variant values out of file names and maps each file to its logical path and variant, with
/// the rules file's variant axes.
///
/// A file's base name ends with the values of the axes that apply to it, each after its axis's
/// marker, before the final extension. Values are peeled from the right, nearest marker first, so
/// several axes may come in any order: with `resolution` (`@`) and `texture` (`.`),
/// `Textures/tree@2x.astc.ktx2` and `Textures/tree.astc@2x.ktx2` are both the variant
/// `resolution=2x,texture=astc` of `Textures/tree.ktx2`. A file without markers whose logical path
/// has marked siblings takes each missing axis's default (as `tree.png` beside `tree@2x.png`); one
/// without marked siblings is common to every device.
///
/// ```swift
/// let resolver = VariantResolver(rules: rules.variants)
/// let names = try resolver.resolve(["Textures/tree.png", "Textures/tree@2x.png"])
/// names["Textures/tree@2x.png"]   // Textures/tree.png, ["resolution": "2x"]
/// ```
public struct VariantResolver: Sendable {
    /// The axes, in declared order.
    public var rules: [VariantRule]

    /// Creates a resolver for the rules file's axes.
    public init(rules: [VariantRule]) {
        self.rules = rules
    }

    /// A file's logical path and variant.
    public struct Name: Sendable, Hashable {
        /// The path a game asks for: the file's path without markers and values.
        public var logicalPath: String
        /// The value of each axis the file depends on; empty for a common file.
        public var variant: Variant

        /// Creates a name.
        public init(logicalPath: String, variant: Variant = [:]) {
            self.logicalPath = logicalPath
            self.variant = variant
        }
    }

    /// Reads the variant values written in one file's name, without looking at other files (so an
    /// unmarked file comes back common; ``resolve(_:)`` gives it its defaults).
    ///
    /// - Throws: `BuildError` `plan.unknownVariantValue` when a marker of an axis that applies to the
    ///   file introduces a value the axis does not declare, `plan.repeatedVariantAxis` when the name
    ///   carries two values of one axis; both name the file.
    public func name(of path: String) throws(BuildError) -> Name {
        let applicable = rules.filter { $0.applies(to: path) }
        guard !applicable.isEmpty else { return Name(logicalPath: path) }
        let folderEnd = path.lastIndex(of: "/").map { path.index(after: $0) } ?? path.startIndex
        let baseName = path[folderEnd...]
        // The final extension; a leading dot (`.hidden`) does not start one.
        let extensionStart = baseName.lastIndex(of: ".").flatMap { $0 > baseName.startIndex ? $0 : nil } ?? baseName.endIndex
        var stem = baseName[..<extensionStart]
        let markers = Set(applicable.map(\.marker))
        var variant: Variant = [:]
        // Peel `<marker><value>` from the right, nearest marker first. A marker at the start of the
        // name is part of the name: a value needs something before it.
        while let position = stem.dropFirst().lastIndex(where: markers.contains) {
            let token = String(stem[stem.index(after: position)...])
            let candidates = applicable.filter { $0.marker == stem[position] }
            if let rule = candidates.first(where: { $0.values.contains(token) }) {
                if let earlier = variant[rule.axis] {
                    throw BuildError(
                        .repeatedVariantAxis,
                        "the name carries two values of the variant axis '\(rule.axis)' ('\(token)' and '\(earlier)'); a file is one variant, so keep one value",
                        file: path)
                }
                variant[rule.axis] = token
                stem = stem[..<position]
                continue
            }
            // A marker whose axes were all read already is part of the name (`a@b@2x.png` is the
            // `2x` variant of `a@b.png`).
            guard let rule = candidates.first(where: { variant[$0.axis] == nil }) else { break }
            throw BuildError(
                .unknownVariantValue,
                "'\(token)' is not a value of '\(rule.axis)'; declared: \(rule.values.joined(separator: ", ")). Rename the file, add the value to the axis in the rules file, or narrow the axis's \"files\" patterns",
                file: path)
        }
        guard !variant.isEmpty else { return Name(logicalPath: path) }
        let logical = String(path[..<folderEnd]) + String(stem) + String(baseName[extensionStart...])
        return Name(logicalPath: logical, variant: variant)
    }

    /// Maps every path to its logical path and variant.
    ///
    /// Files that share a logical path are its variants: each one takes the declared `default` of
    /// an axis its siblings depend on and its own name does not mark, so they all depend on the
    /// same axes.
    ///
    /// - Throws: `BuildError`, naming the files: what ``name(of:)`` throws;
    ///   `plan.missingVariantDefault` for an unmarked file beside marked ones on an axis without a
    ///   default; `plan.duplicateVariant` for two files that are the same variant of one logical path.
    public func resolve(_ paths: some Sequence<String>) throws(BuildError) -> [String: Name] {
        var names: [String: Name] = [:]
        guard !rules.isEmpty else {
            for path in paths { names[path] = Name(logicalPath: path) }
            return names
        }
        var siblings: [String: [String]] = [:]
        for path in paths {
            let name = try name(of: path)
            names[path] = name
            siblings[name.logicalPath, default: []].append(path)
        }
        for logical in siblings.keys.sorted() {
            guard var members = siblings[logical], members.count > 1 else { continue }
            members.sort()
            let axes = rules.filter { rule in members.contains { names[$0]?.variant[rule.axis] != nil } }
            var seen: [Variant: String] = [:]
            for member in members {
                guard var name = names[member] else { continue }
                for rule in axes where name.variant[rule.axis] == nil {
                    guard let value = rule.defaultValue else {
                        let marked = members.first { names[$0]?.variant[rule.axis] != nil } ?? logical
                        throw BuildError(
                            .missingVariantDefault,
                            "'\(member)' has no '\(rule.axis)' value but '\(marked)' is a '\(rule.axis)' variant of the same path '\(logical)'; mark '\(member)' with a value (\(rule.values.map { "\(rule.marker)\($0)" }.joined(separator: ", "))) or declare a \"default\" for the axis",
                            file: member)
                    }
                    name.variant[rule.axis] = value
                }
                names[member] = name
                if let other = seen.updateValue(member, forKey: name.variant) {
                    throw BuildError(
                        .duplicateVariant,
                        "'\(other)' and '\(member)' are both the variant '\(name.variant.variantDescription)' of '\(logical)' (an unmarked file takes the axis's default); remove or rename one of them",
                        file: member)
                }
            }
        }
        return names
    }
}
