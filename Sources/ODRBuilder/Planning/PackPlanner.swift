import Foundation
import ODRFormat

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
    /// With variant axes in the rules, each file is first mapped to its logical path and variant
    /// (``VariantResolver``); tags match the logical path, so every variant of a path has the same
    /// tags, and packs are grouped by tag set and variant, and by the variants each path has (a path
    /// that lacks some is packed apart, so a device that falls back for it downloads only such paths).
    ///
    /// - Parameter names: each asset's logical path and variant, when the caller resolved them
    ///   already (to fail before hashing); resolved here otherwise.
    /// - Throws: `BuildError` `plan.untaggedFiles` (untagged files with `"untagged": "error"`),
    ///   `plan.oversizeFile` (a file over the pack size limit without `allowOversize`), or a
    ///   variant naming error from ``VariantResolver/resolve(_:)``.
    public func plan(_ assets: [HashedAsset], names: [String: VariantResolver.Name]? = nil) throws(BuildError) -> PackPlan {
        let assets = assets.sorted { $0.path < $1.path }
        let names = if let names { names } else { try VariantResolver(rules: rules.variants).resolve(assets.map(\.path)) }
        func name(of asset: HashedAsset) -> VariantResolver.Name { names[asset.path] ?? .init(logicalPath: asset.path) }
        var warnings: [BuildWarning] = []
        var pathTags: [String: [String]] = [:]
        var untagged: [String] = []
        var tagged = Set<String>()
        let matcher = rules.matcher()
        for asset in assets {
            let logical = name(of: asset).logicalPath
            guard tagged.insert(logical).inserted else { continue }
            var tags = matcher.tags(forPath: logical)
            if tags.isEmpty {
                untagged.append(logical)
                guard rules.untagged == .base else { continue }
                tags = [TagRules.baseTag]
            }
            pathTags[logical] = tags
        }
        untagged.sort()
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

        // Which variants each logical path has. Paths with the same variants resolve alike on every
        // device, so they share packs; a path that lacks some variants gets packs apart from the
        // complete ones, so a device that falls back for it downloads only such paths (rock.png
        // only at 2x does not make a 1x device download every 2x file of its tag).
        var availability: [String: String] = [:]
        do {
            var variantsOfPath: [String: [String]] = [:]
            for asset in assets {
                let name = name(of: asset)
                if !name.variant.isEmpty { variantsOfPath[name.logicalPath, default: []].append(name.variant.variantDescription) }
            }
            for (path, variants) in variantsOfPath { availability[path] = variants.sorted().joined(separator: " ") }
        }

        // Merge paths with identical content: one entry, tagged with the union of their tag sets.
        // A variant merges only with the same variant of paths with the same tags and the same
        // variants: every variant of a logical path must land in packs of one tag set, which a
        // union could break.
        struct Content {
            var asset: HashedAsset
            var variant: Variant
            var availability: String
            var paths: [String]
            var tags: Set<String>
        }
        var contents: [String: Content] = [:]
        var duplicateFiles = 0
        var savedBytes: Int64 = 0
        for asset in assets {
            let name = name(of: asset)
            guard let tags = pathTags[name.logicalPath] else { continue }
            let available = availability[name.logicalPath] ?? ""
            let key = name.variant.isEmpty
                ? asset.sha256
                : "\(asset.sha256) \(name.variant.variantDescription) \(tags.joined(separator: ",")) \(available)"
            if var content = contents[key] {
                content.paths.append(name.logicalPath)
                content.tags.formUnion(tags)
                contents[key] = content
                duplicateFiles += 1
                savedBytes += asset.size
            } else {
                contents[key] = Content(asset: asset, variant: name.variant, availability: available, paths: [name.logicalPath], tags: Set(tags))
            }
        }

        struct Group: Hashable {
            var tags: [String]
            var variant: Variant
            /// The variants its paths have (empty for common files).
            var availability: String
        }
        var byGroup: [Group: [PackPlan.Entry]] = [:]
        let compressionOf = Dictionary(rules.tags.compactMap { rule in rule.compression.map { (rule.name, $0) } }) { first, _ in first }
        for content in contents.values {
            let entry = PackPlan.Entry(
                name: content.asset.path, sha256: content.asset.sha256, size: content.asset.size,
                source: content.asset.file.url, paths: content.paths.sorted(),
                method: try Self.method(of: content.paths.sorted(), pathTags: pathTags, compressionOf: compressionOf))
            byGroup[Group(tags: content.tags.sorted(), variant: content.variant, availability: content.availability), default: []].append(entry)
        }

        let ordered = byGroup.keys.sorted {
            $0.tags != $1.tags
                ? $0.tags.lexicographicallyPrecedes($1.tags)
                : $0.variant != $1.variant
                    ? $0.variant.variantDescription < $1.variant.variantDescription
                    : $0.availability < $1.availability
        }
        let (groups, overFetched) = merge(ordered.map {
            PackGroup(tags: $0.tags, variant: $0.variant, availability: $0.availability, entries: byGroup[$0] ?? [])
        })
        var packs: [PackPlan.Pack] = []
        for group in groups {
            let parts = try split(group.entries, tags: group.tags, variant: group.variant, warnings: &warnings)
            for (index, part) in parts.enumerated() {
                packs.append(PackPlan.Pack(
                    tags: group.tags, variant: group.variant, part: index + 1, partCount: parts.count,
                    entries: part.sorted { $0.name < $1.name }))
            }
        }
        // Sorted by tag set, then variant, then first entry (merged packs can share a tag set).
        packs.sort {
            $0.tags != $1.tags
                ? $0.tags.lexicographicallyPrecedes($1.tags)
                : $0.variant != $1.variant
                    ? $0.variant.variantDescription < $1.variant.variantDescription
                    : ($0.entries.first?.name ?? "") < ($1.entries.first?.name ?? "")
        }

        let tagNames = rules.definedTagNames
        let usedTags = Set(packs.flatMap(\.tags))
        for name in tagNames where !usedTags.contains(name) {
            warnings.append(BuildWarning(.emptyTag, "tag '\(name)' matches no file"))
        }
        return PackPlan(
            packs: packs, variantAxes: rules.variants.map(\.manifestAxis),
            tags: tagNames.map {
                PackPlan.Tag(name: $0, preservationPriority: rules.preservationPriority(of: $0), overFetchedBytes: overFetched[$0] ?? 0)
            },
            pathTags: pathTags, duplicateFiles: duplicateFiles, bytesSavedByDeduplication: savedBytes,
            warnings: warnings)
    }

    /// The compression the rules ask for the content at `paths`: that of the tags with a
    /// `"compression"` that hold any of them, `nil` when none does.
    ///
    /// - Throws: `BuildError` `rules.invalidValue` naming both rules when they ask for different methods.
    static func method(
        of paths: [String], pathTags: [String: [String]], compressionOf: [String: CompressionMethod]
    ) throws(BuildError) -> CompressionMethod? {
        guard !compressionOf.isEmpty else { return nil }
        var chosen: (tag: String, method: CompressionMethod)?
        for path in paths {
            for tag in pathTags[path] ?? [] {
                guard let method = compressionOf[tag] else { continue }
                if let earlier = chosen, earlier.method != method {
                    throw BuildError(
                        .invalidValue,
                        "the tags '\(earlier.tag)' and '\(tag)' both hold this file and ask for different compression; give it one (remove one \"compression\" or exclude the file from one tag)",
                        file: path, key: "tags.\(tag).compression", value: "\"\(method == .stored ? "store" : "deflate")\"")
                }
                chosen = chosen ?? (tag, method)
            }
        }
        return chosen?.method
    }

    /// The balanced parts of entries that each fit `limit`, as indices into `entries`: one part when
    /// they fit together, else longest-processing-time greedy. Entries by descending size (ties by
    /// name) go to the lightest part (ties by index); the part count starts at the lower bound and
    /// grows until every part fits. What ``split(_:tags:variant:warnings:)`` does, and what
    /// `odrpack report` does again to tell a split's parts from packs merged into one tag set.
    static func balancedParts(of entries: [(name: String, size: Int64)], limit: Int64) -> [[Int]] {
        let total = entries.reduce(Int64(0)) { $0 + $1.size }
        guard total > limit else { return entries.isEmpty ? [] : [Array(entries.indices)] }
        let ordered = entries.indices.sorted {
            entries[$0].size > entries[$1].size || (entries[$0].size == entries[$1].size && entries[$0].name < entries[$1].name)
        }
        var count = Int((total + limit - 1) / limit)
        while true {
            var bins = [[Int]](repeating: [], count: count)
            var loads = [Int64](repeating: 0, count: count)
            for entry in ordered {
                var lightest = 0
                for index in 1..<count where loads[index] < loads[lightest] { lightest = index }
                bins[lightest].append(entry)
                loads[lightest] += entries[entry].size
            }
            if loads.allSatisfy({ $0 <= limit }) { return bins.filter { !$0.isEmpty } }
            count += 1
        }
    }

    /// Splits one tag set's (and variant's) entries into parts no larger than the pack size limit, balanced by size.
    ///
    /// Longest-processing-time greedy: entries by descending size (ties by name) go to the lightest
    /// part (ties by index). The part count starts at the lower bound and grows until every part
    /// fits, which it does at the latest with one entry per part. Parts come out ordered by their
    /// first entry name so the result does not depend on the search.
    func split(
        _ entries: [PackPlan.Entry], tags: [String], variant: Variant = [:], warnings: inout [BuildWarning]
    ) throws(BuildError) -> [[PackPlan.Entry]] {
        let limit = rules.limits.packSize
        let label = tags.joined(separator: "+") + (variant.isEmpty ? "" : " (\(variant.variantDescription))")
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
        var parts = Self.balancedParts(of: fitting.map { ($0.name, $0.size) }, limit: limit).map { $0.map { fitting[$0] } }
        parts += oversize
        if parts.count > 1 {
            warnings.append(BuildWarning(
                .splitPack, "tag set [\(label)] holds \(total) bytes, over the \(limit)-byte pack limit; split into \(parts.count) packs"))
        }
        return parts.sorted { ($0.map(\.name).min() ?? "") < ($1.map(\.name).min() ?? "") }
    }
}
