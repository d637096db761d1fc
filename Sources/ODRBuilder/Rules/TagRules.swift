import ODRFormat

/// The tag rules of an assets folder, read from its `odr.json`.
///
/// Rules map tag names to glob patterns; a file's tag set is the union of the tags whose patterns
/// match it. See `docs/ODRPACK.md` for the file format.
///
/// ```swift
/// let rules = try TagRules.load(from: assets.appending(path: "odr.json"))
/// rules.tags(forPath: "Levels/Level1/map.json")   // ["level1"]
/// ```
public struct TagRules: Sendable, Equatable {
    /// The rules file's name inside an assets folder.
    public static let defaultFileName = "odr.json"
    /// The tag every untagged file gets when the rules say `"untagged": "base"`.
    public static let baseTag = "base"
    /// The priority a tag gets when its rule names none.
    public static let defaultPreservationPriority = 0.5

    /// What to do with files that no rule tags.
    public enum UntaggedPolicy: String, Sendable, CaseIterable {
        /// Fail the build, listing the files.
        case error
        /// Leave the files out and warn.
        case warn
        /// Put them in the `base` tag, which every client installs first.
        case base
    }

    /// Size budgets the build checks.
    public struct Limits: Sendable, Equatable {
        /// The largest pack, in uncompressed bytes; larger tag sets are split into parts.
        public var packSize: Int64 = 512 * 1024 * 1024
        /// The budget for the uncompressed bytes of initial-install plus prefetch tags.
        public var initialInstallAndPrefetch: Int64 = 2 * 1024 * 1024 * 1024
        /// Files of at least this many bytes are cut into content-defined chunks, so an update
        /// moves only their changed chunks; 0 turns chunking off. See `docs/ODRPACK.md`, "Chunking".
        public var chunkThreshold: Int64 = 8 * 1024 * 1024
        /// The minimum, average and maximum chunk sizes (`limits.chunkSizes`); `nil` keeps the
        /// build's ``PackWriter/Options/chunkSizes`` (``FastCDC/Parameters/standard`` unless set).
        public var chunkSizes: FastCDC.Parameters?
        /// Packs under this many uncompressed bytes merge with a pack that shares a tag, so a tag
        /// needs fewer requests; 0 keeps one pack per distinct tag set. See `docs/ODRPACK.md`,
        /// "Merging small packs".
        public var minimumPackSize: Int64 = 1024 * 1024
        /// How many bytes a tag may download that it does not need, because merged packs hold
        /// other tags' files; `.fraction(0)` or `.bytes(0)` keeps one pack per distinct tag set.
        public var overFetch: OverFetch = .fraction(0.03)
        /// `odrpack build` and `odrpack diff` warn (`baseGrew`) when the `base` tag's installed
        /// bytes grow by more than this between versions, naming its new folders; 0 turns the
        /// warning off. See ``BaseGrowth``.
        public var baseGrowthWarning: Int64 = 1024 * 1024

        /// A bound on the bytes a tag downloads beyond its own files.
        public enum OverFetch: Sendable, Equatable {
            /// A share of the tag's own bytes (`"3%"` is `0.03`).
            case fraction(Double)
            /// A number of bytes for every tag.
            case bytes(Int64)

            /// The bytes a tag that needs `needed` bytes may over-fetch.
            public func budget(forNeeded needed: Int64) -> Int64 {
                switch self {
                case .fraction(let share): Int64((Double(needed) * share).rounded(.down))
                case .bytes(let bytes): bytes
                }
            }

            /// Whether the bound is zero: exact packing.
            public var isZero: Bool { self == .fraction(0) || self == .bytes(0) }
        }

        /// Whether the build merges small packs (both the minimum size and the bound are set).
        public var mergesPacks: Bool { minimumPackSize > 0 && !overFetch.isZero }

        /// Creates the default limits (512 MiB packs, 2 GiB initial install plus prefetch, chunks
        /// for files of 8 MiB and more, of the standard sizes, packs under 1 MiB merged while no tag
        /// downloads more than 3% beyond its own bytes, a warning when base grows by over 1 MiB).
        public init() {}
    }

    /// One tag and the files it needs.
    public struct TagRule: Sendable, Equatable {
        /// The tag's name.
        public var name: String
        /// Files (or folders) the tag needs.
        public var include: [GlobPattern]
        /// Files the tag does not need even when `include` matches them.
        public var exclude: [GlobPattern]
        /// The tag's default preservation priority, 0 (purge first) ... 1 (keep longest).
        public var preservationPriority: Double
        /// How files the tag's patterns match are compressed (`"compression": "store"` or
        /// `"deflate"`); `nil` lets the pack writer choose from a sample of each file.
        public var compression: CompressionMethod?

        /// Creates a rule.
        public init(
            name: String, include: [GlobPattern], exclude: [GlobPattern] = [],
            preservationPriority: Double = TagRules.defaultPreservationPriority
        ) {
            self.name = name
            self.include = include
            self.exclude = exclude
            self.preservationPriority = preservationPriority
        }

        /// Whether this tag needs the file at `path`.
        public func matches(_ path: String) -> Bool {
            include.contains { $0.matches(path) } && !exclude.contains { $0.matches(path) }
        }
    }

    /// The catalog id the rules ask for, if any.
    public var catalogID: String?
    /// The tag rules, sorted by name.
    public var tags: [TagRule]
    /// Files left out of the build entirely.
    public var exclude: [GlobPattern]
    /// Whether hidden files and folders (names starting with `.`) are scanned; off by default.
    public var includeHidden: Bool
    /// Tags every client installs with the app.
    public var initialInstall: [String]
    /// Tags clients download in the background after the initial install, in this order.
    public var prefetchOrder: [String]
    /// Size budgets.
    public var limits: Limits
    /// What happens to files no rule tags.
    public var untagged: UntaggedPolicy
    /// The variant axes, in declared order: how file names mark variants of one logical path.
    public var variants: [VariantRule]
    /// Whether builds write split metadata (format 3: tag bins and per-pack file tables, `true`) or
    /// one whole manifest listing everything (`false`, for runtimes that cannot read split metadata);
    /// `nil` when the rules do not say: the catalog keeps the form of its latest version, and a new
    /// catalog is split. `odrpack build --split-metadata` and `--whole-manifest` override it.
    public var splitMetadata: Bool?

    /// Creates rules; `tags` is sorted by name, `variants` keep their order.
    public init(
        catalogID: String? = nil, tags: [TagRule], exclude: [GlobPattern] = [], includeHidden: Bool = false,
        initialInstall: [String] = [], prefetchOrder: [String] = [], limits: Limits = .init(),
        untagged: UntaggedPolicy = .error, variants: [VariantRule] = []
    ) {
        self.variants = variants
        self.catalogID = catalogID
        self.tags = tags.sorted { $0.name < $1.name }
        self.exclude = exclude
        self.includeHidden = includeHidden
        self.initialInstall = initialInstall
        self.prefetchOrder = prefetchOrder
        self.limits = limits
        self.untagged = untagged
    }

    /// Whether the rules leave `path` out of the build.
    public func isExcluded(_ path: String) -> Bool {
        exclude.contains { $0.matches(path) }
    }

    /// The tags that need the file at `path`, sorted; empty for an untagged file.
    ///
    /// This tries every pattern of every rule, and is the reference ``Matcher`` is tested against.
    /// With variant axes, builds tag a file by its logical path (`Textures/tree.png` for
    /// `Textures/tree@2x.png`), so every variant of a path has the same tags.
    ///
    /// To tag many paths, make a ``Matcher`` once with ``matcher()``: it checks only the patterns
    /// that can match each path.
    public func tags(forPath path: String) -> [String] {
        tags.filter { $0.matches(path) }.map(\.name)
    }

    /// The rules compiled into an index, for tagging many paths: matching a path costs about its
    /// depth and the patterns that share its literal prefix, not the number of patterns. See
    /// ``Matcher``.
    public func matcher() -> Matcher { Matcher(rules: tags) }

    /// Every tag name a build can produce: the rules' tags, plus `base` when untagged files go there.
    public var definedTagNames: [String] {
        var names = Set(tags.map(\.name))
        if untagged == .base { names.insert(Self.baseTag) }
        return names.sorted()
    }

    /// The preservation priority of `tag` (the base tag keeps longest).
    public func preservationPriority(of tag: String) -> Double {
        if let rule = tags.first(where: { $0.name == tag }) { return rule.preservationPriority }
        return tag == Self.baseTag ? 1 : Self.defaultPreservationPriority
    }

    /// The initial-install tags a manifest lists: `base` first when untagged files go there.
    public var effectiveInitialInstall: [String] {
        guard untagged == .base, !initialInstall.contains(Self.baseTag) else { return initialInstall }
        return [Self.baseTag] + initialInstall
    }
}
