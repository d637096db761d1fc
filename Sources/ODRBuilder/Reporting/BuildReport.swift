import ODRFormat

/// What `odrpack build` did: the packs and tags of the version, what they cost a client, and warnings.
///
/// Encodes to JSON for machines (`--json`); ``rendered()`` gives the text humans read.
public struct BuildReport: Codable, Sendable, Equatable {
    /// One pack of the version.
    public struct Pack: Codable, Sendable, Equatable {
        /// The pack id (SHA-256 of the archive).
        public var id: String
        /// The pack's tag set.
        public var tags: [String]
        /// The pack's variant; empty for a common pack.
        public var variant: Variant = [:]
        /// 1-based part number when the tag set was split.
        public var part: Int
        /// How many parts the tag set was split into.
        public var partCount: Int
        /// Distinct entries in the archive.
        public var entries: Int
        /// Logical paths stored in the pack (more than `entries` when files share content).
        public var files: Int
        /// Bytes a client downloads.
        public var archiveBytes: Int64
        /// Bytes the pack takes once installed.
        public var installedBytes: Int64
        /// Whether the archive came from an earlier version unchanged.
        public var reused: Bool
        /// Whether more than one tag needs the pack.
        public var shared: Bool
    }

    /// What a tag costs a device that prefers one value of one variant axis.
    ///
    /// The device accepts `value` first, then the axis's other values in declared order (so a path
    /// without that value falls back), and takes every other axis in its declared order: the
    /// figures are those of ``ODRFormat/ManifestIndex`` for that device, common packs included.
    public struct VariantDownload: Codable, Sendable, Equatable {
        /// The axis, for example `resolution`.
        public var axis: String
        /// The preferred value, for example `2x`.
        public var value: String
        /// The packs such a device downloads for the tag, sorted.
        public var packs: [String]
        /// Their archive bytes: what the device downloads with nothing installed.
        public var downloadBytes: Int64
        /// Their uncompressed bytes.
        public var installedBytes: Int64
    }

    /// One tag of the version.
    public struct Tag: Codable, Sendable, Equatable {
        /// The tag's name.
        public var name: String
        /// Its default preservation priority.
        public var preservationPriority: Double
        /// The packs a request for the tag downloads.
        public var packs: [String]
        /// Bytes a client with nothing installed downloads to use the tag.
        public var downloadBytes: Int64
        /// Bytes those packs take once installed.
        public var installedBytes: Int64
        /// Logical paths its packs hold: what installing the tag alone puts on disk, including
        /// paths of other tags that share content with its files or sit in a merged pack (as
        /// `odrpack report` counts them).
        public var files: Int
        /// Uncompressed bytes of other tags' files in the packs the tag needs, because small packs
        /// were merged (`limits.minimumPackSize`, `limits.overFetch`); 0 with exact packing. The
        /// tag's requests are its ``packs``.
        public var overFetchedBytes: Int64 = 0
        /// With variant axes, what the tag costs a device preferring each value of each axis, axes
        /// and values in declared order; empty without axes, and for a tag whose packs are all
        /// common (it costs every device the same). ``packs``, ``downloadBytes`` and
        /// ``installedBytes`` are over every variant.
        public var variants: [VariantDownload] = []
    }

    /// The catalog's id.
    public var catalogID: String
    /// The version the distribution now points at.
    public var version: Int
    /// Whether this build published a new version (`false` when nothing changed since the latest).
    public var publishedNewVersion: Bool
    /// The distribution moved to `version`.
    public var distribution: String
    /// Logical paths in the version.
    public var files: Int
    /// Files read and hashed (the rest came from the build cache).
    public var hashedFiles: Int
    /// Bytes read and hashed.
    public var hashedBytes: Int64
    /// The packs, sorted by tag set, then variant, then part.
    public var packs: [Pack]
    /// The tags, sorted by name.
    public var tags: [Tag]
    /// The variant axes of the version, in declared order; empty without variants.
    public var variantAxes: [VariantAxis] = []
    /// Ids of the packs more than one tag needs.
    public var sharedPacks: [String]
    /// Packs written by this build (the others were reused from earlier versions).
    public var writtenPacks: Int
    /// Files that share content with another path and were stored once.
    public var duplicateFiles: Int
    /// Bytes not stored thanks to deduplication.
    public var bytesSavedByDeduplication: Int64
    /// Tags installed with the app and prefetched after it.
    public var initialInstallAndPrefetchTags: [String]
    /// Installed bytes of the packs those tags need; with variant axes, for the device that needs
    /// the most among the default one and those of ``Tag/variants``.
    public var initialInstallAndPrefetchBytes: Int64
    /// The budget for them.
    public var initialInstallAndPrefetchBudget: Int64
    /// Warnings: split packs, budgets exceeded, tags without files, untagged or skipped files.
    public var warnings: [BuildWarning]
    /// Symbolic links in the assets folder that were followed (their targets packed as regular files).
    public var followedLinks = 0

    /// How many metadata files (tag bins and file tables) a split build wrote, and how many it kept
    /// from earlier versions because their content did not change.
    public struct SplitMetadataCounts: Codable, Sendable, Equatable {
        public var written: Int
        public var reused: Int

        public init(written: Int, reused: Int) {
            self.written = written
            self.reused = reused
        }
    }

    /// For a build with split metadata (format 3): the metadata files written and reused; `nil` otherwise.
    public var splitMetadata: SplitMetadataCounts?

    /// The form a build wrote the version's metadata in, and what chose it.
    ///
    /// `--split-metadata` or `--whole-manifest` (``BuildOptions/splitMetadata``) decides first, then
    /// `"splitMetadata"` in the rules, then the form of the catalog's latest version (a catalog
    /// keeps its form across builds), and a new catalog is split.
    public struct MetadataForm: Codable, Sendable, Equatable {
        /// Split metadata (format 3 or 5) or one whole manifest (format 1, 2 or 4).
        public enum Form: String, Codable, Sendable {
            case split, whole
        }
        /// What chose the form.
        public enum Reason: String, Codable, Sendable {
            /// `--split-metadata` or `--whole-manifest`.
            case option
            /// `"splitMetadata"` in the rules.
            case rules
            /// The form of the catalog's latest version, kept.
            case catalog
            /// A new catalog, split by default.
            case `default`
        }
        public var form: Form
        public var reason: Reason
        /// For ``Reason/catalog``: the version whose form was kept.
        public var keptFrom: Int?

        public init(form: Form, reason: Reason, keptFrom: Int? = nil) {
            self.form = form
            self.reason = reason
            self.keptFrom = keptFrom
        }

        /// The form a build writes: the option, else the rules, else the latest version's form
        /// (`latest`: its number and whether it is split), else split.
        public static func chosen(option: Bool?, rules: Bool?, latest: (number: Int, split: Bool)?) -> MetadataForm {
            func form(_ split: Bool) -> Form { split ? .split : .whole }
            if let option { return MetadataForm(form: form(option), reason: .option) }
            if let rules { return MetadataForm(form: form(rules), reason: .rules) }
            if let latest { return MetadataForm(form: form(latest.split), reason: .catalog, keptFrom: latest.number) }
            return MetadataForm(form: .split, reason: .default)
        }
    }

    /// The form of the version's metadata and what chose it; `nil` for a report made from a
    /// manifest (``init(manifest:distribution:previous:limits:)``).
    public var metadataForm: MetadataForm?

    /// For a version with chunked files: how many, their chunks, and against the version before
    /// it the chunks that changed and their bytes; `nil` when no file is chunked.
    public var chunking: ChunkSummary?
}
