import Foundation

/// A compact binary form of a ``VersionManifest``, for a runtime's own copy of a manifest it has
/// already accepted (decoded and validated from JSON).
///
/// Decoding the JSON of a catalog with 10,000 tags and 100,000 files takes seconds; this form
/// decodes in tens of milliseconds, which is what lets an app open its store quickly. It is never
/// published: catalogs are JSON (see `docs/FORMAT.md`), and this form may change with the runtime
/// (a copy in another layout is refused, and the runtime falls back to the JSON).
///
/// Layout: the magic `ODRM`, a layout byte, the CRC-32 of everything after it (little-endian), then
/// a table of every distinct string (each written once: pack ids, tag names and paths repeat
/// throughout a manifest), then the manifest's fields in declaration order with strings as table
/// indices. Integers are LEB128 varints (signed ones zigzag-encoded); priorities are IEEE 754
/// doubles, little-endian. The checksum is what lets the decoder skip validation: damaged bytes are
/// refused, not decoded into wrong sizes.
extension VersionManifest {
    static let compactMagic: [UInt8] = Array("ODRM".utf8)
    static let compactLayout: UInt8 = 1

    /// The manifest in the compact binary form.
    public func compactEncoded() -> Data {
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
        body.varint(packs.count)
        for pack in packs {
            body.varint(strings.index(of: pack.id))
            body.stringList(pack.tags, &strings)
            body.varint(pack.archiveBytes)
            body.varint(pack.installedBytes)
            body.varint(pack.entryCount)
        }
        body.varint(files.count)
        for file in files {
            body.varint(strings.index(of: file.path))
            body.varint(strings.index(of: file.pack))
            body.varint(strings.index(of: file.entry))
            body.varint(strings.index(of: file.sha256))
            body.varint(file.storedSize)
            body.varint(file.size)
            body.varint(file.headerOffset)
            body.bytes.append(file.method == .stored ? 0 : 1)
        }

        var payload = ByteWriter()
        payload.varint(strings.values.count)
        for string in strings.values {
            payload.varint(string.utf8.count)
            payload.append(string.utf8)
        }
        payload.append(body.bytes)
        var checksum = CRC32()
        payload.bytes.withUnsafeBytes { checksum.update($0) }
        var output = ByteWriter()
        output.append(Self.compactMagic)
        output.bytes.append(Self.compactLayout)
        output.u32(checksum.value)
        output.append(payload.bytes)
        return Data(output.bytes)
    }

    /// Decodes the compact form written by ``compactEncoded()``.
    ///
    /// The manifest is not validated again: the form is only written for manifests that were.
    ///
    /// - Throws: ``FormatError`` `corrupt-data` when the bytes are not a compact manifest of this
    ///   layout, or are cut short.
    public init(compact data: Data) throws(FormatError) {
        var reader = CompactReader(bytes: [UInt8](data))
        guard reader.bytes.starts(with: Self.compactMagic), reader.bytes.count > Self.compactMagic.count,
              reader.bytes[Self.compactMagic.count] == Self.compactLayout else {
            throw FormatError(.corruptData, "This is not a compact manifest of layout \(Self.compactLayout); decode the manifest's JSON instead.")
        }
        reader.offset = Self.compactMagic.count + 1
        let expected = UInt32(truncatingIfNeeded: try reader.littleEndian(width: 4))
        var checksum = CRC32()
        reader.bytes.withUnsafeBytes { checksum.update(UnsafeRawBufferPointer(rebasing: $0[reader.offset...])) }
        guard checksum.value == expected else { throw CompactReader.corrupt }
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
        let tagCount = try reader.count()
        tags.reserveCapacity(tagCount)
        for _ in 0..<tagCount {
            let name = try string()
            let priority = Double(bitPattern: try reader.littleEndian(width: 8))
            tags.append(TagRecord(name: name, preservationPriority: priority, packs: try stringList(),
                                  downloadBytes: try reader.int64(), installedBytes: try reader.int64()))
        }
        let initialInstallTags = try stringList()
        let prefetchOrder = try stringList()
        var packs: [PackRecord] = []
        let packCount = try reader.count()
        packs.reserveCapacity(packCount)
        for _ in 0..<packCount {
            packs.append(PackRecord(id: try string(), tags: try stringList(), archiveBytes: try reader.int64(),
                                    installedBytes: try reader.int64(), entryCount: try reader.int()))
        }
        let fileCount = try reader.count()
        var files: [FileRecord] = []
        files.reserveCapacity(fileCount)
        for _ in 0..<fileCount {
            let path = try string(), pack = try string(), entry = try string(), sha256 = try string()
            let storedSize = try reader.int64(), size = try reader.int64(), headerOffset = try reader.int64()
            let method: CompressionMethod = try reader.byte() == 0 ? .stored : .deflate
            files.append(FileRecord(path: path, pack: pack, entry: entry, sha256: sha256, storedSize: storedSize,
                                    size: size, headerOffset: headerOffset, method: method))
        }
        guard reader.offset == reader.bytes.count else { throw CompactReader.corrupt }
        self.init(formatVersion: formatVersion, catalogID: catalogID, version: version, tags: tags,
                  initialInstallTags: initialInstallTags, prefetchOrder: prefetchOrder, packs: packs, files: files)
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
private struct CompactReader {
    static let corrupt = FormatError(.corruptData, "The compact manifest is damaged; decode the manifest's JSON instead.")
    let bytes: [UInt8]
    var offset = 0

    mutating func byte() throws(FormatError) -> UInt8 {
        guard offset < bytes.count else { throw Self.corrupt }
        defer { offset += 1 }
        return bytes[offset]
    }

    mutating func varint() throws(FormatError) -> UInt64 {
        var value: UInt64 = 0
        var shift: UInt64 = 0
        while true {
            let next = try byte()
            guard shift < 64 else { throw Self.corrupt }
            value |= UInt64(next & 0x7F) << shift
            if next & 0x80 == 0 { return value }
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

    /// A count of items or bytes that follow: never more than the bytes left, since each takes at least one.
    mutating func count() throws(FormatError) -> Int {
        let value = try int()
        guard value >= 0, value <= bytes.count - offset else { throw Self.corrupt }
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
        return bytes.withUnsafeBufferPointer { String(decoding: $0[offset..<(offset + length)], as: UTF8.self) }
    }
}
