#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A pack as a tag bin lists it: its record and the pin of its file table.
public struct BinPack: Sendable, Equatable {
    /// The pack, as ``VersionManifest/packs`` lists it.
    public var pack: PackRecord
    /// The pin of the pack's file table, `meta/<sha256>.filetable`.
    public var table: MetadataPin
    /// The number of file records in that table.
    public var fileCount: Int

    public init(pack: PackRecord, table: MetadataPin, fileCount: Int) {
        self.pack = pack
        self.table = table
        self.fileCount = fileCount
    }
}

/// One tag bin of a split manifest, `meta/<sha256>.tagbin`: the tags the bin holds (those whose
/// name hashes to it, see ``SplitManifest/bin(ofTag:binCount:)``) and every pack they reference,
/// each with the pin of its file table. A pack shared by tags of several bins is in each of them.
///
/// On the wire: raw DEFLATE of the compact layout `docs/FORMAT.md` describes ("Split metadata").
public struct TagBin: Sendable, Equatable {
    /// This bin's number, and how many bins the manifest has.
    public var index: Int, binCount: Int
    /// The bin's tags, sorted by name.
    public var tags: [TagRecord]
    /// The packs those tags reference, sorted by id.
    public var packs: [BinPack]

    public init(index: Int, binCount: Int, tags: [TagRecord], packs: [BinPack]) {
        self.index = index
        self.binCount = binCount
        self.tags = tags
        self.packs = packs
    }

    static let magic: [UInt8] = Array("ODRB".utf8)
    static let layout: UInt8 = 1
    /// The fewest bytes a pack takes in a bin (two SHA-256s and eight one-byte numbers and lists),
    /// and a tag (a one-byte name length, a priority and three one-byte numbers): what bounds a
    /// count before anything is allocated for it.
    static let minimumPackBytes = 72, minimumTagBytes = 12

    /// The bin's compact bytes before compression; equal bins have equal bytes.
    public func compactBytes() throws(FormatError) -> Data {
        var out = ByteWriter()
        out.append(Self.magic)
        out.bytes.append(Self.layout)
        out.varint(UInt64(index))
        out.varint(UInt64(binCount))
        var positions: [String: Int] = [:]
        out.varint(UInt64(packs.count))
        for (i, entry) in packs.enumerated() {
            positions[entry.pack.id] = i
            try out.sha256(entry.pack.id)
            out.strings(entry.pack.tags)
            try out.unsigned(entry.pack.archiveBytes)
            try out.unsigned(entry.pack.installedBytes)
            try out.unsigned(Int64(entry.pack.entryCount))
            let variant = entry.pack.variant.sorted { $0.key < $1.key }
            out.strings(variant.map(\.key))
            out.strings(variant.map(\.value))
            try out.sha256(entry.table.sha256)
            try out.unsigned(entry.table.size)
            try out.unsigned(Int64(entry.fileCount))
        }
        out.varint(UInt64(tags.count))
        for tag in tags {
            out.string(tag.name)
            out.u64(tag.preservationPriority.bitPattern)
            out.varint(UInt64(tag.packs.count))
            for id in tag.packs {
                guard let position = positions[id] else {
                    throw FormatError(.danglingReference, "Tag '\(tag.name)' names pack \(id), which its bin does not list.", field: "tags")
                }
                out.varint(UInt64(position))
            }
            try out.unsigned(tag.downloadBytes)
            try out.unsigned(tag.installedBytes)
        }
        return Data(out.bytes)
    }

    /// The bytes as served: the compact bytes, deflated.
    public func encoded() throws(FormatError) -> Data { try WholeDeflate.deflate(compactBytes()) }

    /// Decodes and checks a bin as served.
    ///
    /// - Parameters:
    ///   - pin: when given, `data` must have its size and SHA-256 (checked first).
    ///   - index, binCount: when given, the bin must say it is that bin of that many.
    ///   - file: the bin's name, for messages.
    /// - Throws: ``FormatError``: `size-mismatch` / `hash-mismatch` against the pin or the
    ///   inflation limit, `corrupt-data` for bytes that are not a bin, `invalid-value` for
    ///   impossible numbers, a malformed tag name or a tag that hashes to another bin,
    ///   `duplicate` and `dangling-reference` for tags and packs that disagree.
    public static func decode(from data: Data, pin: MetadataPin? = nil, index: Int? = nil, binCount: Int? = nil,
                              file: String = "the tag bin") throws(FormatError) -> TagBin {
        try pin?.check(data, file: file)
        let bytes = try SplitMetadata.inflate(data, file: file)
        let bin = try SplitMetadata.readCompact(bytes, file: file) { (reader: inout CompactReader) throws(FormatError) -> TagBin in
            try reader.expect(magic: magic, layout: layout)
            let index = Int(try reader.unsigned()), binCount = Int(try reader.unsigned())
            var packs: [BinPack] = []
            for _ in 0..<(try reader.length(minimumBytes: minimumPackBytes)) {
                var pack = PackRecord(id: try reader.sha256(), tags: try reader.strings(), archiveBytes: try reader.unsigned(),
                                      installedBytes: try reader.unsigned(), entryCount: Int(try reader.unsigned()))
                let axes = try reader.strings(), values = try reader.strings()
                guard axes.count == values.count else { throw CompactReader.corrupt }
                if !axes.isEmpty { pack.variant = Variant(zip(axes, values), uniquingKeysWith: { first, _ in first }) }
                packs.append(BinPack(pack: pack, table: MetadataPin(sha256: try reader.sha256(), size: try reader.unsigned()),
                                     fileCount: Int(try reader.unsigned())))
            }
            var tags: [TagRecord] = []
            for _ in 0..<(try reader.length(minimumBytes: minimumTagBytes)) {
                let name = try reader.string()
                let priority = Double(bitPattern: try reader.littleEndian(width: 8))
                var ids: [String] = []
                for _ in 0..<(try reader.length()) {
                    let position = Int(try reader.unsigned())
                    guard packs.indices.contains(position) else { throw CompactReader.corrupt }
                    ids.append(packs[position].pack.id)
                }
                tags.append(TagRecord(name: name, preservationPriority: priority, packs: ids, downloadBytes: try reader.unsigned(),
                                      installedBytes: try reader.unsigned()))
            }
            return TagBin(index: index, binCount: binCount, tags: tags, packs: packs)
        }
        try bin.validate(file: file, index: index, binCount: binCount)
        return bin
    }

    /// The checks a bin gets on its own; the assembled manifest's validation checks the rest.
    func validate(file: String, index expectedIndex: Int?, binCount expectedCount: Int?) throws(FormatError) {
        func fail(_ code: FormatError.Code, _ message: String) -> FormatError {
            FormatError(code, "\(file) \(message). Fetch it again; if it persists, rebuild the catalog.", field: file)
        }
        guard (1...SplitManifest.maximumBinCount).contains(binCount), binCount & (binCount - 1) == 0, (0..<binCount).contains(index) else {
            throw fail(.invalidValue, "says it is bin \(index) of \(binCount), which no manifest can have")
        }
        if let expectedIndex, let expectedCount, expectedIndex != index || expectedCount != binCount {
            throw fail(.danglingReference, "is bin \(index) of \(binCount), but the manifest pins it as bin \(expectedIndex) of \(expectedCount)")
        }
        var previousID: String?
        for entry in packs {
            if let previousID, entry.pack.id <= previousID { throw fail(.duplicate, "lists its packs out of order or twice (\(entry.pack.id))") }
            previousID = entry.pack.id
            try entry.table.validate(field: file)
            guard entry.pack.entryCount <= entry.fileCount, entry.pack.entryCount > 0 || entry.fileCount == 0 else {
                throw fail(.invalidValue, "says pack \(entry.pack.id) has \(entry.pack.entryCount) entries but \(entry.fileCount) files")
            }
        }
        var previousName: String?
        var used = Set<String>()
        for tag in tags {
            if let previousName, tag.name <= previousName { throw fail(.duplicate, "lists its tags out of order or twice ('\(tag.name)')") }
            previousName = tag.name
            if let problem = TagRecord.problem(inName: tag.name) { throw fail(.invalidValue, "has an invalid tag: \(problem)") }
            let home = SplitManifest.bin(ofTag: tag.name, binCount: binCount)
            guard home == index else {
                throw fail(.invalidValue, "lists tag '\(tag.name)', which belongs in bin \(home), not \(index): a bin served for another")
            }
            guard tag.preservationPriority >= 0, tag.preservationPriority <= 1 else {
                throw fail(.invalidValue, "gives tag '\(tag.name)' a priority outside 0...1")
            }
            used.formUnion(tag.packs)
        }
        if let stray = packs.first(where: { !used.contains($0.pack.id) }) {
            throw fail(.danglingReference, "lists pack \(stray.pack.id), which none of its tags needs")
        }
    }
}

/// The file table of one pack, `meta/<sha256>.filetable`: every file whose bytes the pack holds.
/// A file's variant is its pack's, so the table does not repeat it.
///
/// On the wire: raw DEFLATE of the compact layout `docs/FORMAT.md` describes ("Split metadata").
public struct PackFileTable: Sendable, Equatable {
    /// The id of the pack whose files these are.
    public var pack: String
    /// The files, sorted by path; each has ``pack`` as its pack and the pack's variant.
    public var files: [FileRecord]

    public init(pack: String, files: [FileRecord]) {
        self.pack = pack
        self.files = files
    }

    static let magic: [UInt8] = Array("ODRT".utf8)
    static let layout: UInt8 = 1
    /// The layout of a table with any chunked file: each file record ends with its chunk table.
    /// A table without chunks keeps layout 1, byte for byte.
    static let chunkedLayout: UInt8 = 2
    /// The fewest bytes a file record takes (a one-byte path length, the entry flag, a SHA-256,
    /// three one-byte numbers and the method; one more for the chunk count of layout 2), and a
    /// chunk (two one-byte numbers and a SHA-256): what bounds a count before anything is
    /// allocated for it.
    static let minimumFileBytes = 38, minimumChunkBytes = 34

    /// Whether any file of the table is chunked (and the table has layout 2).
    public var isChunked: Bool { files.contains { !$0.chunks.isEmpty } }

    /// The table's compact bytes before compression; equal tables have equal bytes.
    public func compactBytes() throws(FormatError) -> Data {
        var out = ByteWriter()
        out.append(Self.magic)
        let chunked = isChunked
        out.bytes.append(chunked ? Self.chunkedLayout : Self.layout)
        try out.sha256(pack)
        out.varint(UInt64(files.count))
        for file in files {
            out.string(file.path)
            if file.entry == file.path {
                out.bytes.append(0)
            } else {
                out.bytes.append(1)
                out.string(file.entry)
            }
            try out.sha256(file.sha256)
            try out.unsigned(file.storedSize)
            try out.unsigned(file.size)
            try out.unsigned(file.headerOffset)
            out.bytes.append(file.method == .deflate ? 1 : 0)
            guard chunked else { continue }
            out.varint(UInt64(file.chunks.count))
            for chunk in file.chunks {
                try out.unsigned(chunk.size)
                try out.unsigned(chunk.storedSize)
                try out.sha256(chunk.sha256)
            }
        }
        return Data(out.bytes)
    }

    /// The bytes as served: the compact bytes, deflated.
    public func encoded() throws(FormatError) -> Data { try WholeDeflate.deflate(compactBytes()) }

    /// Decodes and checks a table as served.
    ///
    /// - Parameters:
    ///   - pin: when given, `data` must have its size and SHA-256 (checked first).
    ///   - expected: when given, the bin's entry for the pack: the table must name that pack, hold
    ///     `fileCount` files, and its files must fit the pack (inside its archive, as many distinct
    ///     entries as it has, their sizes adding up to its installed bytes).
    ///   - file: the table's name, for messages.
    /// - Throws: ``FormatError``: `size-mismatch` / `hash-mismatch` against the pin or the
    ///   inflation limit, `corrupt-data` for bytes that are not a table, `dangling-reference` for a
    ///   table of another pack, `invalid-path`, `duplicate` and `invalid-value` for files that
    ///   cannot be the pack's.
    public static func decode(from data: Data, pin: MetadataPin? = nil, expected: BinPack? = nil,
                              file: String = "the file table") throws(FormatError) -> PackFileTable {
        try pin?.check(data, file: file)
        let bytes = try SplitMetadata.inflate(data, file: file)
        let variant = expected?.pack.variant ?? [:]
        let table = try SplitMetadata.readCompact(bytes, file: file) { (reader: inout CompactReader) throws(FormatError) -> PackFileTable in
            let chunked = try reader.expect(magic: magic, layouts: [layout, chunkedLayout]) == chunkedLayout
            let pack = try reader.sha256()
            var files: [FileRecord] = []
            let count = try reader.length(minimumBytes: minimumFileBytes + (chunked ? 1 : 0))
            // The records a request decodes are budgeted: one table cannot claim more on its own.
            try SplitMetadata.checkRecordBudget([count])
            // The bin says how many files the table holds: a table claiming more stops here,
            // before anything is allocated or decoded for them.
            if let expected, count != expected.fileCount {
                throw FormatError(.invalidValue, "\(file) lists \(count) files, but the bin says pack \(expected.pack.id) has \(expected.fileCount). Fetch it again; if it persists, rebuild the catalog.", field: file)
            }
            files.reserveCapacity(count)
            for _ in 0..<count {
                let path = try reader.string()
                let entry: String
                switch try reader.byte() {
                case 0: entry = path
                case 1: entry = try reader.string()
                default: throw CompactReader.corrupt
                }
                let sha256 = try reader.sha256()
                let storedSize = try reader.unsigned(), size = try reader.unsigned(), headerOffset = try reader.unsigned()
                let method: CompressionMethod
                switch try reader.byte() {
                case 0: method = .stored
                case 1: method = .deflate
                default: throw CompactReader.corrupt
                }
                var chunks: [FileChunk] = []
                if chunked {
                    let chunkCount = try reader.length(minimumBytes: minimumChunkBytes)
                    guard chunkCount <= FileChunk.maximumCount else { throw CompactReader.corrupt }
                    chunks.reserveCapacity(chunkCount)
                    for _ in 0..<chunkCount {
                        chunks.append(FileChunk(size: try reader.unsigned(), storedSize: try reader.unsigned(), sha256: try reader.sha256()))
                    }
                }
                let record = FileRecord(path: path, pack: pack, entry: entry, sha256: sha256, storedSize: storedSize, size: size,
                                        headerOffset: headerOffset, method: method, variant: variant, chunks: chunks)
                // Decoding stops at the first bad record rather than building the rest.
                try check(record, after: files.last, file: file)
                files.append(record)
            }
            return PackFileTable(pack: pack, files: files)
        }
        try table.validate(file: file, expected: expected)
        return table
    }

    /// The checks one record gets on its own: its path and entry, its place after `previous`, its chunks.
    static func check(_ record: FileRecord, after previous: FileRecord?, file: String) throws(FormatError) {
        if let problem = RelativePath.problem(in: record.path) { throw FormatError(.invalidPath, "\(file) lists the path '\(record.path.prefix(80))': \(problem).", field: file) }
        if let problem = RelativePath.problem(in: record.entry) { throw FormatError(.invalidPath, "\(file) lists the entry '\(record.entry.prefix(80))': \(problem).", field: file) }
        if let previous, record.path <= previous.path {
            throw FormatError(.duplicate, "\(file) lists its paths out of order or twice ('\(record.path.prefix(80))'). Fetch it again; if it persists, rebuild the catalog.", field: file)
        }
        do {
            try FileChunk.validate(record.chunks, size: record.size, storedSize: record.storedSize, method: record.method,
                                   path: String(record.path.prefix(80)), field: file)
        } catch {
            throw FormatError(error.code, "\(file): \(error.message) Fetch it again; if it persists, rebuild the catalog.", field: error.field)
        }
    }

    /// The checks of the table as a whole, after ``check(_:after:file:)`` passed every record.
    func validate(file: String, expected: BinPack?) throws(FormatError) {
        func fail(_ code: FormatError.Code, _ message: String) -> FormatError {
            FormatError(code, "\(file) \(message). Fetch it again; if it persists, rebuild the catalog.", field: file)
        }
        guard let expected else { return }
        guard pack == expected.pack.id else {
            throw fail(.danglingReference, "is the table of pack \(pack), but the bin pins it for pack \(expected.pack.id): a table served for another pack")
        }
        guard files.count == expected.fileCount else {
            throw fail(.invalidValue, "lists \(files.count) files, but the bin says pack \(pack) has \(expected.fileCount)")
        }
        // The files must be this pack's: inside its archive, as many distinct entries as it has,
        // and their sizes adding up to its installed bytes. A table listing another tag set's
        // files cannot meet these without also being that pack's table.
        let archiveBytes = expected.pack.archiveBytes
        var entrySizes: [String: Int64] = [:]
        for record in files {
            guard record.headerOffset <= archiveBytes, record.storedSize <= archiveBytes - record.headerOffset else {
                throw fail(.invalidValue, "puts '\(record.path.prefix(80))' past the end of pack \(pack) (\(archiveBytes) bytes)")
            }
            guard record.method == .deflate || record.storedSize == record.size else {
                throw fail(.invalidValue, "gives the stored entry of '\(record.path.prefix(80))' two different sizes")
            }
            if let size = entrySizes.updateValue(record.size, forKey: record.entry), size != record.size {
                throw fail(.duplicate, "gives the entry '\(record.entry.prefix(80))' two different sizes")
            }
        }
        guard entrySizes.count == expected.pack.entryCount, entrySizes.values.checkedSum() == expected.pack.installedBytes else {
            throw fail(.danglingReference, "lists files that are not those of pack \(pack): \(entrySizes.count) entries of \(entrySizes.values.checkedSum().map(String.init) ?? "too many") bytes, where the pack has \(expected.pack.entryCount) of \(expected.pack.installedBytes)")
        }
    }
}

extension ByteWriter {
    mutating func string(_ value: String) {
        varint(UInt64(value.utf8.count))
        append(value.utf8)
    }

    mutating func strings(_ values: [String]) {
        varint(UInt64(values.count))
        for value in values { string(value) }
    }

    /// A number that must not be negative, as an unsigned varint.
    mutating func unsigned(_ value: Int64) throws(FormatError) {
        guard value >= 0 else { throw FormatError(.invalidValue, "A size or count is negative (\(value)); only a valid manifest can be split.") }
        varint(UInt64(value))
    }

    /// A SHA-256 digest in hex as its 32 raw bytes.
    mutating func sha256(_ hex: String) throws(FormatError) {
        guard let bytes = HexDigest.bytes(ofSHA256: hex) else {
            throw FormatError(.invalidValue, "'\(hex.prefix(80))' is not a SHA-256 in lowercase hex; only a valid manifest can be split.")
        }
        append(bytes)
    }
}

extension CompactReader {
    mutating func expect(magic: [UInt8], layout: UInt8) throws(FormatError) {
        _ = try expect(magic: magic, layouts: [layout])
    }

    /// Reads the magic and a layout byte that must be one of `layouts`; returns it.
    mutating func expect(magic: [UInt8], layouts: [UInt8]) throws(FormatError) -> UInt8 {
        for byte in magic { guard try self.byte() == byte else { throw CompactReader.corrupt } }
        let layout = try byte()
        guard layouts.contains(layout) else { throw CompactReader.corrupt }
        return layout
    }

    /// An unsigned varint that fits an `Int64`.
    mutating func unsigned() throws(FormatError) -> Int64 {
        guard let value = Int64(exactly: try varint()) else { throw CompactReader.corrupt }
        return value
    }

    /// An unsigned varint count of items or bytes that follow: never more than the bytes left could
    /// hold, since each takes at least `minimumBytes` (1 for bytes). Checked before anything is
    /// allocated for the items.
    mutating func length(minimumBytes: Int = 1) throws(FormatError) -> Int {
        let value = try unsigned()
        guard value <= Int64((bytes.count - offset) / max(1, minimumBytes)) else { throw CompactReader.corrupt }
        return Int(value)
    }

    /// A string: its UTF-8 length, then its bytes, which must be valid UTF-8.
    mutating func string() throws(FormatError) -> String {
        let length = try length()
        guard bytes.count - offset >= length else { throw CompactReader.corrupt }
        defer { offset += length }
        guard let string = String(validating: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]), as: UTF8.self) else {
            throw CompactReader.corrupt
        }
        return string
    }

    mutating func strings() throws(FormatError) -> [String] {
        var list: [String] = []
        for _ in 0..<(try length()) { list.append(try string()) }
        return list
    }

    /// 32 raw bytes as a SHA-256 in lowercase hex.
    mutating func sha256() throws(FormatError) -> String {
        guard bytes.count - offset >= 32 else { throw CompactReader.corrupt }
        defer { offset += 32 }
        return ContentHash.hex(UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + 32)]))
    }
}
