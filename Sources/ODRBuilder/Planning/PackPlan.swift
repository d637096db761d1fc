import Foundation
import ODRFormat

/// What a build will write: packs with their entries, and where every logical path's bytes live.
///
/// A plan is a pure function of the hashed files and the rules; the writer turns it into archives.
public struct PackPlan: Sendable, Equatable {
    /// One distinct piece of content, stored once as one entry.
    public struct Entry: Sendable, Equatable {
        /// The entry's name in the archive: the first (sorted) path in the assets folder that has
        /// this content; for a variant, the file's own name (`Textures/tree@2x.png`).
        public var name: String
        /// The SHA-256 of the content.
        public var sha256: String
        /// The uncompressed size.
        public var size: Int64
        /// A file on disk with this content, to read it from.
        public var source: URL
        /// Every logical path with this content, sorted.
        public var paths: [String]
        /// How the entry is compressed when a rule says so (`"compression"`); `nil` lets the pack
        /// writer choose from a sample of the content.
        public var method: CompressionMethod?
    }

    /// One pack: a tag set and variant (or one part of a large one) and its entries, sorted by name.
    public struct Pack: Sendable, Equatable {
        /// The pack's tag set, sorted.
        public var tags: [String]
        /// The variant every entry of the pack has; empty for a common pack.
        public var variant: Variant = [:]
        /// 1-based part number when the tag set was split, else 1.
        public var part: Int
        /// How many parts the tag set was split into (1 when it was not).
        public var partCount: Int
        /// The entries, sorted by name (the order they are written in).
        public var entries: [Entry]

        /// The sum of the entries' uncompressed sizes.
        public var installedBytes: Int64 { entries.reduce(0) { $0 + $1.size } }
    }

    /// A tag the version defines, whether or not any file has it.
    public struct Tag: Sendable, Equatable {
        /// The tag's name.
        public var name: String
        /// Its default preservation priority.
        public var preservationPriority: Double
        /// Uncompressed bytes of other tags' files in the packs it needs: what merging small packs
        /// costs it (0 with exact packing).
        public var overFetchedBytes: Int64 = 0

        /// Creates a tag.
        public init(name: String, preservationPriority: Double, overFetchedBytes: Int64 = 0) {
            self.name = name
            self.preservationPriority = preservationPriority
            self.overFetchedBytes = overFetchedBytes
        }
    }

    /// The packs, sorted by tag set, then variant (common first), then part.
    public var packs: [Pack]
    /// The variant axes the rules declare, in declared order.
    public var variantAxes: [VariantAxis] = []
    /// Every tag a manifest will list (defined by the rules, plus `base`), sorted by name.
    public var tags: [Tag]
    /// The logical paths of every file in the version, with their tag sets (before content merging).
    /// Variants of one logical path share its entry.
    public var pathTags: [String: [String]]
    /// Files that share content with an earlier path and were not stored again.
    public var duplicateFiles: Int
    /// The bytes those duplicate files would have taken.
    public var bytesSavedByDeduplication: Int64
    /// Warnings about the plan.
    public var warnings: [BuildWarning]
}
