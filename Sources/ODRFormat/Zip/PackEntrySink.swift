/// Receives the contents of a pack's entries while a reader verifies them.
///
/// Calls arrive in archive order: ``beginEntry(_:)``, any number of ``writeEntryData(_:)``, then
/// ``endEntry(_:)`` once the entry's size and SHA-256 have been checked. A reader that finds a
/// problem throws instead of calling ``endEntry(_:)``; the bytes already written belong to an entry
/// that failed verification and must be discarded (``DirectoryExtractor/removeExtracted()``, or
/// ``DirectoryExtractor/removeCurrentEntry()`` to keep the entries already verified).
public protocol PackEntrySink: AnyObject {
    /// An entry starts; its header matched the manifest.
    func beginEntry(_ entry: PackEntryExpectation) throws
    /// Uncompressed bytes of the current entry, never beyond its declared size.
    func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws
    /// The current entry is complete and verified.
    func endEntry(_ entry: PackEntryExpectation) throws
}

/// A sink for ``PackRangeReader``, which reads entries from byte ranges of a pack and can continue an
/// entry that an earlier attempt cut off.
///
/// Each entry starts either with ``entryDataStarts(_:at:)`` then ``PackEntrySink/beginEntry(_:)``,
/// or, when it continues, with ``resumeEntry(_:heldBytes:)``; then come its data and
/// ``PackEntrySink/endEntry(_:)`` as for any sink.
public protocol PackRangeSink: PackEntrySink {
    /// An entry's local header matched the manifest; its first data byte is at `dataOffset` in the
    /// archive. Called before ``PackEntrySink/beginEntry(_:)``.
    ///
    /// Keep the offset to resume the entry later: the rest of its data starts at `dataOffset` plus
    /// the bytes already written.
    func entryDataStarts(_ entry: PackEntryExpectation, at dataOffset: Int64) throws
    /// A stored entry continues after the `heldBytes` bytes an earlier attempt wrote; the data that
    /// follows is appended to them. Called instead of ``PackEntrySink/beginEntry(_:)``.
    func resumeEntry(_ entry: PackEntryExpectation, heldBytes: Int64) throws
}

/// A sink that keeps nothing: for verifying a pack without extracting it.
public final class DiscardingSink: PackEntrySink {
    /// The entries verified so far.
    public private(set) var verifiedEntries: [PackEntryExpectation] = []

    public init() {}
    public func beginEntry(_ entry: PackEntryExpectation) throws {}
    public func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws {}
    public func endEntry(_ entry: PackEntryExpectation) throws { verifiedEntries.append(entry) }
}

/// A sink that collects entries in memory; for small packs and tests.
public final class MemorySink: PackEntrySink {
    /// Entry name -> verified content.
    public private(set) var contents: [String: [UInt8]] = [:]
    private var current: [UInt8] = []

    public init() {}
    public func beginEntry(_ entry: PackEntryExpectation) throws { current = [] }
    public func writeEntryData(_ bytes: UnsafeRawBufferPointer) throws { current.append(contentsOf: bytes) }
    public func endEntry(_ entry: PackEntryExpectation) throws { contents[entry.name] = current }
}
