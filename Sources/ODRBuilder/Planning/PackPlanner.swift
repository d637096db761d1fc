import Foundation

/// Groups hashed files into packs: one pack per distinct tag set, content stored once, large tag
/// sets split into balanced parts.
///
/// Planning is deterministic: the same files and rules give the same plan, whatever order the
/// files come in.
///
/// ```swift
/// let plan = try PackPlanner(rules: rules).plan(hashed)
/// for pack in plan.packs { print(pack.tags, pack.entries.count) }
/// ```
public struct PackPlanner: Sendable {
    /// The tag rules.
    public var rules: TagRules
    /// Whether a single file larger than the pack size limit gets a pack of its own instead of failing.
    public var allowOversize: Bool

    /// Creates a planner.
    public init(rules: TagRules, allowOversize: Bool = false) {
        self.rules = rules
        self.allowOversize = allowOversize
    }

    /// Plans the packs for `assets`.
    ///
    /// - Throws: `BuildError` `plan.untaggedFiles` (untagged files with `"untagged": "error"`) or
    ///   `plan.oversizeFile` (a file over the pack size limit without `allowOversize`).
    public func plan(_ assets: [HashedAsset]) throws(BuildError) -> PackPlan {
        var warnings: [BuildWarning] = []
        var pathTags: [String: [String]] = [:]
        var untagged: [String] = []
        let matcher = rules.matcher()
        for asset in assets.sorted(by: { $0.path < $1.path }) {
            var tags = matcher.tags(forPath: asset.path)
            if tags.isEmpty {
                untagged.append(asset.path)
                guard rules.untagged == .base else { continue }
                tags = [TagRules.baseTag]
            }
            pathTags[asset.path] = tags
        }
        if !untagged.isEmpty {
            let listed = untagged.prefix(10).joined(separator: ", ") + (untagged.count > 10 ? ", ..." : "")
            switch rules.untagged {
            case .error:
                throw BuildError(
                    .untaggedFiles,
                    "\(untagged.count) file(s) match no tag rule: \(listed). Tag them, exclude them, or set \"untagged\" to \"warn\" or \"base\"",
                    key: "untagged", value: "\"error\"")
            case .warn:
                warnings.append(BuildWarning(.untaggedFiles, "left out \(untagged.count) untagged file(s): \(listed)"))
            case .base:
                break
            }
        }

        // Merge paths with identical content: one entry, tagged with the union of their tag sets.
        struct Content {
            var asset: HashedAsset
            var paths: [String]
            var tags: Set<String>
        }
        var contents: [String: Content] = [:]
        var duplicateFiles = 0
        var savedBytes: Int64 = 0
        for asset in assets.sorted(by: { $0.path < $1.path }) {
            guard let tags = pathTags[asset.path] else { continue }
            if var content = contents[asset.sha256] {
                content.paths.append(asset.path)
                content.tags.formUnion(tags)
                contents[asset.sha256] = content
                duplicateFiles += 1
                savedBytes += asset.size
            } else {
                contents[asset.sha256] = Content(asset: asset, paths: [asset.path], tags: Set(tags))
            }
        }

        var byTagSet: [[String]: [PackPlan.Entry]] = [:]
        for content in contents.values {
            let entry = PackPlan.Entry(
                name: content.paths[0], sha256: content.asset.sha256, size: content.asset.size,
                source: content.asset.file.url, paths: content.paths)
            byTagSet[content.tags.sorted(), default: []].append(entry)
        }

        var packs: [PackPlan.Pack] = []
        for tagSet in byTagSet.keys.sorted(by: { $0.lexicographicallyPrecedes($1) }) {
            let entries = byTagSet[tagSet] ?? []
            let parts = try split(entries, tags: tagSet, warnings: &warnings)
            for (index, part) in parts.enumerated() {
                packs.append(PackPlan.Pack(
                    tags: tagSet, part: index + 1, partCount: parts.count,
                    entries: part.sorted { $0.name < $1.name }))
            }
        }

        let tagNames = rules.definedTagNames
        let usedTags = Set(packs.flatMap(\.tags))
        for name in tagNames where !usedTags.contains(name) {
            warnings.append(BuildWarning(.emptyTag, "tag '\(name)' matches no file"))
        }
        return PackPlan(
            packs: packs,
            tags: tagNames.map { PackPlan.Tag(name: $0, preservationPriority: rules.preservationPriority(of: $0)) },
            pathTags: pathTags, duplicateFiles: duplicateFiles, bytesSavedByDeduplication: savedBytes,
            warnings: warnings)
    }

    /// Splits one tag set's entries into parts no larger than the pack size limit, balanced by size.
    ///
    /// Longest-processing-time greedy: entries by descending size (ties by name) go to the lightest
    /// part (ties by index). The part count starts at the lower bound and grows until every part
    /// fits, which it does at the latest with one entry per part. Parts come out ordered by their
    /// first entry name so the result does not depend on the search.
    func split(
        _ entries: [PackPlan.Entry], tags: [String], warnings: inout [BuildWarning]
    ) throws(BuildError) -> [[PackPlan.Entry]] {
        let limit = rules.limits.packSize
        let label = tags.joined(separator: "+")
        var oversize: [[PackPlan.Entry]] = []
        var fitting: [PackPlan.Entry] = []
        for entry in entries {
            guard entry.size > limit else {
                fitting.append(entry)
                continue
            }
            guard allowOversize else {
                throw BuildError(
                    .oversizeFile,
                    "the file is \(entry.size) bytes, over the pack size limit of \(limit) bytes; raise limits.packSize or pass --allow-oversize",
                    file: entry.name, key: "limits.packSize", value: String(limit))
            }
            warnings.append(BuildWarning(
                .oversizeFile, "'\(entry.name)' (\(entry.size) bytes) is over the pack size limit and has a pack of its own"))
            oversize.append([entry])
        }
        let total = fitting.reduce(Int64(0)) { $0 + $1.size }
        var parts: [[PackPlan.Entry]]
        if total <= limit {
            parts = fitting.isEmpty ? [] : [fitting]
        } else {
            let ordered = fitting.sorted { $0.size > $1.size || ($0.size == $1.size && $0.name < $1.name) }
            var count = Int((total + limit - 1) / limit)
            while true {
                var bins = [[PackPlan.Entry]](repeating: [], count: count)
                var loads = [Int64](repeating: 0, count: count)
                for entry in ordered {
                    var lightest = 0
                    for index in 1..<count where loads[index] < loads[lightest] { lightest = index }
                    bins[lightest].append(entry)
                    loads[lightest] += entry.size
                }
                if loads.allSatisfy({ $0 <= limit }) {
                    parts = bins.filter { !$0.isEmpty }
                    break
                }
                count += 1
            }
        }
        parts += oversize
        if parts.count > 1 {
            warnings.append(BuildWarning(
                .splitPack, "tag set [\(label)] holds \(total) bytes, over the \(limit)-byte pack limit; split into \(parts.count) packs"))
        }
        return parts.sorted { ($0.map(\.name).min() ?? "") < ($1.map(\.name).min() ?? "") }
    }
}
