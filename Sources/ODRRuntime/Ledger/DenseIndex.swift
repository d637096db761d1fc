/// A position in one of a ``LedgerCatalog``'s tables: a dense integer, so per-tag and per-pack state
/// lives in arrays rather than dictionaries keyed by name.
///
/// `Space` is a marker that keeps tag and pack positions apart at compile time; use the aliases
/// ``TagIndex`` and ``PackIndex``. Names stay at the edges: look a tag up once with
/// ``LedgerCatalog/tag(named:)`` and keep the index.
@frozen
public struct DenseIndex<Space: IndexSpace>: RawRepresentable, Hashable, Comparable, Sendable, CustomStringConvertible {
    /// The position in its table.
    public var rawValue: Int32

    /// The entry at position `rawValue` of its table.
    @inlinable
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// The entry at position `index` of its table.
    @inlinable
    public init(_ index: Int) { rawValue = Int32(truncatingIfNeeded: index) }

    /// The position as an `Int`, for subscripting.
    @inlinable
    public var index: Int { Int(rawValue) }

    /// Orders positions as their entries are ordered in the table.
    @inlinable
    public static func < (lhs: Self, rhs: Self) -> Bool { lhs.rawValue < rhs.rawValue }

    /// The table and the position, such as `tag#3`, for logs and test failures.
    public var description: String { "\(Space.label)#\(rawValue)" }
}

/// The table a ``DenseIndex`` points into.
public protocol IndexSpace {
    /// A short word for descriptions: `tag`, `pack`.
    static var label: String { get }
}

/// Marks indices into a catalog's tags.
public enum TagSpace: IndexSpace {
    /// Tag indices read `tag#N`.
    public static var label: String { "tag" }
}

/// Marks indices into a catalog's packs.
public enum PackSpace: IndexSpace {
    /// Pack indices read `pack#N`.
    public static var label: String { "pack" }
}

/// The position of a tag in a ``LedgerCatalog``.
public typealias TagIndex = DenseIndex<TagSpace>

/// The position of a pack in a ``LedgerCatalog``.
public typealias PackIndex = DenseIndex<PackSpace>
