#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// A compact binary form of a ``VersionManifest``, for a runtime's own copy of a manifest it has
/// already accepted (decoded and validated from JSON).
///
/// Decoding the JSON of a catalog with 10,000 tags and 100,000 files takes seconds; this form
/// opens in milliseconds, which is what lets an app open its store quickly. It is never
/// published: catalogs are JSON (see `docs/FORMAT.md`), and this form may change with the runtime
/// (a copy in another layout is refused, and the runtime falls back to the JSON).
///
/// Layout: the magic `ODRM`, a layout byte, the checksum of everything after it (`WordChecksum`,
/// 8 bytes, little-endian), then
/// a table of every distinct string of the tags and packs (pack ids and tag names repeat throughout
/// them), then the fields before `files` in declaration order with strings as table indices, then
/// the files as fixed-width records that are read only when asked for (see `CompactFileTable`).
/// Integers are LEB128 varints (signed ones zigzag-encoded) in their one shortest encoding;
/// priorities are IEEE 754 doubles, little-endian. The checksum is what lets the decoder skip
/// validation: damaged bytes are refused, not decoded into wrong sizes.
///
/// Layouts 5 and 6 are layouts 3 and 4 with the SHA-256 of what the compact form stands for (the
/// manifest's JSON, 32 raw bytes) first after the checksum: a store keeps the form in a file named
/// by that digest, and a file put in another's place (the valid compact form of another manifest)
/// is refused rather than read as this one (see ``init(compactFileAt:source:)``).
extension VersionManifest {
    static let compactMagic: [UInt8] = Array("ODRM".utf8)
    static let compactLayout: UInt8 = 3
    /// The layout of a compact manifest with chunked files: layout 3 plus the chunk section (see
    /// `CompactFileTable`). A manifest without chunks keeps layout 3, byte for byte.
    static let compactChunkedLayout: UInt8 = 4
    /// Layouts 3 and 4 with the source digest: this much higher.
    static let compactSourceLayoutOffset: UInt8 = 2

    /// The manifest in the compact binary form.
    ///
    /// - Parameter source: the lowercase hex SHA-256 of what the form stands for (the manifest's
    ///   JSON as stored), recorded in it; ``init(compactFileAt:source:)`` refuses the form for any
    ///   other source.
    /// - Throws: ``FormatError`` `invalid-value` or `dangling-reference` when a file's digest is not
    ///   a SHA-256 in lowercase hex, or its pack is not listed: only a valid manifest has this form.
    public func compactEncoded(source: String? = nil) throws(FormatError) -> Data {
        let plain = try compactEncodedWithoutSource()
        guard let source else { return plain }
        return try Self.compact(plain, recordingSource: source)
    }

    /// Compact bytes (of layout 3 or 4, from ``compactEncoded(source:)`` without a source) with
    /// `source` recorded in them, without encoding the manifest again.
    ///
    /// - Throws: ``FormatError`` `invalid-value` when `source` is not a SHA-256 in lowercase hex;
    ///   `corrupt-data` when `compact` is not compact bytes without a source.
    public static func compact(_ compact: Data, recordingSource source: String) throws(FormatError) -> Data {
        guard let digest = HexDigest.bytes(ofSHA256: source) else {
            throw FormatError(.invalidValue, "'\(source.prefix(80))' is not a SHA-256 in lowercase hex.", field: "source")
        }
        let header = compactMagic.count + 1 + 8
        guard compact.count >= header, compact.starts(with: compactMagic),
              [compactLayout, compactChunkedLayout].contains(compact[compact.startIndex + compactMagic.count]) else {
            throw FormatError(.corruptData, "These are not compact manifest bytes without a source.")
        }
        var payload = ByteWriter()
        payload.append(digest)
        payload.append(compact.dropFirst(header))
        var output = ByteWriter()
        output.append(compactMagic)
        output.bytes.append(compact[compact.startIndex + compactMagic.count] + compactSourceLayoutOffset)
        output.u64(payload.bytes.withUnsafeBytes { WordChecksum.of($0) })
        output.append(payload.bytes)
        return Data(output.bytes)
    }

    private func compactEncodedWithoutSource() throws(FormatError) -> Data {
        var strings = CompactStringTable()
        var body = ByteWriter()
        body.varint(formatVersion)
        body.varint(strings.index(of: catalogID))
        body.varint(version)
        body.varint(tags.count)
        for tag in tags {
            body.varint(strings.index(of: tag.name))
            body.u64(tag.preservationPriority.bitPattern)
            body.stringList(tag.packs, &strings)
            body.varint(tag.downloadBytes)
            body.varint(tag.installedBytes)
        }
        body.stringList(initialInstallTags, &strings)
        body.stringList(prefetchOrder, &strings)
        body.varint(variantAxes.count)
        for axis in variantAxes {
            body.varint(strings.index(of: axis.name))
            body.stringList(axis.values, &strings)
        }
        body.varint(packs.count)
        for pack in packs {
            body.varint(strings.index(of: pack.id))
            body.stringList(pack.tags, &strings)
            body.varint(pack.archiveBytes)
            body.varint(pack.installedBytes)
            body.varint(pack.entryCount)
            let variant = pack.variant.sorted { $0.key < $1.key }
            body.stringList(variant.map(\.key), &strings)
            body.stringList(variant.map(\.value), &strings)
        }
        let files = self.files
        let chunked = files.contains { !$0.chunks.isEmpty }
        try CompactFileTable.encode(files, packs: packs, chunked: chunked, into: &body)

        var payload = ByteWriter()
        payload.varint(strings.values.count)
        for string in strings.values {
            payload.varint(string.utf8.count)
            payload.append(string.utf8)
        }
        payload.append(body.bytes)
        var output = ByteWriter()
        output.append(Self.compactMagic)
        output.bytes.append(chunked ? Self.compactChunkedLayout : Self.compactLayout)
        output.u64(payload.bytes.withUnsafeBytes { WordChecksum.of($0) })
        output.append(payload.bytes)
        return Data(output.bytes)
    }

    /// Decodes the compact form written by ``compactEncoded()``.
    ///
    /// The manifest is not validated again: the form is only written for manifests that were. Its
    /// files stay in `data` and are read when asked for (``ManifestIndex`` reads one file or one
    /// pack's files; ``files`` builds every record the first time it is read).
    ///
    /// - Parameter source: when given, the bytes must record this SHA-256 as what they stand for
    ///   (see ``compactEncoded(source:)``).
    /// - Throws: ``FormatError`` `corrupt-data` when the bytes are not a compact manifest of this
    ///   layout, are cut short, or stand for another source than `source`.
    public init(compact data: Data, source: String? = nil) throws(FormatError) {
        self = try data.withUnsafeBytes { raw in
            Result { () throws(FormatError) in try Self.decodeCompact(raw, data: data, source: source) }
        }.get()
    }

    /// Decodes the compact form from a file, memory-mapped rather than read: opening the manifest
    /// of a large catalog then copies none of its 10 MB, and the file records stay in the mapping.
    ///
    /// The file must be replaced by renaming, never rewritten or truncated in place while mapped.
    ///
    /// - Parameter source: as for ``init(compact:source:)``: what a file named by a digest must
    ///   stand for, so that another manifest's file put in its place is refused.
    /// - Throws: ``FormatError`` `io` when the file cannot be opened or mapped; `corrupt-data` as
    ///   ``init(compact:source:)``.
    public init(compactFileAt url: URL, source: String? = nil) throws(FormatError) {
        let data: Data
        do {
            data = try ReadableFile(url).mapped()
        } catch {
            throw (error as? FormatError) ?? FormatError(.io, "Could not read the compact manifest at '\(url.path)'.")
        }
        try self.init(compact: data, source: source)
    }

    /// `data` with its checksum made right for the bytes after it, when it starts like a compact
    /// manifest (else unchanged): what someone who writes the store itself can do, since the
    /// checksum finds damage, not tampering. The `manifest-compact-file` fuzz target reseals its
    /// inputs so that the fuzzer reaches the decoder behind the checksum.
    package static func resealedCompact(_ data: Data) -> Data {
        let header = compactMagic.count + 1 + 8
        guard data.count >= header, data.starts(with: compactMagic) else { return data }
        var bytes = [UInt8](data)
        let checksum = bytes[header...].withUnsafeBytes { WordChecksum.of($0) }
        for byte in 0..<8 { bytes[compactMagic.count + 1 + byte] = UInt8(truncatingIfNeeded: checksum >> (8 * UInt64(byte))) }
        return Data(bytes)
    }

    private static func decodeCompact(_ raw: UnsafeRawBufferPointer, data: Data, source: String?) throws(FormatError) -> VersionManifest {
        var reader = CompactReader(bytes: raw)
        let layouts = [compactLayout, compactChunkedLayout]
        guard raw.starts(with: compactMagic), raw.count > compactMagic.count,
              layouts.contains(raw[compactMagic.count]) || layouts.contains(raw[compactMagic.count] &- compactSourceLayoutOffset) else {
            throw FormatError(.corruptData, "This is not a compact manifest of layout \(compactLayout) or \(compactChunkedLayout); decode the manifest's JSON instead.")
        }
        let hasSource = !layouts.contains(raw[compactMagic.count])
        let chunked = raw[compactMagic.count] == compactChunkedLayout + (hasSource ? compactSourceLayoutOffset : 0)
        reader.offset = compactMagic.count + 1
        let expected = try reader.littleEndian(width: 8)
        guard WordChecksum.of(UnsafeRawBufferPointer(rebasing: raw[reader.offset...])) == expected else { throw CompactReader.corrupt }
        let recorded = hasSource ? try reader.sha256() : nil
        if let source, recorded != source {
            throw FormatError(.corruptData, "This compact manifest stands for \(recorded.map { "manifest \($0.prefix(12))" } ?? "no recorded manifest"), not \(source.prefix(12)): it was put in another's place; decode the manifest's JSON instead.")
        }
        let stringCount = try reader.count()
        var strings: [String] = []
        strings.reserveCapacity(stringCount)
        for _ in 0..<stringCount { strings.append(try reader.utf8(length: try reader.count())) }
        func string() throws(FormatError) -> String {
            let index = try reader.int()
            guard strings.indices.contains(index) else { throw CompactReader.corrupt }
            return strings[index]
        }
        func stringList() throws(FormatError) -> [String] {
            let count = try reader.count()
            var list: [String] = []
            list.reserveCapacity(count)
            for _ in 0..<count { list.append(try string()) }
            return list
        }

        let formatVersion = try reader.int()
        let catalogID = try string()
        let version = try reader.int()
        var tags: [TagRecord] = []
        // A tag takes at least a name index, a priority, a pack list, and two sizes.
        let tagCount = try reader.count(minimumBytes: 12)
        tags.reserveCapacity(tagCount)
        for _ in 0..<tagCount {
            let name = try string()
            let priority = Double(bitPattern: try reader.littleEndian(width: 8))
            tags.append(TagRecord(name: name, preservationPriority: priority, packs: try stringList(),
                                  downloadBytes: try reader.int64(), installedBytes: try reader.int64()))
        }
        let initialInstallTags = try stringList()
        let prefetchOrder = try stringList()
        var variantAxes: [VariantAxis] = []
        for _ in 0..<(try reader.count()) { variantAxes.append(VariantAxis(name: try string(), values: try stringList())) }
        var packs: [PackRecord] = []
        // A pack takes at least an id, a tag list, three numbers and two variant lists.
        let packCount = try reader.count(minimumBytes: 7)
        packs.reserveCapacity(packCount)
        for _ in 0..<packCount {
            var pack = PackRecord(id: try string(), tags: try stringList(), archiveBytes: try reader.int64(),
                                  installedBytes: try reader.int64(), entryCount: try reader.int())
            let axes = try stringList(), values = try stringList()
            guard axes.count == values.count else { throw CompactReader.corrupt }
            if !axes.isEmpty { pack.variant = Variant(zip(axes, values), uniquingKeysWith: { first, _ in first }) }
            packs.append(pack)
        }
        // The numbers a validated manifest can hold, so sums over them cannot overflow (see validate()).
        guard tags.allSatisfy({ $0.downloadBytes >= 0 && $0.installedBytes >= 0 }),
              packs.allSatisfy({ $0.archiveBytes >= 0 && $0.installedBytes >= 0 && $0.entryCount >= 0 }),
              packs.lazy.map(\.archiveBytes).checkedSum() != nil, packs.lazy.map(\.installedBytes).checkedSum() != nil else {
            throw CompactReader.corrupt
        }
        let files = try CompactFileTable(data: data, raw: raw, reader: &reader, packIDs: packs.map(\.id), packVariants: packs.map(\.variant),
                                         packArchiveBytes: packs.map(\.archiveBytes), chunked: chunked)
        guard reader.offset == raw.count else { throw CompactReader.corrupt }
        var manifest = VersionManifest(formatVersion: formatVersion, catalogID: catalogID, version: version, tags: tags,
                                       initialInstallTags: initialInstallTags, prefetchOrder: prefetchOrder, packs: packs, files: [],
                                       variantAxes: variantAxes)
        manifest.fileTable = .compact(files)
        return manifest
    }
}

/// Each distinct string once, numbered in order of first use.
private struct CompactStringTable {
    var values: [String] = []
    var numbers: [String: Int] = [:]

    mutating func index(of string: String) -> Int {
        if let number = numbers[string] { return number }
        numbers[string] = values.count
        values.append(string)
        return values.count - 1
    }
}

extension ByteWriter {
    /// An unsigned LEB128 varint.
    mutating func varint(_ value: UInt64) {
        var rest = value
        while rest >= 0x80 {
            bytes.append(UInt8(rest & 0x7F) | 0x80)
            rest >>= 7
        }
        bytes.append(UInt8(rest))
    }

    /// A signed integer, zigzag-encoded so small negative values stay short.
    mutating func varint(_ value: Int64) { varint(UInt64(bitPattern: (value << 1) ^ (value >> 63))) }
    mutating func varint(_ value: Int) { varint(Int64(value)) }

    fileprivate mutating func stringList(_ list: [String], _ strings: inout CompactStringTable) {
        varint(list.count)
        for string in list { varint(strings.index(of: string)) }
    }
}

/// Bounds-checked reads for ``VersionManifest/init(compact:)``: damaged bytes are an error, never a trap.
struct CompactReader {
    static let corrupt = FormatError(.corruptData, "The compact manifest is damaged; decode the manifest's JSON instead.")
    let bytes: UnsafeRawBufferPointer
    var offset = 0

    mutating func byte() throws(FormatError) -> UInt8 {
        guard offset < bytes.count else { throw Self.corrupt }
        defer { offset += 1 }
        return bytes[offset]
    }

    /// An unsigned LEB128 varint in its one encoding: at most 10 bytes, the tenth holding only the
    /// 64th bit, and no trailing zero group (`0x80 0x00` for 0). An overlong or wider encoding is
    /// `corrupt-data`, never a number with its high bits dropped.
    mutating func varint() throws(FormatError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 63 || (shift == 63 && next <= 1) else { throw Self.corrupt }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 {
                guard next != 0 || shift == 0 else { throw Self.corrupt }
                return value
            }
            shift += 7
        }
    }

    mutating func int64() throws(FormatError) -> Int64 {
        let raw = try varint()
        return Int64(bitPattern: raw >> 1) ^ -Int64(bitPattern: raw & 1)
    }

    mutating func int() throws(FormatError) -> Int {
        let value = try int64()
        guard let int = Int(exactly: value) else { throw Self.corrupt }
        return int
    }

    /// A count of items or bytes that follow: never more than the bytes left could hold, since each
    /// takes at least `minimumBytes` of them. Checked before anything is allocated for the items.
    mutating func count(minimumBytes: Int = 1) throws(FormatError) -> Int {
        let value = try int()
        guard value >= 0, value <= (bytes.count - offset) / max(1, minimumBytes) else { throw Self.corrupt }
        return value
    }

    /// A little-endian integer of `width` bytes (up to 8).
    mutating func littleEndian(width: Int) throws(FormatError) -> UInt64 {
        guard bytes.count - offset >= width else { throw Self.corrupt }
        var value: UInt64 = 0
        for i in 0..<width { value |= UInt64(bytes[offset + i]) << UInt64(8 * i) }
        offset += width
        return value
    }

    mutating func utf8(length: Int) throws(FormatError) -> String {
        guard bytes.count - offset >= length else { throw Self.corrupt }
        defer { offset += length }
        return String(decoding: UnsafeRawBufferPointer(rebasing: bytes[offset..<(offset + length)]), as: UTF8.self)
    }
}
