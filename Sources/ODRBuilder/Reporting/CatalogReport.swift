import Foundation
import ODRFormat

/// Everything `odrpack report` shows about one version of a catalog: the build report of the version,
/// each pack's largest files, which tags share packs, the most duplicated contents, what a chosen
/// device downloads, and, against an earlier version, what the update costs a client per tag.
///
/// The HTML page (``html()``) and `odrpack report --json` are drawn from this one value, and its
/// numbers are those of the text and JSON reports: ``summary`` is a ``BuildReport`` (the one
/// `odrpack build` returned, or one made from the manifest), tag sizes are the manifest's (as
/// `odrpack inspect --json` prints them), and ``Update/diff`` is ``CatalogDiff`` (as `odrpack diff`
/// prints it), whose per-tag costs come from the runtime's fetch plan (``ODRFormat/PackFetchPlan``).
///
/// ```swift
/// import Foundation
/// import ODRBuilder
///
/// let catalog = CatalogDirectory(root: URL(filePath: "out/catalog"))
/// let report = try CatalogReport(catalog: catalog, version: 4, against: 3)
/// try report.writeHTML(to: URL(filePath: "report.html"))
/// ```
public struct CatalogReport: Codable, Sendable, Equatable {
    /// One file of a pack.
    public struct File: Codable, Sendable, Equatable {
        /// The logical path.
        public var path: String
        /// Its variant; empty for a common file.
        public var variant: Variant
        /// Uncompressed bytes.
        public var size: Int64
        /// Bytes in the archive.
        public var storedSize: Int64
        /// Whether the archive deflates it.
        public var deflated: Bool
    }

    /// Content found at more than one path.
    public struct Duplicate: Codable, Sendable, Equatable {
        /// Its SHA-256.
        public var sha256: String
        /// Its size.
        public var size: Int64
        /// How many paths hold it.
        public var pathCount: Int
        /// The first paths holding it (at most ``CatalogReport/listLimit``), sorted.
        public var paths: [String]
        /// The packs that store it: one when deduplication kept a single copy.
        public var packs: [String]
        /// Bytes not stored (or, across packs, stored again): `size` times the paths beyond the first.
        public var repeatedBytes: Int64
    }

    /// What moving from an earlier version costs.
    public struct Update: Codable, Sendable, Equatable {
        /// The comparison, as `odrpack diff` makes it (every variant).
        public var diff: CatalogDiff
        /// For every tag of the version, the bytes a client holding the tag's packs of the earlier
        /// version downloads to hold them in this one (for ``CatalogReport/device`` when one is
        /// chosen): a changed tag's figure is ``CatalogDiff/ChangedTag/downloadBytes``, an
        /// unchanged tag's is 0, and a new tag costs its whole download.
        public var tagDownloadBytes: [String: Int64]
    }

    /// The most items a list of the report names (files per pack, paths per duplicate, duplicates).
    public static let listLimit = 20

    /// The version's report: packs, tags, sharing, variants, deduplication, budget and warnings.
    public var summary: BuildReport
    /// The device chosen with `--variant` (axis -> accepted values, best first); empty for none.
    public var device: [String: [String]]
    /// With a device: what it downloads per tag (packs, download and installed bytes).
    public var deviceTags: [String: BuildReport.VariantDownload]
    /// The largest files of each pack (largest first, at most ``listLimit``), by pack id.
    public var packFiles: [String: [File]]
    /// For each tag, the other tags that need one of its packs, sorted.
    public var sharedWith: [String: [String]]
    /// The contents found at the most paths (then the largest), at most ``listLimit``.
    public var duplicates: [Duplicate]
    /// With an earlier version to compare against, what the update costs.
    public var update: Update?

    /// Reads a version of a catalog and makes its report.
    ///
    /// - Parameters:
    ///   - catalog: the catalog folder.
    ///   - version: the version; by default the one the `live` distribution points at, or the latest.
    ///   - against: an earlier (or any other) version to price the update from.
    ///   - device: a device's variant choices; each axis and value must be declared by the version.
    ///   - limits: the pack size limit and budget the catalog was built under (the rules' `limits`);
    ///     `nil` when unknown.
    ///   - build: the report `odrpack build` returned for this version; used as ``summary`` so its
    ///     build-time warnings (skipped links, untagged files) are kept.
    /// - Throws: `catalog.io` when the folder is not a catalog, `catalog.unknownVersion`,
    ///   `catalog.malformed`, `report.unknownVariant`.
    public init(
        catalog: CatalogDirectory, version: Int? = nil, against: Int? = nil, device: VariantPreferences = VariantPreferences(),
        limits: TagRules.Limits? = nil, build: BuildReport? = nil
    ) throws(BuildError) {
        let index = try catalog.loadIndex()
        guard let chosen = version ?? index.distributions["live"] ?? index.versions.map(\.number).max() else {
            throw BuildError(.unknownVersion, "the catalog has no versions yet; run odrpack build", file: catalog.root.path)
        }
        let manifest = try catalog.loadManifest(version: chosen, in: index)
        let old = try against.map { number throws(BuildError) in try catalog.loadManifest(version: number, in: index) }
        let pointing = index.distributions.filter { $0.value == chosen }.keys.sorted().joined(separator: ",")
        var summary = build ?? BuildReport(manifest: manifest, distribution: pointing, previous: old, limits: limits)
        summary.warnings += Self.compressionWarnings(of: manifest, in: catalog)
        try self.init(manifest: manifest, against: old, device: device, summary: summary)
    }

    /// Makes the report of `manifest` from its build report, compared with `old` when given.
    ///
    /// - Throws: `report.unknownVariant` when `device` names an axis or value `manifest` does not declare.
    public init(manifest: VersionManifest, against old: VersionManifest? = nil, device: VariantPreferences = VariantPreferences(),
                summary: BuildReport) throws(BuildError) {
        for (axis, values) in device.values.sorted(by: { $0.key < $1.key }) {
            guard let declared = manifest.variantAxes.first(where: { $0.name == axis }) else {
                let axes = manifest.variantAxes.map(\.name)
                throw BuildError(
                    .unknownVariant,
                    "version \(manifest.version) has no variant axis '\(axis)'; "
                        + (axes.isEmpty ? "it has no variants, so leave out --variant" : "its axes are \(axes.joined(separator: ", "))"),
                    key: "--variant", value: axis)
            }
            for value in values where !declared.values.contains(value) {
                throw BuildError(
                    .unknownVariant,
                    "axis '\(axis)' of version \(manifest.version) has no value '\(value)'; it has \(declared.values.joined(separator: ", "))",
                    key: "--variant", value: "\(axis)=\(value)")
            }
        }
        self.summary = summary
        self.device = device.values
        let index = ManifestIndex(manifest)
        let deviceIndex = device.isEmpty ? nil : ManifestIndex(manifest, variants: device)
        deviceTags = [:]
        for tag in deviceIndex?.tags ?? [] {
            deviceTags[tag.name] = BuildReport.VariantDownload(
                axis: device.values.keys.sorted().joined(separator: ","),
                value: device.values.sorted { $0.key < $1.key }.map { $0.value.joined(separator: ",") }.joined(separator: ";"),
                packs: tag.packs.sorted(), downloadBytes: tag.downloadBytes, installedBytes: tag.installedBytes)
        }

        packFiles = [:]
        for pack in manifest.packs {
            packFiles[pack.id] = index.files(inPack: pack.id)
                .sorted { ($1.size, $0.path) < ($0.size, $1.path) }
                .prefix(Self.listLimit)
                .map { File(path: $0.path, variant: $0.variant, size: $0.size, storedSize: $0.storedSize, deflated: $0.method == .deflate) }
        }

        var tagsOfPack: [String: [String]] = [:]
        for pack in manifest.packs { tagsOfPack[pack.id] = pack.tags }
        sharedWith = [:]
        for tag in manifest.tags {
            var others = Set<String>()
            for id in tag.packs { others.formUnion(tagsOfPack[id] ?? []) }
            others.remove(tag.name)
            if !others.isEmpty { sharedWith[tag.name] = others.sorted() }
        }

        struct Content {
            var size: Int64
            var paths: [String]
            var packs: Set<String>
        }
        var contents: [String: Content] = [:]
        for file in manifest.files {
            contents[file.sha256, default: Content(size: file.size, paths: [], packs: [])].paths.append(file.path)
            contents[file.sha256]?.packs.insert(file.pack)
        }
        duplicates = contents.filter { $0.value.paths.count > 1 }
            .map { sha, content in
                Duplicate(
                    sha256: sha, size: content.size, pathCount: content.paths.count,
                    paths: Array(content.paths.sorted().prefix(Self.listLimit)), packs: content.packs.sorted(),
                    repeatedBytes: content.size.multipliedReportingOverflow(by: Int64(content.paths.count - 1)).overflow
                        ? .max : content.size * Int64(content.paths.count - 1))
            }
            .sorted { ($1.repeatedBytes, $0.sha256) < ($0.repeatedBytes, $1.sha256) }
            .prefix(Self.listLimit).map { $0 }

        update = old.map { old in Self.update(from: old, to: manifest, device: device) }
    }

    /// The update from `old` to `new`; per tag for `device` (the diff of the two versions with each
    /// tag's packs narrowed to those the device chooses), the totals over every variant.
    private static func update(from old: VersionManifest, to new: VersionManifest, device: VariantPreferences) -> Update {
        let diff = CatalogDiff(from: old, to: new)
        let perTag: CatalogDiff
        if device.isEmpty {
            perTag = diff
        } else {
            func narrowed(_ manifest: VersionManifest) -> VersionManifest {
                var copy = manifest
                copy.tags = ManifestIndex(manifest, variants: device).tags
                return copy
            }
            perTag = CatalogDiff(from: narrowed(old), to: narrowed(new))
        }
        let changed = Dictionary(perTag.changedTags.map { ($0.name, $0.downloadBytes) }, uniquingKeysWith: { first, _ in first })
        let added = Set(perTag.addedTags)
        let tags = device.isEmpty ? new.tags : ManifestIndex(new, variants: device).tags
        var costs: [String: Int64] = [:]
        for tag in tags {
            costs[tag.name] = changed[tag.name] ?? (added.contains(tag.name) ? tag.downloadBytes : 0)
        }
        return Update(diff: diff, tagDownloadBytes: costs)
    }

    /// Writes the report as one self-contained HTML page (``html()``): to a temporary file beside
    /// `location`, flushed, then renamed over it, so a failed write leaves no half-written page.
    ///
    /// - Throws: `report.unwritable` when the folder is missing or read-only, or the disk is full.
    public func writeHTML(to location: URL) throws(BuildError) {
        let folder = CatalogDirectory(root: location.deletingLastPathComponent())
        var isFolder: ObjCBool = false
        guard FileManager.default.fileExists(atPath: folder.root.path, isDirectory: &isFolder), isFolder.boolValue else {
            throw BuildError(
                .reportUnwritable, "the report's folder does not exist; create it or write the report elsewhere", file: location.path)
        }
        do {
            try folder.writeAtomically(Data(html().utf8), to: location)
        } catch {
            throw BuildError(
                .reportUnwritable,
                "cannot write the report; check that its folder exists and is writable and that the disk has room",
                file: location.path, cause: error.cause)
        }
    }
}
