import Foundation
import ODRFormat

extension TagRules {
    /// Reads and validates a rules file.
    ///
    /// - Throws: `BuildError` with a `rules.*` code naming the file, the key and the value.
    public static func load(from url: URL) throws(BuildError) -> TagRules {
        let data: Data
        do {
            data = try Data(contentsOf: url)
        } catch {
            throw BuildError(
                .rulesUnreadable,
                "cannot read the rules file; create it (see docs/ODRPACK.md) or pass --rules FILE",
                file: url.path, cause: error)
        }
        return try parse(data, file: url.path)
    }

    /// Parses and validates the JSON text of a rules file; `file` names it in errors.
    public static func parse(_ data: Data, file: String = defaultFileName) throws(BuildError) -> TagRules {
        let document: JSONValue
        do {
            document = try JSONDecoder().decode(JSONValue.self, from: data)
        } catch {
            throw BuildError(.rulesMalformed, "the rules file is not valid JSON", file: file, cause: error)
        }
        var parser = RulesParser(file: file)
        return try parser.rules(from: document)
    }

    /// Whether `name` is a valid tag name: 1...128 letters, digits, `.`, `_` or `-` (the format's rule).
    public static func isValidTagName(_ name: String) -> Bool {
        TagRecord.problem(inName: name) == nil
    }
}

/// Walks the parsed JSON, producing errors that carry the file, the dotted key path and the value.
private struct RulesParser {
    let file: String

    func fail(_ code: BuildError.Code, _ message: String, key: String, value: JSONValue?) -> BuildError {
        BuildError(code, message, file: file, key: key, value: value?.rendered)
    }

    func object(_ value: JSONValue, key: String, allowed: Set<String>) throws(BuildError) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw fail(.invalidValue, "expected an object, found \(value.typeName)", key: key, value: value)
        }
        if let unknown = members.keys.sorted().first(where: { !allowed.contains($0) }) {
            let path = key.isEmpty ? unknown : "\(key).\(unknown)"
            throw fail(
                .unknownKey,
                "unknown key; allowed keys here are \(allowed.sorted().joined(separator: ", "))",
                key: path, value: members[unknown])
        }
        return members
    }

    func string(_ value: JSONValue, key: String) throws(BuildError) -> String {
        guard case .string(let text) = value else {
            throw fail(.invalidValue, "expected a string, found \(value.typeName)", key: key, value: value)
        }
        return text
    }

    func bool(_ value: JSONValue, key: String) throws(BuildError) -> Bool {
        guard case .bool(let flag) = value else {
            throw fail(.invalidValue, "expected true or false, found \(value.typeName)", key: key, value: value)
        }
        return flag
    }

    /// A list of strings; a single string stands for a list of one.
    func strings(_ value: JSONValue, key: String) throws(BuildError) -> [String] {
        switch value {
        case .string(let text): return [text]
        case .array(let items):
            var result: [String] = []
            for (index, item) in items.enumerated() { result.append(try string(item, key: "\(key)[\(index)]")) }
            return result
        default:
            throw fail(.invalidValue, "expected a list of strings, found \(value.typeName)", key: key, value: value)
        }
    }

    func globs(_ value: JSONValue, key: String) throws(BuildError) -> [GlobPattern] {
        let texts = try strings(value, key: key)
        var result: [GlobPattern] = []
        for (index, text) in texts.enumerated() {
            do {
                result.append(try GlobPattern(text))
            } catch {
                let itemKey = if case .array = value { "\(key)[\(index)]" } else { key }
                throw fail(.invalidGlob, "bad glob pattern: \(error.reason)", key: itemKey, value: .string(text))
            }
        }
        return result
    }

    /// A byte count: a non-negative integer, or a string such as `"512 MiB"` or `"2GB"`.
    func byteCount(_ value: JSONValue, key: String) throws(BuildError) -> Int64 {
        let invalid = fail(
            .invalidValue, "expected a positive byte count: \(ByteSize.acceptedForms)", key: key, value: value)
        switch value {
        case .number(let number):
            guard number > 0, number == number.rounded(), number < 9e18 else { throw invalid }
            return Int64(number)
        case .string(let text):
            guard let bytes = ByteSize.parse(text), bytes >= 1 else { throw invalid }
            return bytes
        default:
            throw invalid
        }
    }

    /// A byte count, or 0 (or "0") to turn a feature off.
    func byteCountOrZero(_ value: JSONValue, key: String) throws(BuildError) -> Int64 {
        let off: Bool = switch value {
        case .number(let number): number == 0
        case .string(let text): text.trimmingCharacters(in: .whitespaces) == "0"
        default: false
        }
        return off ? 0 : try byteCount(value, key: key)
    }

    /// The over-fetch bound: a share of each tag's bytes (`"3%"`, 0 to 100%), or a byte count
    /// (`"2 MiB"`, 0 for exact packing).
    func overFetch(_ value: JSONValue, key: String) throws(BuildError) -> TagRules.Limits.OverFetch {
        if case .string(let text) = value, text.trimmingCharacters(in: .whitespaces).hasSuffix("%") {
            let number = text.trimmingCharacters(in: .whitespaces).dropLast().trimmingCharacters(in: .whitespaces)
            guard let percent = Double(number), percent.isFinite, (0...100).contains(percent) else {
                throw fail(
                    .invalidValue, "expected a share of each tag's bytes from \"0%\" to \"100%\", such as \"3%\"",
                    key: key, value: value)
            }
            return .fraction(percent / 100)
        }
        return .bytes(try byteCountOrZero(value, key: key))
    }

    /// Chunk sizes: `{"min": ..., "average": ..., "max": ...}`, byte counts each; one left out keeps
    /// its standard value (64 KiB, 256 KiB, 1 MiB). FastCDC needs min < average < max, within the
    /// ranges its reference implementation accepts, and the format caps a chunk at 16 MiB.
    func chunkSizes(_ value: JSONValue, key: String) throws(BuildError) -> FastCDC.Parameters {
        let members = try object(value, key: key, allowed: ["min", "average", "max"])
        let standard = FastCDC.Parameters.standard
        var sizes: [String: Int64] = [
            "min": Int64(standard.minimumSize), "average": Int64(standard.averageSize), "max": Int64(standard.maximumSize),
        ]
        // Each size in the range the reference implementation accepts (the maximum also under the
        // format's cap), checked before the order so the message names the size that is wrong.
        let ranges: [(name: String, range: ClosedRange<Int64>, text: String)] = [
            ("min", 64...(64 << 20), "64 B to 64 MiB"),
            ("average", 256...(256 << 20), "256 B to 256 MiB"),
            ("max", 1024...FileChunk.maximumSize, "1 KiB to 16 MiB (the format's largest chunk)"),
        ]
        for (name, range, text) in ranges {
            guard let member = members[name] else { continue }
            let size = try byteCount(member, key: "\(key).\(name)")
            guard range.contains(size) else {
                throw fail(.invalidValue, "the \(name) chunk size must be \(text)", key: "\(key).\(name)", value: member)
            }
            sizes[name] = size
        }
        let minimum = sizes["min"] ?? 0, average = sizes["average"] ?? 0, maximum = sizes["max"] ?? 0
        guard minimum < average, average < maximum else {
            throw fail(
                .invalidValue,
                "chunk sizes must grow: min \(minimum) < average \(average) < max \(maximum) bytes (sizes not given are 64 KiB, 256 KiB and 1 MiB)",
                key: key, value: value)
        }
        do {
            return try FastCDC.Parameters(minimumSize: Int(minimum), averageSize: Int(average), maximumSize: Int(maximum))
        } catch {
            throw fail(.invalidValue, error.message, key: key, value: value)
        }
    }

    func tagName(_ value: JSONValue, key: String) throws(BuildError) -> String {
        let name = try string(value, key: key)
        guard TagRules.isValidTagName(name) else { throw invalidTagName(name, key: key) }
        return name
    }

    func invalidTagName(_ name: String, key: String) -> BuildError {
        fail(
            .invalidTagName,
            name.isEmpty
                ? "a tag name cannot be empty"
                : "tag names use 1-128 letters, digits, '.', '_' or '-'",
            key: key, value: .string(name))
    }

    mutating func rules(from document: JSONValue) throws(BuildError) -> TagRules {
        let root = try object(
            document, key: "",
            allowed: ["catalogID", "tags", "exclude", "includeHidden", "initialInstall", "prefetchOrder", "limits",
                      "untagged", "variants", "splitMetadata", "$schema", "comment"])
        guard let tagsValue = root["tags"] else {
            throw fail(.missingKey, "the rules file must define \"tags\"", key: "tags", value: nil)
        }
        var rules = TagRules(tags: [])
        if let value = root["catalogID"] {
            let id = try string(value, key: "catalogID")
            guard TagRules.isValidTagName(id) else {
                throw fail(
                    .invalidValue, "catalog ids use 1-128 letters, digits, '.', '_' or '-'",
                    key: "catalogID", value: value)
            }
            rules.catalogID = id
        }
        let tagMembers = try tagObject(tagsValue)
        var parsedTags: [TagRules.TagRule] = []
        for name in tagMembers.keys.sorted() {
            let key = "tags.\(name)"
            guard TagRules.isValidTagName(name) else { throw invalidTagName(name, key: key) }
            parsedTags.append(try tagRule(named: name, from: tagMembers[name] ?? .null, key: key))
        }
        rules.tags = parsedTags
        if let value = root["exclude"] { rules.exclude = try globs(value, key: "exclude") }
        if let value = root["includeHidden"] { rules.includeHidden = try bool(value, key: "includeHidden") }
        if let value = root["splitMetadata"] { rules.splitMetadata = try bool(value, key: "splitMetadata") }
        if let value = root["untagged"] {
            let text = try string(value, key: "untagged")
            guard let policy = TagRules.UntaggedPolicy(rawValue: text) else {
                throw fail(.invalidValue, "expected \"error\", \"warn\" or \"base\"", key: "untagged", value: value)
            }
            rules.untagged = policy
        }
        if let value = root["limits"] {
            let limits = try object(value, key: "limits", allowed: ["packSize", "initialInstallAndPrefetch", "chunkThreshold", "chunkSizes", "minimumPackSize", "overFetch", "baseGrowthWarning"])
            if let size = limits["packSize"] { rules.limits.packSize = try byteCount(size, key: "limits.packSize") }
            if let budget = limits["initialInstallAndPrefetch"] {
                rules.limits.initialInstallAndPrefetch = try byteCount(budget, key: "limits.initialInstallAndPrefetch")
            }
            if let threshold = limits["chunkThreshold"] {
                rules.limits.chunkThreshold = try byteCountOrZero(threshold, key: "limits.chunkThreshold")
            }
            if let minimum = limits["minimumPackSize"] {
                let size = try byteCountOrZero(minimum, key: "limits.minimumPackSize")
                guard size <= rules.limits.packSize else {
                    throw fail(
                        .invalidValue,
                        "the minimum pack size is over limits.packSize (\(rules.limits.packSize) bytes), so no merge could ever reach it; lower it, or set 0 for one pack per tag set",
                        key: "limits.minimumPackSize", value: minimum)
                }
                rules.limits.minimumPackSize = size
            }
            if let growth = limits["baseGrowthWarning"] {
                rules.limits.baseGrowthWarning = try byteCountOrZero(growth, key: "limits.baseGrowthWarning")
            }
            if let bound = limits["overFetch"] { rules.limits.overFetch = try overFetch(bound, key: "limits.overFetch") }
            if let sizes = limits["chunkSizes"] { rules.limits.chunkSizes = try chunkSizes(sizes, key: "limits.chunkSizes") }
        }
        let defined = Set(rules.definedTagNames)
        for listKey in ["initialInstall", "prefetchOrder"] {
            guard let value = root[listKey] else { continue }
            var names: [String] = []
            let texts = try strings(value, key: listKey)
            for (index, _) in texts.enumerated() {
                let itemKey = "\(listKey)[\(index)]"
                let name = try tagName(.string(texts[index]), key: itemKey)
                guard defined.contains(name) else {
                    throw fail(
                        .undefinedTag, "no rule defines this tag; add it under \"tags\" or remove it here",
                        key: itemKey, value: .string(name))
                }
                guard !names.contains(name) else {
                    throw fail(.invalidValue, "the tag is listed twice", key: itemKey, value: .string(name))
                }
                names.append(name)
            }
            if listKey == "initialInstall" { rules.initialInstall = names } else { rules.prefetchOrder = names }
        }
        if let value = root["variants"] { rules.variants = try variantRules(value) }
        return rules
    }

    /// The `variants` array: one object per axis, in declared order.
    func variantRules(_ value: JSONValue) throws(BuildError) -> [VariantRule] {
        guard case .array(let items) = value else {
            throw fail(.invalidValue, "expected a list of variant axes, found \(value.typeName)", key: "variants", value: value)
        }
        var rules: [VariantRule] = []
        for (index, item) in items.enumerated() {
            let key = "variants[\(index)]"
            let members = try object(item, key: key, allowed: ["axis", "values", "marker", "default", "files", "comment"])
            for required in ["axis", "values", "marker"] where members[required] == nil {
                throw fail(.missingKey, "a variant axis needs \"axis\", \"values\" and \"marker\"", key: "\(key).\(required)", value: nil)
            }
            let axisValue = members["axis"] ?? .null
            let axis = try string(axisValue, key: "\(key).axis")
            if let problem = VariantAxis.problem(inName: axis, kind: "variant axis name") {
                throw fail(.invalidVariantName, problem, key: "\(key).axis", value: axisValue)
            }
            guard !rules.contains(where: { $0.axis == axis }) else {
                throw fail(.invalidValue, "the axis is declared twice; declare each axis once", key: "\(key).axis", value: axisValue)
            }
            let valuesValue = members["values"] ?? .null
            guard case .array = valuesValue else {
                throw fail(.invalidValue, "expected a list of values, found \(valuesValue.typeName)", key: "\(key).values", value: valuesValue)
            }
            let values = try strings(valuesValue, key: "\(key).values")
            guard !values.isEmpty else {
                throw fail(.invalidValue, "an axis needs at least one value", key: "\(key).values", value: valuesValue)
            }
            for (position, text) in values.enumerated() {
                let valueKey = "\(key).values[\(position)]"
                if let problem = VariantAxis.problem(inName: text) {
                    throw fail(.invalidVariantName, problem, key: valueKey, value: .string(text))
                }
                guard values.firstIndex(of: text) == position else {
                    throw fail(.invalidValue, "the value is listed twice", key: valueKey, value: .string(text))
                }
            }
            let markerValue = members["marker"] ?? .null
            let markerText = try string(markerValue, key: "\(key).marker")
            if let problem = VariantRule.problem(inMarker: markerText) {
                throw fail(.invalidValue, problem, key: "\(key).marker", value: markerValue)
            }
            let marker = Character(markerText)
            var defaultValue: String?
            if let value = members["default"] {
                let text = try string(value, key: "\(key).default")
                guard values.contains(text) else {
                    throw fail(
                        .invalidValue, "the default must be one of the axis's values: \(values.joined(separator: ", "))",
                        key: "\(key).default", value: value)
                }
                defaultValue = text
            }
            var files: [GlobPattern] = []
            if let value = members["files"] { files = try globs(value, key: "\(key).files") }
            rules.append(VariantRule(axis: axis, values: values, marker: marker, defaultValue: defaultValue, files: files))
        }
        // A value holding a marker could be read two ways (`tree@v.1.png`); two axes with one marker
        // must not share a value, or a file name would not say which axis it sets.
        for (index, rule) in rules.enumerated() {
            for (position, value) in rule.values.enumerated() {
                if let other = rules.first(where: { value.contains($0.marker) }) {
                    throw fail(
                        .invalidValue,
                        "the value contains the marker '\(other.marker)' of the axis '\(other.axis)', so file names using it could be read two ways; rename the value or change the marker",
                        key: "variants[\(index)].values[\(position)]", value: .string(value))
                }
                if let other = rules[..<index].first(where: { $0.marker == rule.marker && $0.values.contains(value) }) {
                    throw fail(
                        .invalidValue,
                        "the axes '\(other.axis)' and '\(rule.axis)' share the marker '\(rule.marker)' and the value '\(value)', so a file name could not say which axis it sets; rename the value or change a marker",
                        key: "variants[\(index)].values[\(position)]", value: .string(value))
                }
            }
        }
        return rules
    }

    /// The `tags` object's members (any key is allowed there: they are tag names).
    func tagObject(_ value: JSONValue) throws(BuildError) -> [String: JSONValue] {
        guard case .object(let members) = value else {
            throw fail(.invalidValue, "expected an object of tag rules, found \(value.typeName)", key: "tags", value: value)
        }
        return members
    }

    func tagRule(named name: String, from value: JSONValue, key: String) throws(BuildError) -> TagRules.TagRule {
        // Shorthand: "level1": ["Levels/Level1/**"] or "level1": "Levels/Level1".
        switch value {
        case .array, .string:
            let include = try globs(value, key: key)
            guard !include.isEmpty else {
                throw fail(.invalidValue, "a tag needs at least one pattern", key: key, value: value)
            }
            return TagRules.TagRule(
                name: name, include: include,
                preservationPriority: name == TagRules.baseTag ? 1 : TagRules.defaultPreservationPriority)
        default:
            break
        }
        let members = try object(value, key: key, allowed: ["include", "exclude", "preservationPriority", "compression", "comment"])
        guard let includeValue = members["include"] else {
            throw fail(.missingKey, "a tag rule needs \"include\" patterns", key: "\(key).include", value: nil)
        }
        let include = try globs(includeValue, key: "\(key).include")
        guard !include.isEmpty else {
            throw fail(.invalidValue, "a tag needs at least one pattern", key: "\(key).include", value: includeValue)
        }
        // An explicit base keeps the priority the implicit one has unless it names its own.
        var rule = TagRules.TagRule(
            name: name, include: include,
            preservationPriority: name == TagRules.baseTag ? 1 : TagRules.defaultPreservationPriority)
        if let excludeValue = members["exclude"] { rule.exclude = try globs(excludeValue, key: "\(key).exclude") }
        if let compressionValue = members["compression"] {
            let compressionKey = "\(key).compression"
            switch try string(compressionValue, key: compressionKey) {
            case "store": rule.compression = .stored
            case "deflate": rule.compression = .deflate
            default:
                throw fail(
                    .invalidValue, "expected \"store\" (keep the bytes as they are) or \"deflate\"",
                    key: compressionKey, value: compressionValue)
            }
        }
        if let priorityValue = members["preservationPriority"] {
            let priorityKey = "\(key).preservationPriority"
            guard case .number(let priority) = priorityValue else {
                throw fail(
                    .invalidValue, "expected a number from 0 to 1, found \(priorityValue.typeName)",
                    key: priorityKey, value: priorityValue)
            }
            guard (0...1).contains(priority) else {
                throw fail(
                    .priorityOutOfRange, "preservation priorities go from 0 (purge first) to 1 (keep longest)",
                    key: priorityKey, value: priorityValue)
            }
            rule.preservationPriority = priority
        }
        return rule
    }
}
